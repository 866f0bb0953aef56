"""`phi bench brain`: the same twenty batches through a brain, scored.

Each case (`phi.bench.brain_cases`) becomes the first decision of a notifications run: the
system prompt of a prompt profile (the static base, the time, the batch, what phi remembers),
the entry prompt, and phi's core tools with the batch's URIs as the only values of `uri`
(as the runtime offers them). Reported per brain: the share of runs whose decision is a
valid tool call, the degenerate replies it wrote (`phi.agent.guard`: empty, an echo, a loop),
how many of those the guard's retry turned into a good reply (none is ever posted), seconds
per run, tokens per second and the prompt's size in tokens.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from phi.agent.core import BATCH_URI_TOOLS, CORE_TOOLS, entry_prompt
from phi.agent.guard import Degenerate, degenerate
from phi.agent.prompt import PromptProfile, base_prompt, compact_base, fit_block
from phi.agent.prompt.compact import COMPACT_BLOCKS, COMPACT_EXAMPLES
from phi.agent.tools import bluesky_tools, memory_tools
from phi.bench.brain_cases import CASES, BrainCase
from phi.llm import GrammarToolModel, is_local, local_llama, resolve_model, uses_grammar
from phi.llm.local import SMOLLM2_NAME
from phi.llm.sampling import answering

__all__ = [
    "CANDIDATES",
    "BrainResult",
    "BrainSetup",
    "CaseRun",
    "run_brain_bench",
    "setup_for",
    "system_prompt",
]

NOW: Final = "[NOW]\n2026-11-23 14:05 UTC (Monday)"
_FULL_ONLY: Final = (
    "[YOUR INFRASTRUCTURE]\nhandle: @phi.test\ndid: did:plc:phi\npds: http://localhost:2583\n"
    "records: io.phi.*",
    "[GOALS — io.phi.goal]\n(none set yet)",
    "[SELF STATE]\nlast post: 2 hours ago; last follow: never",
)
"""Blocks the full profile shows in a sandbox run that the compact one leaves out."""


@dataclass(frozen=True, kw_only=True)
class BrainSetup:
    """One brain to bench: a model, a prompt profile and sampling settings."""

    name: str
    """How the report names it."""
    spec: str | None
    """The `PHI_MODEL` value (None: the bundled local model)."""
    profile: PromptProfile = "compact"
    """The prompt profile it gets."""
    settings: ModelSettings | None = None
    """Sampling settings laid over the model's defaults."""
    default: bool = False
    """Whether this is what phi runs with."""
    tuned: bool = True
    """The small-model tuning of the local brain: worked examples in the compact prompt,
    anti-echo and DRY sampling, a shorter text cap. False: the local brain as it was before
    (for the before/after table)."""


@dataclass(frozen=True, kw_only=True)
class CaseRun:
    """One case through one brain."""

    case: str
    """The case's name."""
    seconds: float
    """Wall time of the decision (and of the guard's retry, if there was one)."""
    decision: str
    """The call made, as `tool(arguments)`, or the text answer."""
    valid: bool
    """A call of an offered tool with arguments phi would carry out."""
    degenerate: Degenerate | None
    """Why the text it wrote would not be posted, if so."""
    rescued: bool
    """The guard's retry produced text that may be posted."""
    prompt_tokens: int
    """Tokens of the first request's prompt."""
    output_tokens: int
    """Tokens generated, retry included."""


@dataclass(frozen=True, kw_only=True)
class BrainResult:
    """A brain's figures over every case (what `--json` prints)."""

    model: str
    runs: int
    valid_tool_calls: float
    """Share of runs whose decision is a valid tool call."""
    degenerate: int
    """Degenerate texts the brain wrote (none is posted: the guard refuses them)."""
    rescued: int
    """Of those, how many the guard's retry turned into text that may be posted."""
    median_s: float
    p95_s: float
    tokens_per_s: float
    """Generated tokens per second of decision time."""
    prompt_tokens: int
    """Median prompt size in tokens."""
    default: bool
    cases: tuple[CaseRun, ...] = ()


def system_prompt(case: BrainCase, profile: PromptProfile, *, tuned: bool = True) -> list[str]:
    """The system prompt parts a run on `case` sends under `profile` (`tuned=False`: the
    compact base without its worked examples, as before they were added)."""
    if profile == "full":
        blocks = [
            *_FULL_ONLY[:1],
            NOW,
            *_FULL_ONLY[1:],
            case.notifications(),
            case.memory,
            case.first_interaction,
        ]
        return [base_prompt(), *(b for b in blocks if b)]
    budgeted = [
        fit_block(NOW, COMPACT_BLOCKS["now"]),
        fit_block(case.notifications(), COMPACT_BLOCKS["notifications"]),
        fit_block(case.memory, COMPACT_BLOCKS["people"]) if case.memory else "",
        fit_block(case.first_interaction, COMPACT_BLOCKS["first_interaction"])
        if case.first_interaction
        else "",
    ]
    base = compact_base() if tuned else compact_base().removesuffix(f"\n{COMPACT_EXAMPLES}")
    return [base, *(b for b in budgeted if b)]


def _tools(case: BrainCase) -> list[ToolDefinition]:
    """phi's core tools as the runtime offers them for this batch."""
    uris = sorted(post.uri for post in case.posts)
    tools: list[ToolDefinition] = []
    for toolset in (bluesky_tools, memory_tools):
        for name, tool in toolset.tools.items():
            if name not in CORE_TOOLS:
                continue
            definition = tool.tool_def
            if name in BATCH_URI_TOOLS:
                if not uris:
                    continue
                schema = copy.deepcopy(definition.parameters_json_schema)
                schema["properties"]["uri"]["enum"] = uris
                definition = replace(definition, parameters_json_schema=schema)
            tools.append(definition)
    return tools


def _judge(case: BrainCase, call: ToolCallPart) -> tuple[bool, Degenerate | None]:
    """(valid, degenerate) for a tool call."""
    args = call.args_as_dict()
    posts = {post.uri: post.text for post in case.posts}
    if call.tool_name in BATCH_URI_TOOLS and args.get("uri") not in posts:
        return False, None
    text = args.get("text")
    if call.tool_name in {"reply_to", "post"}:
        if not isinstance(text, str):
            return False, None
        answering = posts.get(args["uri"]) if call.tool_name == "reply_to" else None
        return True, degenerate(text, answering=answering)
    return call.tool_name in CORE_TOOLS, None


async def run_case(model: Model, case: BrainCase, setup: BrainSetup) -> CaseRun:
    """One case through one brain, with the guard's retry when the text is degenerate."""
    # The case's posts are declared to the model as `phi.agent.core.run` declares a batch's.
    names = [post.handle.split(".")[0] for post in case.posts]
    with answering([post.text for post in case.posts], names=names):
        return await _run_case(model, case, setup)


async def _run_case(model: Model, case: BrainCase, setup: BrainSetup) -> CaseRun:
    tools = _tools(case)
    params = ModelRequestParameters(function_tools=tools, allow_text_output=True)
    first = ModelRequest(
        parts=[
            *(
                SystemPromptPart(part)
                for part in system_prompt(case, setup.profile, tuned=setup.tuned)
            ),
            UserPromptPart(entry_prompt("notifications")),
        ]
    )
    messages: list[ModelMessage] = [first]
    started = time.perf_counter()
    response = await model.request(messages, setup.settings, params)
    prompt_tokens, output_tokens = response.usage.input_tokens, response.usage.output_tokens
    valid, bad, rescued = _verdict(case, response)
    if bad is not None:
        (call,) = [p for p in response.parts if isinstance(p, ToolCallPart)]
        messages += [
            response,
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        call.tool_name,
                        f"not posted: {bad.reason} ({bad.detail}). write something of your "
                        "own, in new words",
                        call.tool_call_id,
                        outcome="retried",
                    )
                ]
            ),
        ]
        retry = await model.request(messages, setup.settings, params)
        output_tokens += retry.usage.output_tokens
        _, again, _ = _verdict(case, retry)
        rescued = again is None and any(isinstance(p, ToolCallPart) for p in retry.parts)
    return CaseRun(
        case=case.name,
        seconds=time.perf_counter() - started,
        decision=_describe(response),
        valid=valid,
        degenerate=bad,
        rescued=rescued,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
    )


def _verdict(case: BrainCase, response: ModelResponse) -> tuple[bool, Degenerate | None, bool]:
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    if len(calls) != 1:
        return False, None, False
    valid, bad = _judge(case, calls[0])
    return valid, bad, False


def _describe(response: ModelResponse) -> str:
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    if calls:
        return "; ".join(f"{c.tool_name}({c.args_as_json_str()})" for c in calls)
    return f"text: {response.text or ''}"


CANDIDATES: Final = (
    BrainSetup(name="smollm2 full prompt, untuned", spec=None, profile="full", tuned=False),
    BrainSetup(name="smollm2 compact, untuned", spec=None, profile="compact", tuned=False),
    BrainSetup(
        name="smollm2 compact, untuned, freq-penalty 0.5",
        spec=None,
        profile="compact",
        tuned=False,
        settings=ModelSettings(frequency_penalty=0.5),
    ),
    BrainSetup(name="smollm2 compact, tuned", spec=None, profile="compact", default=True),
)
"""What `phi bench brain` compares by default: the bundled model as it was (full prompt;
compact prompt; compact with a frequency penalty) and as phi runs it now (compact prompt
with worked examples, anti-echo and DRY sampling, texts capped: `phi.llm.sampling`)."""


def _model_for(setup: BrainSetup) -> Model:
    if is_local(setup.spec) and not setup.tuned:
        return GrammarToolModel(local_llama().complete, model_name=SMOLLM2_NAME, calls_per_run=1)
    return resolve_model(setup.spec)


def setup_for(spec: str) -> BrainSetup:
    """The setup phi would run for a `PHI_MODEL` value."""
    return BrainSetup(
        name=spec,
        spec=spec,
        profile="compact" if uses_grammar(spec) else "full",
        default=is_local(spec),
    )


async def run_brain_bench(
    setups: Sequence[BrainSetup],
    *,
    cases: Sequence[BrainCase] = CASES,
    on_case: Callable[[BrainSetup, CaseRun], None] | None = None,
) -> list[BrainResult]:
    """Every case through every setup, in turn (one model in memory at a time); `on_case`
    hears of each run as it ends."""
    results = []
    for setup in setups:
        model = _model_for(setup)
        if is_local(setup.spec):
            await local_llama().load()  # loading is not a decision's time
        runs = []
        for case in cases:
            run = await run_case(model, case, setup)
            runs.append(run)
            if on_case is not None:
                on_case(setup, run)
        results.append(_result(setup, runs))
    return results


def _result(setup: BrainSetup, runs: list[CaseRun]) -> BrainResult:
    seconds = [run.seconds for run in runs]
    total = sum(seconds)
    return BrainResult(
        model=setup.name,
        runs=len(runs),
        valid_tool_calls=sum(run.valid for run in runs) / len(runs),
        degenerate=sum(run.degenerate is not None for run in runs),
        rescued=sum(run.rescued for run in runs),
        median_s=statistics.median(seconds),
        p95_s=_quantile(seconds, 0.95),
        tokens_per_s=sum(run.output_tokens for run in runs) / total if total else 0.0,
        prompt_tokens=round(statistics.median(run.prompt_tokens for run in runs)),
        default=setup.default,
        cases=tuple(runs),
    )


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
