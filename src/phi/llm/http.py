"""`ChatServer`: the grammar adapter's transport to an OpenAI-compatible server over HTTP.

One model server (llama.cpp's own, through `xllamacpp.Server` or `llama-server`; ollama;
vLLM) can then serve several phi processes. The server must honour `response_format`
`json_schema` (grammar-constrained decoding): `GrammarToolModel` turns the constrained
answer into tool calls, for models that cannot call tools natively.

`PHI_MODEL=grammar:http://127.0.0.1:8080/v1` selects it; a key, if the server wants one,
goes in the URL's user info (`grammar:http://:KEY@127.0.0.1:8080/v1`), a model name in its
fragment (`...#smollm2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic_ai.exceptions import ModelAPIError, ModelContextWindowExceededError, ModelHTTPError

from phi.errors import UserError
from phi.llm._chat import ChatRequest

__all__ = ["GRAMMAR_PREFIX", "ChatServer", "parse_server_spec"]

GRAMMAR_PREFIX: Final = "grammar:"
"""How a `PHI_MODEL` value names an OpenAI-compatible server for the grammar adapter."""
_TIMEOUT: Final = httpx.Timeout(300.0, connect=5.0)
"""A busy 2-core machine can take minutes over one long prompt; connecting cannot."""


@dataclass(frozen=True, kw_only=True)
class ChatServer:
    """An OpenAI-compatible chat-completions endpoint (the `Complete` transport)."""

    base_url: str
    """Up to and including the API prefix, e.g. `http://127.0.0.1:8080/v1`."""
    model: str = "default"
    """The model name sent with each request (single-model servers ignore it)."""
    api_key: str | None = None
    """Sent as a bearer token when set."""

    @property
    def name(self) -> str:
        """The model's name, as `GrammarToolModel` reports it."""
        return self.model if self.model != "default" else self.base_url

    async def complete(self, request: ChatRequest) -> Mapping[str, Any]:
        """POST the request to `/chat/completions` and return the response body.

        Raises:
            ModelAPIError: The server cannot be reached.
            ModelHTTPError: It answered with an error status; over the context size, also a
                `ModelContextWindowExceededError`.
        """
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = f"{self.base_url.rstrip('/')}/chat/completions"
        # One client per request: a model server is a long call away, and the adapter has
        # no lifespan to close a pooled client in.
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            try:
                response = await client.post(
                    url, json={**request, "model": self.model}, headers=headers
                )
            except httpx.TimeoutException as error:
                raise ModelAPIError(
                    self.name, f"no answer from {url} within {_TIMEOUT.read:.0f} s"
                ) from error
            except httpx.HTTPError as error:
                raise ModelAPIError(
                    self.name, f"cannot reach {url}: {type(error).__name__} {error}"
                ) from error
        body: Any = _json(response)
        if response.is_error:
            problem = body.get("error") if isinstance(body, dict) else None
            kind = problem.get("type") if isinstance(problem, dict) else None
            over = kind == "exceed_context_size_error" or "context" in str(problem).lower()
            raise ModelHTTPError.for_category(
                ModelContextWindowExceededError if over else None,
                status_code=response.status_code,
                model_name=self.name,
                body=body,
                provider_error_type=kind if isinstance(kind, str) else None,
            )
        if not isinstance(body, dict):
            raise ModelHTTPError(response.status_code, self.name, body)
        return body


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def parse_server_spec(spec: str) -> ChatServer:
    """The server a `grammar:URL` value names.

    Raises:
        UserError: The URL is not http(s) with a host.
    """
    url = spec.strip().removeprefix(GRAMMAR_PREFIX)
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UserError(
            f"model {spec!r}: expected grammar:http://HOST:PORT/v1 (an OpenAI-compatible "
            "server that honours json_schema response formats)"
        )
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    base = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return ChatServer(
        base_url=base, model=parts.fragment or "default", api_key=parts.password or None
    )
