#!/bin/sh
# Debian's chromium, for the real-browser tests of cvo report (tests/report/test_report_browser.py) and the
# report's benchmark. Run by `make test` and `make bench` (and by the tests themselves when it is
# missing); installs with apt-get as root, or through `sudo -n` otherwise. Nothing else is fetched.
set -e
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo -n"
fi
echo "installing Debian's chromium (apt-get) for the report's browser tests" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
