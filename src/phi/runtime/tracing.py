"""OpenTelemetry tracing of agent runs, through pydantic-ai's own instrumentation.

Every agent (phi's and the memory passes') is instrumented with `Agent.instrument_all`:
one span per run, per model request and per tool call, with usage attributes. Spans go to
an OTLP/HTTP collector when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the
standard `OTEL_*` variables itself: headers, protocol paths); logfire reads the same path.
Without it nothing is instrumented, and runs cost no tracing at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["ENDPOINT_VARIABLE", "Tracing", "start_tracing", "tracing_from_env"]

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"


@dataclass(frozen=True, kw_only=True)
class Tracing:
    """Tracing switched on for this process; `stop()` flushes and switches it off."""

    provider: TracerProvider
    settings: InstrumentationSettings

    def stop(self) -> None:
        """Export what is pending, then stop instrumenting agents."""
        Agent.instrument_all(False)
        self.provider.shutdown()


def start_tracing(exporter: SpanExporter, *, batch: bool = True) -> Tracing:
    """Instrument every agent and send its spans to `exporter` (batched, unless `batch` is
    false: tests read spans as soon as a run ends)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "phi"}))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    settings = InstrumentationSettings(tracer_provider=provider)
    Agent.instrument_all(settings)
    return Tracing(provider=provider, settings=settings)


def tracing_from_env(environ: Mapping[str, str]) -> Tracing | None:
    """Tracing to the OTLP/HTTP collector `environ` names, or `None` when it names none."""
    if not environ.get(ENDPOINT_VARIABLE, "").strip():
        return None
    # Imported here: the exporter pulls protobuf and requests, which a phi without
    # tracing never needs to load.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return start_tracing(OTLPSpanExporter())
