"""Redirects of blob downloads (registries hand blobs to object storage with a 307): followed, with the
registry's credentials kept for the registry (Go's net/http drops Authorization on a redirect to another
host, and so does cvo).  Two small servers on 127.0.0.1 stand in for the registry and the storage."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cvo.images.errors import ImageError, Problem
from cvo.images.reference import parse_image
from cvo.images.registry import RegistryOptions, open_registry
from cvo.images.repository import Deadline, Descriptor
from tests.support.registry import sha256

BLOB = b"layer bytes kept in object storage\n" * 100
AUTH = "Basic " + base64.b64encode(b"alice:pw").decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        status, headers, body = self.server.answer(self)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def servers() -> Iterator[tuple[ThreadingHTTPServer, ThreadingHTTPServer]]:
    started = []
    for _ in range(2):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.seen = []  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        started.append(server)
    yield started[0], started[1]
    for server in started:
        server.shutdown()
        server.server_close()


def test_a_blob_redirected_to_storage_is_fetched_without_the_registrys_credentials(
        servers: tuple[ThreadingHTTPServer, ThreadingHTTPServer], tmp_path: Path) -> None:
    registry, storage = servers
    storage_url = f"http://127.0.0.1:{storage.server_address[1]}/bucket/blob?signature=abc"

    def registry_answer(h: Handler) -> tuple[int, dict[str, str], bytes]:
        if h.headers.get("Authorization") != AUTH:
            return 401, {"WWW-Authenticate": 'Basic realm="r"'}, b""
        if h.path == "/v2/":
            return 200, {}, b"{}"
        return 307, {"Location": storage_url}, b""

    registry.answer = registry_answer  # type: ignore[attr-defined]
    storage.answer = lambda h: (200, {}, BLOB)  # type: ignore[attr-defined]
    config = tmp_path / "auth.json"
    host = f"127.0.0.1:{registry.server_address[1]}"
    config.write_text(json.dumps({"auths": {host: {"auth": base64.b64encode(b"alice:pw").decode()}}}))
    repo = open_registry(parse_image(f"{host}/ocp/release:1"),
                         RegistryOptions(registry_config=config, insecure=True), Deadline(30))
    with repo.open_blob(Descriptor("x", sha256(BLOB), len(BLOB))) as reader:
        assert reader.read() == BLOB
        reader.finish()
    assert registry.seen[-1] == (f"/v2/ocp/release/blobs/{sha256(BLOB)}", AUTH)  # type: ignore[attr-defined]
    assert storage.seen == [("/bucket/blob?signature=abc", None)]  # type: ignore[attr-defined]


def test_a_redirect_loop_ends(servers: tuple[ThreadingHTTPServer, ThreadingHTTPServer],
                                                     ) -> None:
    registry, _ = servers
    registry.answer = lambda h: ((200, {}, b"{}") if h.path == "/v2/"  # type: ignore[attr-defined]
                                 else (302, {"Location": h.path}, b""))
    host = f"127.0.0.1:{registry.server_address[1]}"
    repo = open_registry(parse_image(f"{host}/ocp/release:1"), RegistryOptions(insecure=True), Deadline(30))
    with pytest.raises(ImageError) as info:
        repo.open_blob(Descriptor("x", sha256(BLOB), len(BLOB))).__enter__()
    assert info.value.problem is Problem.UNAVAILABLE
    assert str(info.value) == (f"image {host}/ocp/release:1: reading blob {sha256(BLOB)}: more than 5 redirects")
