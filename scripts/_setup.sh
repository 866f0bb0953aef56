# Shared setup for the project's scripts: make sure uv exists, the environment is synced and
# a `phi` launcher is in ~/.local/bin. Sourced, not run. Idempotent: a second run does
# nothing but check.
set -euo pipefail
PHI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$PHI_ROOT"
PHI_BIN="$HOME/.local/bin"
# Whether ~/.local/bin was on PATH before we add it below (for the hint at the end).
case ":$PATH:" in *":$PHI_BIN:"*) phi_bin_on_path=1 ;; *) phi_bin_on_path=0 ;; esac
# uv's own installer and `pip install --user` both put uv in ~/.local/bin: look there first.
export PATH="$PHI_BIN:$PATH"
if ! command -v uv >/dev/null 2>&1; then
    echo "installing uv into $PHI_BIN (once)" >&2
    mkdir -p "$PHI_BIN"
    # Debian's python3 refuses plain `pip install --user` (PEP 668: externally managed);
    # a user-site install of one tool is what --break-system-packages is for.
    python3 -m pip install --quiet --user uv 2>/dev/null \
        || python3 -m pip install --quiet --user --break-system-packages uv \
        || { echo "error: could not install uv; install it (https://docs.astral.sh/uv/) and rerun" >&2; exit 1; }
fi
uv sync --frozen --quiet
mkdir -p "$PHI_BIN"
ln -sfn "$PHI_ROOT/.venv/bin/phi" "$PHI_BIN/phi"
if [ "$phi_bin_on_path" = 0 ]; then
    echo "note: phi and uv are in $PHI_BIN; new login shells find them (Debian's ~/.profile" \
        "adds it); in this one run: export PATH=\"\$HOME/.local/bin:\$PATH\"" >&2
fi
