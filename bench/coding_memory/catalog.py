"""The projects and decisions the coding-memory benchmark's histories are built from.

Five checkouts a developer might have: two named `api` with different remotes, one without a
remote (its identity is its root path), and look-alike facts between the two `api`s (both pin
`httpx`, both set a retry budget, to different values for different reasons). Every decision
is told the way a session tells it: a request, a failure that motivates it, an edit that
carries the reason as a comment, and the assistant's closing message. `paraphrases` are the
later prompts that need it; none of them names the decision's `tokens`, so a context only
holds them if phi recalled the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, kw_only=True)
class Project:
    """One checkout on the developer's machine."""

    key: str
    """The benchmark's name for it (never shown to phi)."""
    folder: str
    """Its path under the benchmark's home folder; the last part is what the host shows."""
    remote: str | None
    """`origin`'s URL, or `None` for a repository without one."""
    subdir: str | None
    """A folder inside it some sessions start in (the host's cwd need not be the root)."""
    modules: tuple[str, ...]
    """Source files routine work reads and edits."""
    symbols: tuple[str, ...]
    """Names routine greps look for."""
    test_cmd: str
    """How its tests run."""
    markers: tuple[str, ...]
    """Words only this project's events contain: an injected entry holding one came from it."""


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A decision made in one session that a later session needs."""

    key: str
    """Unique across the catalog."""
    project: str
    """`Project.key` of the project it belongs to."""
    tokens: tuple[str, ...]
    """All of these (case-insensitive) in one injected entry: the decision is present."""
    request: str
    """The prompt of the session that makes it."""
    failing_cmd: str
    """The command whose failure motivates it."""
    failure: str
    """What that command printed."""
    file: str
    """The file the decision is written into (relative to the project root)."""
    before: str
    """The text the edit replaces."""
    after: str
    """The text the edit writes, reason included."""
    summary: str
    """The assistant's closing message: the decision and its reason."""
    paraphrases: tuple[str, ...]
    """Later prompts needing it, in other words than `tokens`."""
    replaces: str | None = None
    """The key of the decision this one reverses."""


PROJECTS: Final = (
    Project(
        key="billing-api",
        folder="work/acme/api",
        remote="git@github.com:acme/billing-api.git",
        subdir="src/billing",
        modules=("src/billing/invoices.py", "src/billing/payjet.py", "src/billing/dunning.py"),
        symbols=("InvoiceTotals", "charge_invoice", "DunningSchedule"),
        test_cmd="uv run pytest -q tests/billing",
        markers=("acme/api", "billing", "invoice", "payjet", "dunning", "0.27.2", "0.28.1", "7250"),
    ),
    Project(
        key="inventory-api",
        folder="src/oss/api",
        remote="https://github.com/lumen-labs/inventory-api",
        subdir=None,
        modules=("src/inventory/stock.py", "src/inventory/warehouses.py", "src/inventory/wms.py"),
        symbols=("StockLevel", "reserve_stock", "WarehouseSync"),
        test_cmd="uv run pytest -q tests/inventory",
        markers=("oss/api", "inventory", "warehouse", "wms", "restock", "0.26.0", "1350"),
    ),
    Project(
        key="tidepool",
        folder="src/tidepool",
        remote="https://gitlab.com/dev-k/tidepool.git",
        subdir=None,
        modules=("src/components/TideChart.tsx", "src/lib/fetchTides.ts", "src/lib/moonPhase.ts"),
        symbols=("TideChart", "fetchTides", "moonPhase"),
        test_cmd="npm test -- --run",
        markers=(
            "tidepool",
            "tidechart",
            "fetchtides",
            "moonphase",
            "date-fns-tz",
            "js-temporal",
            "20.11.1",
        ),
    ),
    Project(
        key="pocketbook",
        folder="src/pocketbook",
        remote=None,
        subdir="src/import",
        modules=("src/import/ofx.rs", "src/report.rs", "src/ledger_book.rs"),
        symbols=("OfxStatement", "render_report", "LedgerBook"),
        test_cmd="cargo test --quiet",
        markers=("pocketbook", "ofx", "ledger_book", "rust_decimal", "msrv", "rust-version"),
    ),
    Project(
        key="infra",
        folder="work/acme/infra",
        remote="git@github.com:acme/infra.git",
        subdir="envs/staging",
        modules=("envs/staging/main.tf", "modules/eks/cluster.tf", "Makefile"),
        symbols=("aws_eks_cluster", "node_group", "tf-plan"),
        test_cmd="make tf-plan ENV=staging",
        markers=("acme/infra", "tfstate", "aws_eks", "staging", "420s", "900s"),
    ),
)

DECISIONS: Final = (
    Decision(
        key="billing.httpx",
        project="billing-api",
        tokens=("httpx", "0.27.2"),
        request="Charging through Payjet fails behind the corporate proxy since this morning's "
        "dependency bump. Find out why and fix it.",
        failing_cmd="uv run pytest -q tests/billing/test_payjet.py",
        failure="FAILED tests/billing/test_payjet.py::test_charge_via_proxy - "
        "httpx.ProxyError: 407 Proxy Authentication Required\n1 failed, 14 passed in 2.31s",
        file="pyproject.toml",
        before='"httpx>=0.27",',
        after='"httpx==0.27.2",  # 0.28 dropped proxy auth from the URL: Payjet calls got 407',
        summary="Pinned httpx to 0.27.2: 0.28 stopped reading credentials from the proxy URL, so "
        "every Payjet charge behind the corporate proxy got 407. Tests pass again.",
        paraphrases=(
            "the HTTP client broke again after the upgrade — what did we do last time?",
            "payments through the office proxy are failing with auth errors again, how did we "
            "deal with that before?",
        ),
    ),
    Decision(
        key="billing.retry",
        project="billing-api",
        tokens=("retry", "7250"),
        request="Invoices sometimes end up charged twice when Payjet is slow. Make the retries "
        "sane.",
        failing_cmd="uv run pytest -q tests/billing/test_retries.py",
        failure="FAILED tests/billing/test_retries.py::test_no_double_charge - AssertionError: "
        "2 charges for invoice INV-1042\n1 failed, 6 passed in 1.02s",
        file="src/billing/payjet.py",
        before="RETRY_BUDGET_MS = 30000",
        after="RETRY_BUDGET_MS = 7250  # Payjet dedupes idempotency keys for 8 s only",
        summary="Cut the Payjet retry budget to 7250 ms: Payjet only dedupes idempotency keys "
        "for 8 seconds, so a retry after that charged the invoice twice.",
        paraphrases=(
            "how long do we keep retrying a slow payment call, and why that number?",
            "someone wants longer retries on the charge path — is there a reason we kept "
            "them short?",
        ),
    ),
    Decision(
        key="billing.httpx-bump",
        project="billing-api",
        tokens=("httpx", "0.28.1"),
        request="Dependabot wants a newer HTTP library; upstream says the proxy credentials "
        "issue is fixed. Take it if the Payjet tests pass.",
        failing_cmd="uv run pytest -q tests/billing/test_payjet.py -k proxy",
        failure="FAILED tests/billing/test_payjet.py::test_proxy_auth_explicit - TypeError: "
        "Client.__init__() got an unexpected keyword argument 'proxies'\n1 failed in 0.88s",
        file="pyproject.toml",
        before='"httpx==0.27.2",  # 0.28 dropped proxy auth from the URL: Payjet calls got 407',
        after='"httpx==0.28.1",  # proxy auth passed explicitly via proxy=httpx.Proxy(...)',
        summary="Upgraded httpx from 0.27.2 to 0.28.1 and now pass the proxy credentials "
        "explicitly with httpx.Proxy; the old pin is gone and the Payjet tests pass.",
        paraphrases=(
            "are we still holding the HTTP library back on an old release?",
            "which version of the HTTP client are we on now, and why?",
        ),
        replaces="billing.httpx",
    ),
    Decision(
        key="inventory.httpx",
        project="inventory-api",
        tokens=("httpx", "0.26.0"),
        request="Warehouse sync leaks connections until the pod is OOM-killed. Track it down.",
        failing_cmd="uv run pytest -q tests/inventory/test_sync_soak.py",
        failure="FAILED tests/inventory/test_sync_soak.py::test_pool_stays_bounded - "
        "AssertionError: 512 open connections after 1000 syncs (limit 20)\n1 failed in 9.40s",
        file="pyproject.toml",
        before='"httpx[http2]>=0.26",',
        after='"httpx[http2]==0.26.0",  # 0.27 leaks HTTP/2 streams on warehouse timeouts',
        summary="Pinned httpx to 0.26.0: with 0.27 a timed-out HTTP/2 request to the warehouse "
        "API never released its stream, so the pool grew without bound.",
        paraphrases=(
            "the HTTP client broke again after the upgrade — what did we do last time?",
            "connections are piling up during the nightly sync again; what was the fix?",
        ),
    ),
    Decision(
        key="inventory.retry",
        project="inventory-api",
        tokens=("retry", "1350"),
        request="Stock reservations double-book when the WMS answers late. Fix the retry path.",
        failing_cmd="uv run pytest -q tests/inventory/test_reserve.py",
        failure="FAILED tests/inventory/test_reserve.py::test_late_ack_no_double_booking - "
        "AssertionError: reserved 2 units, expected 1\n1 failed, 9 passed in 1.77s",
        file="src/inventory/wms.py",
        before="RETRY_BUDGET_MS = 10000",
        after="RETRY_BUDGET_MS = 1350  # WMS reserve is not idempotent: never retry past its ack",
        summary="Set the WMS retry budget to 1350 ms: reserve calls are not idempotent and the "
        "WMS acks within 1.3 s, so a later retry double-booked stock.",
        paraphrases=(
            "how long do we keep retrying a slow backend call, and why that number?",
            "can we make the reservation call retry for longer? I think we decided something "
            "about that",
        ),
    ),
    Decision(
        key="tidepool.dates",
        project="tidepool",
        tokens=("date-fns-tz",),
        request="The tide times are an hour off for users in Lisbon. Fix the timezone handling.",
        failing_cmd="npm test -- --run src/lib/fetchTides.test.ts",
        failure="FAIL src/lib/fetchTides.test.ts > converts high tide to local time\n"
        "AssertionError: expected '07:12' to be '06:12'\nTests 1 failed | 23 passed",
        file="src/lib/fetchTides.ts",
        before="import moment from 'moment-timezone';",
        after="import { formatInTimeZone } from 'date-fns-tz'; "
        "// moment-timezone's bundled zone data was years behind and cost 290 kB",
        summary="Swapped moment-timezone for date-fns-tz: its bundled zone data was years "
        "behind (the Lisbon offset was wrong) and it cost 290 kB of bundle.",
        paraphrases=(
            "which library do we use for time zones, and why not the usual one?",
            "times are off by an hour for some users again — what did we settle on last time?",
        ),
    ),
    Decision(
        key="tidepool.node",
        project="tidepool",
        tokens=("node", "20.11.1"),
        request="CI fails building the service worker but it builds locally. Make CI green.",
        failing_cmd="npm run build",
        failure="Error: [vite-plugin-pwa] workbox-build failed: ERR_REQUIRE_ESM under Node 22.3.0"
        "\nerror during build",
        file=".nvmrc",
        before="lts/*",
        after="20.11.1",
        summary="Pinned Node to 20.11.1 in .nvmrc (CI reads it): the PWA plugin's workbox build "
        "fails under Node 22 with ERR_REQUIRE_ESM.",
        paraphrases=(
            "what runtime version does CI build with, and why not the latest?",
            "can I bump the JavaScript runtime to the newest release?",
        ),
    ),
    Decision(
        key="tidepool.temporal",
        project="tidepool",
        tokens=("@js-temporal/polyfill",),
        request="Dates still go wrong around DST in the chart. Try the Temporal polyfill instead.",
        failing_cmd="npm test -- --run src/components/TideChart.test.tsx",
        failure="FAIL src/components/TideChart.test.tsx > labels the DST change\n"
        "AssertionError: expected '01:30' to be '02:30'\nTests 1 failed | 30 passed",
        file="src/lib/fetchTides.ts",
        before="import { formatInTimeZone } from 'date-fns-tz'; "
        "// moment-timezone's bundled zone data was years behind and cost 290 kB",
        after="import { Temporal } from '@js-temporal/polyfill'; "
        "// date-fns-tz mislabels the DST hour in TideChart",
        summary="Switched from date-fns-tz to @js-temporal/polyfill: date-fns-tz mislabelled "
        "the hour around the DST change; Temporal gets it right and the chart tests pass.",
        paraphrases=(
            "which library do we use for time zones now?",
            "the chart labels look wrong near the clock change — what do we use for dates?",
        ),
        replaces="tidepool.dates",
    ),
    Decision(
        key="pocketbook.decimal",
        project="pocketbook",
        tokens=("rust_decimal",),
        request="Imported bank statements are off by a cent now and then. Fix the amounts.",
        failing_cmd="cargo test --quiet import::ofx",
        failure="thread 'import::ofx::tests::sums_match' panicked: assertion failed: "
        "left: 1043.2999999999 right: 1043.30\ntest result: FAILED. 11 passed; 1 failed",
        file="src/import/ofx.rs",
        before="let amount: f64 = raw.parse()?;",
        after="let amount: Decimal = raw.parse()?; // rust_decimal: f64 lost cents on sums",
        summary="Amounts are parsed as rust_decimal::Decimal instead of f64: binary floats "
        "lost a cent when summing statements.",
        paraphrases=(
            "the totals are a cent off again — how did we handle money amounts before?",
            "what number type do we use for amounts, and why?",
        ),
    ),
    Decision(
        key="pocketbook.msrv",
        project="pocketbook",
        tokens=("msrv", "1.74"),
        request="The build fails on the Debian box with an old compiler. Decide what we support.",
        failing_cmd="cargo +1.70 build",
        failure="error: package `clap_builder v4.5.4` cannot be built because it requires rustc "
        "1.74 or newer, while the currently active rustc version is 1.70.0",
        file="Cargo.toml",
        before='edition = "2021"',
        after='edition = "2021"\nrust-version = "1.74"  # MSRV: clap 4.5 needs 1.74',
        summary="Declared the MSRV as 1.74 (rust-version in Cargo.toml): clap 4.5 needs it, and "
        "Debian users can install it with rustup.",
        paraphrases=(
            "what is the oldest compiler we promise to build with?",
            "a user on an old distro can't compile it — what did we decide to support?",
        ),
    ),
    Decision(
        key="infra.lock",
        project="infra",
        tokens=("lock", "420s"),
        request="Two CI applies ran at once and corrupted staging state. Stop that happening.",
        failing_cmd="make tf-apply ENV=staging",
        failure="Error: Error acquiring the state lock\nLock Info: ID: 9f1c... Operation: "
        "OperationTypeApply Who: ci@runner-7",
        file="Makefile",
        before="TF_FLAGS := -input=false",
        after="TF_FLAGS := -input=false -lock-timeout=420s  # wait for the other CI apply, "
        "never run two",
        summary="Applies now wait for the state lock with -lock-timeout=420s in TF_FLAGS, so "
        "two CI runs queue instead of racing on the state.",
        paraphrases=(
            "how long does a deploy wait if another one holds the state, and why?",
            "what stops two pipelines from applying at the same time?",
        ),
    ),
    Decision(
        key="infra.lock-longer",
        project="infra",
        tokens=("lock", "900s"),
        request="The cluster upgrade apply takes 12 minutes and the next CI run times out "
        "waiting. Give it more time.",
        failing_cmd="make tf-apply ENV=staging",
        failure="Error: Error acquiring the state lock\nLock Info: Operation: "
        "OperationTypeApply Who: ci@runner-3 (waited 7m0s)",
        file="Makefile",
        before="TF_FLAGS := -input=false -lock-timeout=420s  # wait for the other CI apply, "
        "never run two",
        after="TF_FLAGS := -input=false -lock-timeout=900s  # cluster upgrades hold it ~12 min",
        summary="Raised the state lock wait from 420s to 900s: a cluster upgrade apply holds "
        "the lock about 12 minutes, so the next run gave up waiting.",
        paraphrases=(
            "how long does a deploy wait for the state lock now?",
            "a pipeline gave up waiting on another apply — what timeout do we use?",
        ),
        replaces="infra.lock",
    ),
)

QUIET_PROMPTS: Final = (
    "what does the walrus operator do in Python?",
    "reword this commit message so it is in the imperative mood",
    "explain the difference between a process and a thread in two sentences",
    "is UTC+5:30 India's time zone?",
    "write a haiku about code review",
    "what is the keyboard shortcut to split the terminal pane?",
)
"""Prompts that need nothing from memory: phi should stay quiet."""
