"""Time spent waiting on the model, so phi's own latency can be told apart from the brain's."""

from __future__ import annotations

import time

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

__all__ = ["TimedModel"]


class TimedModel(WrapperModel):
    """A model that adds up the seconds its requests take (`seconds`, `requests`)."""

    seconds: float = 0.0
    requests: int = 0

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
