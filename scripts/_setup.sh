# Shared setup for the project's scripts: make sure uv exists and the environment is synced.
# Sourced, not run. Idempotent: a second run does nothing but check.
set -euo pipefail
PHI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$PHI_ROOT"
if ! command -v uv >/dev/null 2>&1; then
    python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv
    export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --frozen --quiet
