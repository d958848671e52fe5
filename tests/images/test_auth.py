"""Credentials from docker config files and the pull secret, as containers/image pkg/docker/config finds
them, and WWW-Authenticate parsed as distribution parses it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cvo.images.auth import (
    AuthSource,
    Challenge,
    Credentials,
    auth_sources,
    find_credentials,
    lookup_keys,
    parse_challenge,
    parse_challenges,
)
from cvo.images.errors import ImageError, Problem
from cvo.images.reference import parse_image
from cvo.images.registry import RegistryOptions

REF = parse_image("quay.example.com:5000/ocp/release/payload:4.16.3")
IMAGE = str(REF)


def entry(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def found(sources: list[AuthSource]) -> tuple[str, str] | None:
    creds = find_credentials(IMAGE, REF, sources)
    return None if creds is None else (creds.username, creds.password)


def test_lookup_keys_most_specific_first() -> None:
    assert lookup_keys("quay.io/a/b/c") == ["quay.io/a/b/c", "quay.io/a/b", "quay.io/a", "quay.io"]
    assert lookup_keys("localhost:5000") == ["localhost:5000"]


def test_the_most_specific_key_wins_then_urls_as_keys(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    registry = "quay.example.com:5000"
    auths = {registry: entry("reg", "1"), f"{registry}/ocp": entry("ns", "2"),
             f"{registry}/ocp/release/payload": entry("repo", "3"), f"{registry}/other": entry("other", "4")}
    sources = auth_sources(write(path, {"auths": auths}), environ={})
    assert sources == [AuthSource(str(path), path)]  # a chosen file is the only one read
    assert found(sources) == ("repo", "3")
    del auths[f"{registry}/ocp/release/payload"]
    write(path, {"auths": auths})
    assert found(sources) == ("ns", "2")
    write(path, {"auths": {f"https://{registry}/v1/": entry("url", "5"), "quay.example.com": entry("no", "6")}})
    assert found(sources) == ("url", "5")  # normalizeAuthFileKey: a URL key names its host and port
    write(path, {"auths": {f"{registry}/ocp/release/payload/more": entry("deeper", "7")}})
    assert found(sources) is None  # a key deeper than the repository never matches


def test_default_files_in_containers_image_order(tmp_path: Path) -> None:
    home, runtime = tmp_path / "home", tmp_path / "run"
    runtime.mkdir()
    env = {"XDG_RUNTIME_DIR": str(runtime), "HOME": str(home)}
    paths = [s.path for s in auth_sources(None, environ=env, home=home)]
    assert paths == [runtime / "containers/auth.json", home / ".config/containers/auth.json",
                     home / ".docker/config.json", home / ".dockercfg"]
    write(home / ".dockercfg", {"https://quay.example.com:5000/v1/": entry("legacy", "0")})
    assert found(auth_sources(None, environ=env, home=home)) == ("legacy", "0")
    write(home / ".docker/config.json", {"auths": {"quay.example.com:5000": entry("docker", "1")}})
    assert found(auth_sources(None, environ=env, home=home)) == ("docker", "1")
    write(home / ".config/containers/auth.json", {"auths": {"quay.example.com:5000/ocp": entry("xdg", "2")}})
    assert found(auth_sources(None, environ=env, home=home)) == ("xdg", "2")
    write(runtime / "containers/auth.json", {"auths": {"quay.example.com:5000": entry("runtime", "3")}})
    # the first file with an entry wins, however specific the entries of later files are
    assert found(auth_sources(None, environ=env, home=home)) == ("runtime", "3")
    env_docker = {"HOME": str(home), "DOCKER_CONFIG": str(tmp_path / "dc"), "XDG_RUNTIME_DIR": str(tmp_path / "gone"),
                  "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert [s.path for s in auth_sources(None, environ=env_docker, home=home)] == [
        tmp_path / "cfg/containers/auth.json", tmp_path / "dc/config.json", home / ".dockercfg"]


def test_registry_auth_file_and_the_pull_secret(tmp_path: Path) -> None:
    chosen = write(tmp_path / "chosen.json", {"auths": {"quay.example.com:5000": entry("chosen", "1")}})
    secret = {"auths": {"quay.example.com:5000": entry("cluster", "2")}}
    assert found(auth_sources(None, environ={"REGISTRY_AUTH_FILE": str(chosen)})) == ("chosen", "1")
    assert found(auth_sources(None, secret, environ={"REGISTRY_AUTH_FILE": str(chosen)})) == ("cluster", "2")
    assert found(auth_sources(chosen, {"auths": {"other.io": entry("x", "y")}}, environ={})) == ("chosen", "1")


def test_entries_without_user_colon_are_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", {"auths": {"quay.example.com:5000": {"auth": base64.b64encode(b"nocolon").decode()}}})
    assert found(auth_sources(path, environ={})) is None
    write(path, {"auths": {"quay.example.com:5000": {}}})  # what docker writes beside a credential helper
    assert found(auth_sources(path, environ={})) is None
    write(path, {"auths": {"quay.example.com:5000": entry("u", "p\x00\x00")}})
    assert found(auth_sources(path, environ={})) == ("u", "p")  # decodeDockerAuth trims NULs


@pytest.mark.parametrize(("content", "problem"), [
    ("{not json", "is not JSON"),
    ("[]", "is not a JSON object"),
    ('{"auths": []}', "auths is not an object"),
    ('{"auths": {"quay.example.com:5000": "x"}}', "auths['quay.example.com:5000'] is not an object"),
    ('{"auths": {"quay.example.com:5000": {"auth": 7}}}', "auths['quay.example.com:5000'].auth is not a string"),
    ('{"auths": {"quay.example.com:5000": {"auth": "c2VjcmV0LXBhc3N3b3Jk!"}}}',
     "auths['quay.example.com:5000'].auth is not base64"),
    ('{"credHelpers": {"quay.example.com:5000": 3}}', "credHelpers['quay.example.com:5000'] is not a helper name"),
])
def test_a_malformed_config_file_is_one_clear_error(tmp_path: Path, content: str, problem: str) -> None:
    path = write(tmp_path / "config.json", content)
    with pytest.raises(ImageError) as info:
        found(auth_sources(path, environ={}))
    assert info.value.problem is Problem.INVALID
    assert str(info.value).startswith(f"image {IMAGE}: registry config {path}")
    assert problem in str(info.value) and "\n" not in str(info.value)
    assert "secret-password" not in str(info.value) and "c2VjcmV0" not in str(info.value)


def test_a_credential_helper_answers_for_its_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    write(bin_dir / "docker-credential-test", "#!/bin/sh\nread server\n"
          'if [ "$server" = quay.example.com:5000 ]; then echo \'{"Username": "helped", "Secret": "h-pw"}\'; '
          "else echo 'credentials not found in native keychain'; exit 1; fi\n").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    path = write(tmp_path / "c.json", {"credHelpers": {"quay.example.com:5000": "test"},
                                       "auths": {"quay.example.com:5000": entry("file", "f")}})
    assert found(auth_sources(path, environ={})) == ("helped", "h-pw")  # credHelpers before auths
    write(path, {"credHelpers": {"quay.example.com:5000": "missing"}})
    with pytest.raises(ImageError, match="credential helper docker-credential-missing is not installed"):
        found(auth_sources(path, environ={}))


def test_secrets_never_show() -> None:
    creds = Credentials("alice", "hunter2-secret", "file (key)")
    options = RegistryOptions(pull_secret={"auths": {"x": entry("alice", "hunter2-secret")}})
    shown = repr(creds) + str(creds) + repr(options) + str(options)
    assert "hunter2" not in shown and base64.b64encode(b"alice:hunter2-secret").decode() not in shown
    assert creds.basic() == "Basic " + base64.b64encode(b"alice:hunter2-secret").decode()


# --- WWW-Authenticate: distribution's authchallenge_test.go cases and a few more ------------------------------

@pytest.mark.parametrize(("header", "expected"), [
    ('Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull"',
     Challenge("bearer", {"realm": "https://auth.example.com/token", "service": "registry.example.com",
                          "scope": "repository:a/b:pull"})),
    ('Basic realm="Registry Realm"', Challenge("basic", {"realm": "Registry Realm"})),
    ('BEARER Realm=token-realm , SERVICE="s"', Challenge("bearer", {"realm": "token-realm", "service": "s"})),
    (r'Bearer realm="a\"b\\c"', Challenge("bearer", {"realm": 'a"b\\c'})),
    ('Bearer realm="unterminated', Challenge("bearer", {})),
    ('Bearer realm="x",error="insufficient_scope",,scope="y"', Challenge("bearer", {"realm": "x",
                                                                                   "error": "insufficient_scope"})),
    ("Bearer", Challenge("bearer", {})),
])
def test_parse_challenge(header: str, expected: Challenge) -> None:
    assert parse_challenge(header) == expected


def test_headers_without_a_scheme_are_dropped() -> None:
    assert parse_challenge("") is None and parse_challenge(' ="x"') is None
    assert parse_challenges(["", "Basic realm=r", '"quoted"']) == [Challenge("basic", {"realm": "r"})]


def test_a_helper_name_that_may_be_a_secret_is_not_repeated(tmp_path: Path) -> None:
    """Found by make fuzz: a credential pasted into credHelpers came back in the error line."""
    pasted = base64.b64encode(b"user:fuzz-secret-pw").decode()
    path = write(tmp_path / "c.json", {"credHelpers": {"quay.example.com:5000": pasted}})
    with pytest.raises(ImageError) as err:
        found(auth_sources(path, environ={}))
    assert pasted not in str(err.value) and "name not shown" in str(err.value)
