#!/usr/bin/env bash
# Install Debian's Chromium for the browser test (tests/web/test_browser.py), only when it
# is missing. Playwright drives it with executable_path=/usr/bin/chromium; never run
# `playwright install` (its browser download is blocked here and on CI).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
