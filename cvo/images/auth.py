"""Registry credentials from a docker ``config.json``, as containers/image reads them.

Where (``pkg/docker/config`` ``getPathToAuth`` and the docker CLI): ``--registry-config FILE``, else
``$REGISTRY_AUTH_FILE``, else ``$XDG_RUNTIME_DIR/containers/auth.json``, else ``~/.docker/config.json``; on a
cluster, the ``.dockerconfigjson`` of ``openshift-config/pull-secret`` (what the CVO's pods pull with).
What: ``auths`` keyed by registry (``quay.io``), by registry and repository path (``quay.io/org/repo``,
the longest match wins: ``findCredentialsInFile``) or by an URL (``https://quay.io/v1/``, normalised as
``normalizeAuthFileKey`` does); an entry holds ``auth`` (base64 of ``user:password``) or ``username`` and
``password``; an ``identitytoken`` is a refresh token for the token server.  A credential never reaches a
log line, an error or a ``repr``.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.images.errors import ImageError, Problem

MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class Credential:
    """A user name and secret for one registry; ``repr`` hides the secret."""

    username: str
    password: str = field(repr=False)
    identity_token: str = field(default="", repr=False)


@dataclass(frozen=True)
class Auths:
    """The ``auths`` of a config file, by normalised key."""

    entries: Mapping[str, Credential] = field(default_factory=dict)
    source: str = ""  # the file (for messages)

    def lookup(self, registry: str, repository: str) -> Credential | None:
        """The most specific entry for ``registry/repository``: the repository path, then its parents,
        then the registry (containers/image ``findCredentialsInFile``)."""
        path = f"{registry}/{repository}"
        while True:
            if path in self.entries:
                return self.entries[path]
            if "/" not in path:
                return None
            path = path.rsplit("/", 1)[0]


def _normalise(key: str) -> str:
    """``normalizeAuthFileKey``: drop a scheme and, for a bare registry URL, its path."""
    for scheme in ("https://", "http://"):
        if key.startswith(scheme):
            key = key[len(scheme):].split("/", 1)[0]
            break
    return "docker.io" if key in ("index.docker.io", "registry-1.docker.io") else key


def parse_auths(doc: Any, source: str) -> Auths:
    """The ``auths`` of a decoded config; :class:`ImageError` (``INVALID``) naming the file and the entry."""
    def bad(message: str) -> ImageError:
        return ImageError(source, message, Problem.INVALID)

    if not isinstance(doc, dict):
        raise bad("registry config is not a JSON object")
    auths = doc.get("auths", {})
    if not isinstance(auths, dict):
        raise bad("registry config: auths is not an object")
    entries: dict[str, Credential] = {}
    for key, entry in auths.items():
        if not isinstance(key, str) or not isinstance(entry, dict):
            raise bad(f"registry config: auths entry {str(key)[:80]!r} is not an object")
        username, password = entry.get("username") or "", entry.get("password") or ""
        encoded = entry.get("auth")
        if encoded:
            if not isinstance(encoded, str):
                raise bad(f"registry config: auths[{key[:80]!r}].auth is not a string")
            try:
                decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise bad(f"registry config: auths[{key[:80]!r}].auth is not base64 of user:password") from None
            username, sep, password = decoded.partition(":")
            if not sep:
                raise bad(f"registry config: auths[{key[:80]!r}].auth is not base64 of user:password")
        token = entry.get("identitytoken") or ""
        if not all(isinstance(v, str) for v in (username, password, token)):
            raise bad(f"registry config: auths[{key[:80]!r}] has a field that is not a string")
        if username or password or token:
            entries[_normalise(key)] = Credential(username, password, token)
    return Auths(entries, source)


def default_config_path() -> Path | None:
    """``$REGISTRY_AUTH_FILE``, ``$XDG_RUNTIME_DIR/containers/auth.json`` or ``~/.docker/config.json``, the
    first that is set and exists."""
    if os.environ.get("REGISTRY_AUTH_FILE"):
        return Path(os.environ["REGISTRY_AUTH_FILE"])
    candidates = []
    if os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(os.environ["XDG_RUNTIME_DIR"]) / "containers" / "auth.json")
    candidates.append(Path.home() / ".docker" / "config.json")
    return next((c for c in candidates if c.is_file()), None)


def load_auths(path: Path | None, pull_secret: Mapping[str, Any] | None = None) -> Auths:
    """The credentials of ``path`` (else the default files), with a cluster's pull secret under them."""
    merged: dict[str, Credential] = {}
    source = ""
    if pull_secret is not None:
        merged.update(parse_auths(pull_secret, "openshift-config/pull-secret").entries)
        source = "openshift-config/pull-secret"
    explicit = path is not None
    path = path or default_config_path()
    if path is not None:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_CONFIG_BYTES + 1)
        except OSError as err:
            if explicit:
                raise ImageError(str(path), f"cannot read the registry config: {err.strerror}",
                                 Problem.INVALID) from None
            data = None
        if data is not None:
            if len(data) > MAX_CONFIG_BYTES:
                raise ImageError(str(path), f"registry config is over {MAX_CONFIG_BYTES} bytes", Problem.INVALID)
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError as err:
                raise ImageError(str(path), f"registry config is not JSON: {err}", Problem.INVALID) from None
            merged.update(parse_auths(doc, str(path)).entries)
            source = str(path)
    return Auths(merged, source)
