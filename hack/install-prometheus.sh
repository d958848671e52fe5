#!/bin/sh
# The real monitoring parts of the update-graph tests (tests/updates, tests/monitoring, tests/e2e): Debian's
# prometheus (a real server the tests start on 127.0.0.1, scraping `cvo run` and answering PromQL risks) and its
# promtool (`promtool test rules` on the shipped alerting rules). Run by `make test`, `make test-fast` and
# `make bench`; installs with apt-get as root, or through `sudo -n` otherwise. Nothing else is fetched.
set -e
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo -n"
fi
echo "installing Debian's prometheus (apt-get) for the update-graph tests" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package starts a server on :9090 (and a node exporter) as services; the tests start their own.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
pkill -x prometheus >/dev/null 2>&1 || true
command -v prometheus >/dev/null && command -v promtool >/dev/null
