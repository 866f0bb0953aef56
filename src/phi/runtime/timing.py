"""Time spent waiting on the model, so phi's own latency can be told apart from the brain's."""

from __future__ import annotations

import time

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings, merge_model_settings

__all__ = ["TimedModel"]


class TimedModel(WrapperModel):
    """A model that adds up the seconds its requests take (`seconds`, `requests`), and gives
    each request at most `request_timeout` seconds (`PHI_MODEL_TIMEOUT`)."""

    seconds: float = 0.0
    requests: int = 0

    def __init__(self, wrapped: Model, *, request_timeout: float | None = None) -> None:
        super().__init__(wrapped)
        self.request_timeout = request_timeout

    @property
    def settings(self) -> ModelSettings | None:
        # pydantic-ai enforces `request_timeout` over every attempt of the provider's SDK (its
        # own timeout is per attempt, 600 s by default, three attempts): a model that hangs
        # fails the run in bounded time instead of stalling the poller.
        if self.request_timeout is None:
            return self.wrapped.settings
        own = ModelSettings(request_timeout=self.request_timeout)
        return merge_model_settings(self.wrapped.settings, own)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        started = time.perf_counter()
        try:
            return await super().request(messages, model_settings, model_request_parameters)
        finally:
            self.seconds += time.perf_counter() - started
            self.requests += 1
