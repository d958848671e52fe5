"""Registry credentials and challenges: docker ``config.json`` files, the pull secret, ``WWW-Authenticate``.

Which file is read, and which entry of it answers for an image, follow containers/image
``pkg/docker/config/config.go``: ``--registry-config`` (or ``$REGISTRY_AUTH_FILE``) alone when given,
else ``$XDG_RUNTIME_DIR/containers/auth.json`` (``/run/containers/UID/auth.json``),
``$XDG_CONFIG_HOME/containers/auth.json``, ``$DOCKER_CONFIG/config.json`` (``~/.docker/config.json``) and
the legacy ``~/.dockercfg``; the first file with an entry wins (``getCredentialsWithHomeDir``).  In a file,
``credHelpers[REGISTRY]`` first, then the most specific of ``REGISTRY/REPO/PATH`` … ``REGISTRY`` among
``auths`` keys (``authKeyLookupOrder``), then keys written as URLs (``normalizeAuthFileKey``).  An entry's
``auth`` is base64 ``user:password`` (``decodeDockerAuth``).  The cluster's pull secret
(``openshift-config/pull-secret``, a ``.dockerconfigjson``) is read first when given.

Challenges are parsed as distribution's ``internal/client/auth/challenge/authchallenge.go``
``parseValueAndParams`` does.  :class:`Credentials` never shows its secret: not in ``repr``, logs or errors.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from cvo.images.errors import ImageError, Problem
from cvo.images.reference import ImageRef
from cvo.log import get_logger

log = get_logger("cvo.images.auth")

MAX_AUTH_FILE_BYTES = 4 << 20
HELPER_TIMEOUT = 30.0  # seconds a docker-credential-* helper may take


@dataclass(frozen=True)
class Credentials:
    """A user name and password for one registry; ``source`` says where they came from (a path and key)."""

    username: str
    password: str = field(repr=False)
    source: str = ""

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=<redacted>, source={self.source!r})"

    def basic(self) -> str:
        """The ``Authorization`` header value for basic auth."""
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


@dataclass(frozen=True)
class AuthSource:
    """One place credentials are read from: a file (``legacy``: ``.dockercfg``'s bare map) or the pull secret."""

    description: str
    path: Path | None = None
    document: Mapping[str, Any] | None = field(default=None, repr=False)
    legacy: bool = False


def auth_sources(registry_config: Path | None, pull_secret: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None, home: Path | None = None) -> list[AuthSource]:
    """The places to look for credentials, in order (``getAuthFilePaths``)."""
    env = os.environ if environ is None else environ
    home = home if home is not None else Path(env.get("HOME") or Path.home())
    sources = [AuthSource("the pull secret", document=pull_secret)] if pull_secret is not None else []
    chosen = registry_config or (Path(env["REGISTRY_AUTH_FILE"]) if env.get("REGISTRY_AUTH_FILE") else None)
    if chosen is not None:
        return [*sources, AuthSource(str(chosen), chosen)]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        if Path(runtime).is_dir():  # getPathToAuthWithOS: a missing $XDG_RUNTIME_DIR is skipped with a warning
            sources.append(AuthSource(str(Path(runtime) / "containers/auth.json"), Path(runtime) / "containers/auth.json"))
    else:
        per_uid = Path(f"/run/containers/{os.getuid()}/auth.json")
        sources.append(AuthSource(str(per_uid), per_uid))
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    sources.append(AuthSource(str(config_home / "containers/auth.json"), config_home / "containers/auth.json"))
    docker = Path(env["DOCKER_CONFIG"]) / "config.json" if env.get("DOCKER_CONFIG") else home / ".docker/config.json"
    sources.append(AuthSource(str(docker), docker))
    sources.append(AuthSource(str(home / ".dockercfg"), home / ".dockercfg", legacy=True))
    return sources


def _load(image: str, source: AuthSource) -> Mapping[str, Any] | None:
    """The source's JSON object (``None``: a default file that does not exist)."""
    if source.document is not None:
        doc: Any = source.document
    else:
        assert source.path is not None
        try:
            with open(source.path, "rb") as f:
                data = f.read(MAX_AUTH_FILE_BYTES + 1)
        except FileNotFoundError:
            return None  # config.go authPath.parse: a missing file holds no credentials
        except OSError as err:
            raise ImageError(image, f"registry config {source.description}: {err.strerror or err}",
                             Problem.INVALID) from None
        if len(data) > MAX_AUTH_FILE_BYTES:
            raise ImageError(image, f"registry config {source.description} is over {MAX_AUTH_FILE_BYTES} bytes",
                             Problem.INVALID)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise ImageError(image, f"registry config {source.description} is not JSON: {err}",
                             Problem.INVALID) from None
    if not isinstance(doc, dict):
        raise ImageError(image, f"registry config {source.description} is not a JSON object", Problem.INVALID)
    if source.legacy:
        return {"auths": doc}
    for key in ("auths", "credHelpers"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise ImageError(image, f"registry config {source.description}: {key} is not an object", Problem.INVALID)
    return doc


def _normalize_registry(registry: str) -> str:
    return "index.docker.io" if registry in ("registry-1.docker.io", "docker.io") else registry


def _normalize_key(key: str, legacy: bool) -> str:
    """config.go ``normalizeAuthFileKey``: a key written as a URL names its host."""
    stripped = key.removeprefix("http://").removeprefix("https://")
    if legacy or stripped != key:
        stripped = stripped.partition("/")[0]
    return _normalize_registry(stripped)


def lookup_keys(key: str) -> list[str]:
    """config.go ``authKeyLookupOrder``: ``REG/a/b`` → ``REG/a/b``, ``REG/a``, ``REG``."""
    keys = [key]
    while "/" in key:
        key = key.rpartition("/")[0]
        keys.append(key)
    return keys


def _decode(image: str, source: AuthSource, key: str, entry: Any) -> Credentials | None:
    """config.go ``decodeDockerAuth``; an entry without ``user:`` is skipped, as docker does."""
    where = f"registry config {source.description}: auths[{key!r}]"
    if not isinstance(entry, dict):
        raise ImageError(image, f"{where} is not an object", Problem.INVALID)
    auth = entry.get("auth", "")
    if not isinstance(auth, str):
        raise ImageError(image, f"{where}.auth is not a string", Problem.INVALID)
    try:
        decoded = base64.b64decode(auth, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(image, f"{where}.auth is not base64", Problem.INVALID) from None
    user, colon, password = decoded.decode("utf-8", "replace").partition(":")
    if not colon:
        if decoded:  # the text of it is never shown: it may be a secret
            log.warning("registry config entry without user:password skipped", source=source.description, key=key)
        return None
    return Credentials(user, password.strip("\x00"), f"{source.description} ({key})")


_HELPER_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,31}")


def _from_helper(image: str, helper: str, registry: str, source: AuthSource) -> Credentials | None:
    """config.go ``getCredsFromCredHelper``: ``docker-credential-HELPER get`` with the registry on stdin."""
    name = f"docker-credential-{helper}"
    # a helper's name as helpers are named (gcloud, ecr-login, osxkeychain); anything else may be a secret pasted
    # into the wrong field, and is not repeated
    shown = name if _HELPER_NAME.fullmatch(helper) else "named in credHelpers/credsStore (name not shown)"
    where = f"registry config {source.description}: credential helper {shown}"
    program = shutil.which(name)
    if program is None:
        raise ImageError(image, f"{where} is not installed", Problem.INVALID)
    try:
        res = subprocess.run([program, "get"], input=registry.encode(), capture_output=True,
                             timeout=HELPER_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ImageError(image, f"{where} failed: {type(err).__name__}", Problem.INVALID) from None
    if res.returncode != 0:
        if b"credentials not found" in res.stdout.lower():
            return None
        raise ImageError(image, f"{where} failed with exit code {res.returncode}", Problem.INVALID)
    try:
        doc = orjson.loads(res.stdout)
    except orjson.JSONDecodeError:
        raise ImageError(image, f"{where} did not answer JSON", Problem.INVALID) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("Username"), str) or not isinstance(doc.get("Secret"), str):
        raise ImageError(image, f"{where} did not answer Username and Secret", Problem.INVALID)
    if doc["Username"] == "<token>":
        raise ImageError(image, f"{where} answered an identity token, which cvo does not support", Problem.INVALID)
    return Credentials(doc["Username"], doc["Secret"], f"{source.description} ({name})")


def find_in_source(image: str, ref: ImageRef, source: AuthSource) -> Credentials | None:
    """The entry of ``source`` that answers for ``ref`` (config.go ``findCredentialsInFile``)."""
    doc = _load(image, source)
    if doc is None:
        return None
    registry = ref.registry
    helpers = doc.get("credHelpers") or {}
    if registry in helpers:
        if not isinstance(helpers[registry], str) or not helpers[registry]:
            raise ImageError(image, f"registry config {source.description}: credHelpers[{registry!r}] is not a "
                                    "helper name", Problem.INVALID)
        return _from_helper(image, helpers[registry], registry, source)
    auths: Mapping[str, Any] = doc.get("auths") or {}
    keys = [registry] if source.legacy else lookup_keys(f"{registry}/{ref.repository}")
    for key in keys:
        if key in auths:
            return _decode(image, source, key, auths[key])
    wanted = _normalize_registry(registry)
    for key, entry in auths.items():
        if _normalize_key(key, source.legacy) == wanted:
            return _decode(image, source, key, entry)
    return None


def find_credentials(image: str, ref: ImageRef, sources: Iterable[AuthSource]) -> Credentials | None:
    """The first credentials any source has for ``ref`` (``None``: anonymous)."""
    for source in sources:
        creds = find_in_source(image, ref, source)
        if creds is not None:
            log.debug("registry credentials found", registry=ref.registry, source=creds.source)
            return creds
    return None


# --- WWW-Authenticate (distribution internal/client/auth/challenge/authchallenge.go) -----------------------

_SEPARATORS = frozenset(' \t"(),/:;<=>?@[]\\{}')
_SPACE = frozenset(" \t\r\n")


def _is_token(c: str) -> bool:
    return 32 < ord(c) < 127 and c not in _SEPARATORS


@dataclass(frozen=True)
class Challenge:
    """One ``WWW-Authenticate`` challenge: its scheme (lower case) and parameters (keys lower case)."""

    scheme: str
    params: Mapping[str, str]


def _token(s: str) -> tuple[str, str]:
    i = 0
    while i < len(s) and _is_token(s[i]):
        i += 1
    return s[:i], s[i:]


def _skip_space(s: str) -> str:
    i = 0
    while i < len(s) and s[i] in _SPACE:
        i += 1
    return s[i:]


def _token_or_quoted(s: str) -> tuple[str, str]:
    if not s.startswith('"'):
        return _token(s)
    out: list[str] = []
    escape = False
    for i, c in enumerate(s[1:], 1):
        if escape:
            out.append(c)
            escape = False
        elif c == "\\":
            escape = True
        elif c == '"':
            return "".join(out), s[i + 1:]
        else:
            out.append(c)
    return "", ""


def parse_challenge(header: str) -> Challenge | None:
    """``parseValueAndParams``: a scheme token, then ``key=value`` pairs (tokens or quoted strings) separated
    by commas; parsing stops at the first thing that is not one.  ``None`` when there is no scheme."""
    scheme, rest = _token(header)
    if not scheme:
        return None
    params: dict[str, str] = {}
    rest = "," + _skip_space(rest)
    while rest.startswith(","):
        key, rest = _token(_skip_space(rest[1:]))
        if not key or not rest.startswith("="):
            break
        value, rest = _token_or_quoted(rest[1:])
        if not value:
            break
        params[key.lower()] = value
        rest = _skip_space(rest)
    return Challenge(scheme.lower(), params)


def parse_challenges(headers: Iterable[str]) -> list[Challenge]:
    """Every ``WWW-Authenticate`` value's challenge (``parseAuthHeader``)."""
    return [c for c in (parse_challenge(h) for h in headers) if c is not None]
