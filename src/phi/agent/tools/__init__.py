"""phi's tools, one module per domain; the agent assembles them into toolsets."""

from phi.agent.tools.bluesky import bluesky_tools
from phi.agent.tools.cosmik import cosmik_tools
from phi.agent.tools.intent import intent_tools
from phi.agent.tools.memory import memory_tools
from phi.agent.tools.web import search_tools, web_tools

__all__ = [
    "bluesky_tools",
    "cosmik_tools",
    "intent_tools",
    "memory_tools",
    "search_tools",
    "web_tools",
]
