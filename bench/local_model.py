"""Latency of the air-gapped brain: SmolLM2-135M-Instruct in-process via llama.cpp.

    uv run python bench/local_model.py [--loads 3] [--decisions 10]

Measures, on this machine:
- load time: a fresh `LocalLlama` reading the GGUF file and starting llama.cpp (median of
  `--loads`, each loaded and freed in turn);
- one tool-call decision: `GrammarToolModel.request` for the first step of answering a
  mention (two tools, no final answer yet), with a different question each time so the
  prompt cache only helps with the shared prefix, as in real use (median and p90).
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
from pydantic_ai.messages import ModelRequest, SystemPromptPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from phi.llm import GrammarToolModel, LocalLlama
from phi.llm.local import SMOLLM2_NAME

URI = "at://did:plc:alice/app.bsky.feed.post/3k2a"
QUESTIONS = [
    "what is the capital of France?",
    "do you like birds?",
    "what are you working on today?",
    "can you recommend a book?",
    "how do you remember people?",
    "what is the AT Protocol?",
    "is it going to rain?",
    "what's your favourite colour?",
    "who made you?",
    "what time is it where you are?",
]


def tool(name: str, description: str, *arguments: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description,
        parameters_json_schema={
            "type": "object",
            "properties": {argument: {"type": "string"} for argument in arguments},
            "required": list(arguments),
            "additionalProperties": False,
        },
    )


TOOLS = [
    tool("reply_to", "Reply to the post at `uri` with `text`.", "uri", "text"),
    tool("like_post", "Like the post at `uri` without replying.", "uri"),
]


def mention(question: str) -> ModelRequest:
    return ModelRequest(
        parts=[
            SystemPromptPart(
                "You are phi, a friendly bot on Bluesky. Answer people who mention you."
            ),
            UserPromptPart(
                f'New notification: mention from @alice.test\nuri: "{URI}"\ntext: "@phi {question}"'
            ),
        ]
    )


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(loads: int, decisions: int) -> None:
    load_times = []
    for _ in range(loads):
        llama = LocalLlama()
        started = time.perf_counter()
        await llama.load()
        load_times.append(time.perf_counter() - started)
        llama.close()

    llama = LocalLlama()
    await llama.load()
    model = GrammarToolModel(llama.complete, model_name=SMOLLM2_NAME)
    parameters = ModelRequestParameters(function_tools=TOOLS, allow_text_output=True)
    latencies, output_tokens, correct = [], [], 0
    for index in range(decisions):
        question = QUESTIONS[index % len(QUESTIONS)]
        started = time.perf_counter()
        response = await model.request([mention(question)], None, parameters)
        latencies.append(time.perf_counter() - started)
        output_tokens.append(response.usage.output_tokens)
        (part,) = response.parts
        correct += (
            isinstance(part, ToolCallPart)
            and part.tool_name == "reply_to"
            and part.args_as_dict().get("uri") == URI
        )
    llama.close()

    print(f"model: {SMOLLM2_NAME} (Q4_1 GGUF), llama.cpp in-process via xllamacpp, 2 threads")
    print(f"load time: median {statistics.median(load_times):.2f} s over {loads} loads")
    print(
        f"tool-call decision: median {statistics.median(latencies):.2f} s, "
        f"p90 {quantile(latencies, 0.9):.2f} s over {decisions} decisions "
        f"(~{statistics.median(output_tokens):.0f} tokens generated each)"
    )
    print(f"decisions that replied to the right URI: {correct}/{decisions}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--decisions", type=int, default=10)
    arguments = parser.parse_args()
    anyio.run(main, arguments.loads, arguments.decisions)
