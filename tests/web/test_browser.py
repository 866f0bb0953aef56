"""The memory page in headless Chromium (Debian's, driven by Playwright) on LoCoMo people.

The store holds the first two sessions of each LoCoMo development conversation: every turn
an `interaction` in its speaker's namespace (one person per speaker per conversation: two
different Johns stay two people), each session's id a reference both speakers share, and
three scripted observations per person (their longest turns, marked `scripted` in `meta`)
standing in for extraction, one of them superseded so the page has a history to show.

Chromium comes from `scripts/chromium.sh`; without it this test fails, never skips.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
import uvicorn
from playwright.sync_api import sync_playwright

from phi.bench.locomo import DEV_SPLIT, parse_session_date
from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn, user_namespace
from phi.web import create_app

LOCOMO: Final = DEV_SPLIT
CHROMIUM: Final = "/usr/bin/chromium"
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SESSIONS: Final = (1, 2)
OBSERVATIONS_PER_PERSON: Final = 3
ARTIFACTS: Final = Path(
    os.environ.get("PHI_TEST_ARTIFACTS", Path(__file__).parents[2] / ".cache" / "test-artifacts")
)


def _did(sample_id: str, speaker: str) -> str:
    return f"did:plc:{sample_id}-{speaker.lower()}"


def locomo_rows(conversations: list[dict[str, Any]]) -> tuple[list[NewRow], set[str]]:
    """Interactions and scripted observations for every speaker of the loaded sessions."""
    rows: list[NewRow] = []
    people: set[str] = set()
    for sample in conversations:
        sample_id, conversation = sample["sample_id"], sample["conversation"]
        spoken: dict[str, list[tuple[str, str, datetime]]] = {}
        for number in SESSIONS:
            start = parse_session_date(conversation[f"session_{number}_date_time"])
            session_uri = f"locomo://{sample_id}/session_{number}"
            for index, turn in enumerate(conversation[f"session_{number}"]):
                did = _did(sample_id, turn["speaker"])
                people.add(did)
                turn_uri = f"locomo://{sample_id}/{turn['dia_id']}"
                at = start + timedelta(seconds=index)
                spoken.setdefault(did, []).append((turn["text"], turn_uri, at))
                rows.append(
                    NewRow.interaction(
                        [Turn(speaker=turn["speaker"], text=turn["text"])],
                        namespace=user_namespace(did),
                        author=did,
                        source_uris=[session_uri, turn_uri],
                        created_at=at,
                    )
                )
        for did, turns in sorted(spoken.items()):
            name = did.rsplit("-", 1)[1].capitalize()
            longest = sorted(turns, key=lambda t: (-len(t[0]), t[1]))[:OBSERVATIONS_PER_PERSON]
            rows.extend(
                NewRow(
                    content=f"{name} said: {text}",
                    namespace=user_namespace(did),
                    kind="observation",
                    author=did,
                    source_uris=[uri],
                    created_at=at,
                    meta={"scripted": True},
                )
                for text, uri, at in longest
            )
    return rows, people


async def _fill(db: Path, minilm: MiniLMEmbedder) -> set[str]:
    conversations = json.loads(LOCOMO.read_text())
    rows, people = locomo_rows(conversations)
    async with Memory.open(db, embedder=minilm) as memory:
        written = await memory.remember_many(rows)
        caroline = user_namespace(_did("conv-26", "Caroline"))
        first = next(r for r in written if r.namespace == caroline and r.kind == "observation")
        # Written through a team token's server (`written_by`), which the page shows.
        await memory.as_writer("alice").remember(
            NewRow(
                content="Caroline said she is now studying counseling full time",
                namespace=caroline,
                kind="observation",
                author=first.author,
                source_uris=first.source_uris,
                supersedes=first.row_id,
            )
        )
    return people


@pytest.fixture
def served(tmp_path: Path, minilm: MiniLMEmbedder) -> Iterator[tuple[str, set[str]]]:
    """`phi web`'s app on a free loopback port, in a background thread (uvicorn binds port 0
    and the test reads the port it got: a port picked beforehand could be taken meanwhile)."""
    db = tmp_path / "locomo.db"
    people = anyio.run(_fill, db, minilm)
    app = create_app(lambda: Memory.open(db, embedder=minilm))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the web app did not start"
        time.sleep(0.05)
    (listening,) = [sock for bound in server.servers for sock in bound.sockets]
    yield f"http://127.0.0.1:{listening.getsockname()[1]}", people
    server.should_exit = True
    thread.join(timeout=10)


def test_memory_page_draws_people_and_shows_what_phi_knows(
    served: tuple[str, set[str]],
) -> None:
    base, people = served
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run scripts/chromium.sh"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(f"{base}/memory")
            page.wait_for_selector("g.person")
            assert page.locator("g.person").count() == len(people) == 10
            assert page.locator("g.phi").count() == 1
            assert page.locator("line.edge").count() == 5  # each conversation's two speakers
            assert page.locator("#graph-status").inner_text().startswith("10 people")

            caroline = _did("conv-26", "Caroline")
            page.locator(f'g.person[data-did="{caroline}"] circle').click()
            page.wait_for_selector("#observations li.observation")
            assert page.locator("#person-panel h2").inner_text() == "Caroline"
            observations = page.locator("#observations li.observation")
            assert observations.count() == OBSERVATIONS_PER_PERSON
            assert "counseling full time" in observations.first.inner_text()
            assert observations.first.locator(".writer").inner_text() == "alice"
            assert observations.nth(1).locator(".writer").count() == 0  # a local write
            assert page.locator("#observations details").count() == 1
            assert "locomo://conv-26/" in page.locator("#observations .source").first.inner_text()
            assert page.locator("#recent li.exchange").count() > 0
            page.screenshot(path=str(ARTIFACTS / "memory-page.png"), full_page=True)

            page.fill("#search-input", "adoption agencies")
            page.click("#search-form button")
            page.wait_for_selector("#search-results li.result")
            assert page.locator("#search-results li.result").count() > 0
            page.screenshot(path=str(ARTIFACTS / "memory-search.png"), full_page=True)
        finally:
            browser.close()
