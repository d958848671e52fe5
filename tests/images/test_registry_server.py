"""The test registry itself (tests/support/registry.py): it starts in every mode, and a registry that
cannot start is an error with its log, never a skip."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import registry as reg
from tests.support.registry import Registry, RegistryError


def status(url: str, context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), context=context,
                                    timeout=10) as res:
            return int(res.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_each_mode_answers_v2(plain_registry: Registry, tls_registry: Registry, basic_registry: Registry) -> None:
    assert status(plain_registry.url + "/v2/") == 200
    ca = ssl.create_default_context(cafile=str(tls_registry.ca_path))
    assert status(tls_registry.url + "/v2/", ca) == 200
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(tls_registry.url + "/v2/", timeout=10)  # not trusted without its CA
    basic_ca = ssl.create_default_context(cafile=str(basic_registry.ca_path))
    assert status(basic_registry.url + "/v2/", basic_ca) == 401
    auth = "Basic " + base64.b64encode(b"alice:s3cret-pass").decode()
    assert status(basic_registry.url + "/v2/", basic_ca, {"Authorization": auth}) == 200


def test_token_mode_grants_what_the_token_server_signs(token_registry: Registry) -> None:
    ca = ssl.create_default_context(cafile=str(token_registry.ca_path))
    assert status(token_registry.url + "/v2/", ca) == 401
    assert token_registry.token_server is not None
    auth = "Basic " + base64.b64encode(b"alice:s3cret-pass").decode()
    url = f"{token_registry.token_server.realm}?service={reg.TOKEN_SERVICE}&scope=repository:a/b:pull"
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": auth}), context=ca) as res:
        token = json.load(res)["token"]
    # a token for a/b: its tags list answers (404: no such repository yet), another repository is refused
    assert status(token_registry.url + "/v2/a/b/tags/list", ca, {"Authorization": f"Bearer {token}"}) == 404
    assert status(token_registry.url + "/v2/c/d/tags/list", ca, {"Authorization": f"Bearer {token}"}) == 401
    assert status(url, ca, {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}) == 401


def test_a_registry_that_cannot_start_is_an_error_with_its_log(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "docker-registry"
    fake.write_text("#!/bin/sh\necho 'configuration error: no storage' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(reg, "REGISTRY_BIN", str(fake))
    with pytest.raises(RegistryError, match=r"exited with 3:\n.*configuration error"):
        Registry(tmp_path / "r").start()
    monkeypatch.setattr(reg, "REGISTRY_BIN", str(tmp_path / "missing"))
    with pytest.raises(RegistryError, match="is not installed"):
        Registry(tmp_path / "r").start()


def test_stop_ends_the_process(tmp_path: Path) -> None:
    registry = Registry(tmp_path).start()
    process = registry.process
    assert process is not None and process.poll() is None
    registry.stop()
    assert process.poll() is not None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(registry.url + "/v2/", timeout=5)
