"""The CLI spells the edge types out (importing `phi.memory` would slow `phi --help`)."""

from __future__ import annotations

from phi.cli.memory_graph import EDGE_TYPES as CLI_EDGE_TYPES
from phi.memory.model import EDGE_TYPES


def test_the_cli_knows_every_edge_type_in_order() -> None:
    assert CLI_EDGE_TYPES == EDGE_TYPES
