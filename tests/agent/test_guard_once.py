"""Each refusal of the guard is said once: `phi run` logs the activity stream it is given, and
the guard logging the same line itself printed every refusal twice."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from phi.agent.deps import ActivityLog
from phi.agent.guard import refuse_degenerate
from phi.agent.outcomes import Refused

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from phi.agent.deps import PhiDeps


def test_a_refusal_is_one_log_line_under_phi_run(caplog: pytest.LogCaptureFixture) -> None:
    activity = ActivityLog(emit=logging.getLogger("phi").info)  # what `phi run` passes
    ctx = cast(
        "RunContext[PhiDeps]",
        SimpleNamespace(deps=SimpleNamespace(activity=activity), retry=1, max_retries=1),
    )
    with caplog.at_level(logging.DEBUG):
        refused = refuse_degenerate(ctx, "reply_to", "i'm a cat. i'm a cat. i'm a cat.")
    assert isinstance(refused, Refused)
    lines = [r.getMessage() for r in caplog.records if "not posted" in r.getMessage()]
    assert lines == ["reply_to not posted (loop: \"i'm a cat\" repeated 3 times): "
                     "\"i'm a cat. i'm a cat. i'm a cat.\""]  # fmt: skip
