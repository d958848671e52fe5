#!/bin/sh
# The real parts of the release-image tests (tests/images, tests/verify): Debian's docker-registry (the CNCF
# distribution registry), skopeo (an independent image client), apache2-utils (htpasswd, for the registry's
# basic auth), gnupg (throwaway signing keys) and openssl (the tests' CA). Run by `make test`, `make test-fast`
# and `make bench`; installs with apt-get as root, or through `sudo -n` otherwise. Nothing else is fetched.
set -e
missing=""
[ -x /usr/bin/docker-registry ] || missing="$missing docker-registry"
command -v skopeo >/dev/null 2>&1 || missing="$missing skopeo"
command -v htpasswd >/dev/null 2>&1 || missing="$missing apache2-utils"
command -v gpg >/dev/null 2>&1 || missing="$missing gnupg"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
if [ -z "$missing" ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo -n"
fi
echo "installing Debian's$missing (apt-get) for the release-image tests" >&2
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # one word per package
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
# The package starts a registry on :5000 as a service; the tests start their own.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi
[ -x /usr/bin/docker-registry ] && command -v skopeo >/dev/null && command -v htpasswd >/dev/null \
    && command -v gpg >/dev/null && command -v openssl >/dev/null
