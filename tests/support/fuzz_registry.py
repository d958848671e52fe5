"""Fuzz targets of the registry client (cvo.images.registry, cvo.images.auth): name -> (strategy, target),
merged into fuzz_targets.TARGETS.

``registry-auth-file``: a docker config file of any bytes (mostly near-valid JSON); ``registry-challenge``: a
``WWW-Authenticate`` value; ``registry-error-body``: an error body; ``registry-retry-after``: a ``Retry-After``
value; ``registry-response``: a registry answering a manifest request with any status, headers and body.
Each may only answer or raise :class:`~cvo.images.errors.ImageError` with one line naming the image, and
never show a credential.
"""

from __future__ import annotations

import base64
import math
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from cvo.images.auth import AuthSource, find_in_source, parse_challenge
from cvo.images.errors import ImageError
from cvo.images.reference import parse_image
from cvo.images.registry import RegistryOptions, error_detail, open_registry, retry_after
from cvo.images.repository import Deadline

REF = parse_image("registry.example.com:5000/ocp/release:4.16.3")
SECRET = "fuzz-secret-pw"
KEYS = ["registry.example.com:5000", "registry.example.com:5000/ocp", "registry.example.com:5000/ocp/release",
        "https://registry.example.com:5000/v1/", "http://registry.example.com:5000", "registry.example.com", "",
        "docker.io", "registry.example.com:5000/ocp/release/x"]
AUTH_VALUES = [base64.b64encode(f"user:{SECRET}".encode()).decode(), base64.b64encode(SECRET.encode()).decode(),
               "", "!!!", base64.b64encode(b"u:" + SECRET.encode() + b"\x00").decode(), "dXNlcjo=", "===="]


def check_error(err: ImageError, image: str) -> None:
    text = str(err)
    assert text.startswith(f"image {image}: "), text
    assert "\n" not in text and "\r" not in text, text
    assert SECRET not in text and base64.b64encode(f"user:{SECRET}".encode()).decode() not in text, text


json_values = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(AUTH_VALUES + KEYS),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner,
                                                                                        max_size=3), max_leaves=6)
entries = st.fixed_dictionaries({}, optional={"auth": st.sampled_from(AUTH_VALUES) | json_values,
                                              "identitytoken": st.sampled_from(["", "tok"]) | json_values})
auth_docs = st.fixed_dictionaries({}, optional={
    "auths": st.dictionaries(st.sampled_from(KEYS), entries | json_values, max_size=4) | json_values,
    "credHelpers": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["", "nosuchhelper-fuzz"]) | json_values,
                                   max_size=2) | json_values,
})
auth_file_bytes = (auth_docs.map(orjson.dumps) | json_values.map(orjson.dumps)
                   | auth_docs.map(orjson.dumps).flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n]))
                   | st.binary(max_size=80))


def auth_file_target(data: bytes, legacy: bool = False) -> None:
    """A config file of these bytes: credentials, nothing, or one INVALID error that shows no secret."""
    with tempfile.TemporaryDirectory(prefix="cvo-fuzz-") as tmp:
        path = Path(tmp) / "auth.json"
        path.write_bytes(data)
        try:
            creds = find_in_source(str(REF), REF, AuthSource(str(path), path, legacy=legacy))
        except ImageError as err:
            check_error(err, str(REF))
            assert f"registry config {path}" in str(err), str(err)
            return
        if creds is not None:
            assert SECRET not in repr(creds), repr(creds)


challenge_text = (st.lists(st.sampled_from(['Bearer', 'Basic', ' ', ',', '=', '"', '\\', 'realm', 'service', 'x',
                                            '"https://a/token"', 'scope="repository:a:pull"', '\t', 'é', '\x00']),
                           max_size=14).map("".join) | st.text(max_size=40))


def challenge_target(text: str) -> None:
    challenge = parse_challenge(text)
    if challenge is None:
        return
    assert challenge.scheme and challenge.scheme == challenge.scheme.lower()
    assert all(k and k == k.lower() and v for k, v in challenge.params.items()), challenge


error_bodies = (st.fixed_dictionaries({"errors": st.lists(st.fixed_dictionaries({}, optional={
    "code": st.sampled_from(["MANIFEST_UNKNOWN", "DENIED", ""]) | st.text(max_size=300) | json_values,
    "message": st.text(max_size=300) | json_values, "detail": json_values}) | json_values, max_size=5)}).map(orjson.dumps)
    | json_values.map(orjson.dumps) | st.binary(max_size=100))


def error_body_target(data: bytes) -> None:
    detail = error_detail(data)
    assert isinstance(detail, str) and len(detail) <= 200 and detail.isprintable(), detail


retry_after_text = st.sampled_from(["0", "1", "120", "99999999999999999999", "-1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT",
                                    "Wed, 21 Oct 2015 07:28:00", "Sun, 06 Nov 1994 08:49:37 +0000", ""]) | st.text(max_size=30)


def retry_after_target(text: str) -> None:
    wait = retry_after(text, now=1.7e9)
    assert wait is None or (math.isfinite(wait) and wait >= 0), wait


HEADER_NAMES = ["Content-Type", "Docker-Content-Digest", "Content-Length", "Retry-After", "WWW-Authenticate",
                "Location", "Content-Range", "X-Other"]
HEADER_VALUES = ["application/vnd.oci.image.manifest.v1+json", "text/html", "sha256:" + "a" * 64, "sha256:zz", "0",
                 "5", "99999999", "1", 'Bearer realm="http://127.0.0.1:1/t"', 'Basic realm="r"', "/v2/", "http://[::1",
                 ""]
responses = st.tuples(st.sampled_from([200, 200, 201, 206, 301, 307, 400, 401, 403, 404, 405, 429, 500, 502, 503, 599]),
                      st.lists(st.tuples(st.sampled_from(HEADER_NAMES), st.sampled_from(HEADER_VALUES)), max_size=4),
                      error_bodies | st.sampled_from([b'{"schemaVersion": 2}', b""]))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/v2/":
            status, headers, body = 200, [], b"{}"
        else:
            status, headers, body = self.server.answer
        self.send_response(status)
        for name, value in headers:
            if name != "Content-Length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 filled up on a loaded machine: a connect then waited in the kernel


def _serve() -> ThreadingHTTPServer:
    """A server on a daemon thread, for the whole process (it ends with it).  Not a context manager: one left
    open was finalized by the garbage collector in whatever thread collected it, the server's own among them,
    and ``shutdown()`` called from the serving thread waits for itself for ever (a 300 s timeout, now and then)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


_SERVER: list[ThreadingHTTPServer] = []


def response_target(answer: tuple[int, list[tuple[str, str]], bytes]) -> None:
    """A registry answering ``GET``/``HEAD`` of a manifest with ``answer``: a manifest or one ImageError line."""
    if not _SERVER:
        _SERVER.append(_serve())
    server = _SERVER[0]
    server.answer = answer  # type: ignore[attr-defined]
    now = [0.0]
    spec = f"127.0.0.1:{server.server_address[1]}/ocp/release:4.16.3"
    repo = open_registry(parse_image(spec), RegistryOptions(insecure=True, read_timeout=1, pull_secret={}),
                         Deadline(4, lambda: now[0], lambda s: now.__setitem__(0, now[0] + s)))
    for call in (lambda: repo.get_manifest("4.16.3"), lambda: repo.head_manifest("4.16.3"),
                 lambda: repo.has_blob("sha256:" + "b" * 64)):
        try:
            call()
        except ImageError as err:
            check_error(err, spec)


TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "registry-auth-file": (auth_file_bytes, auth_file_target),
    "registry-challenge": (challenge_text, challenge_target),
    "registry-error-body": (error_bodies, error_body_target),
    "registry-retry-after": (retry_after_text, retry_after_target),
    "registry-response": (responses, response_target),
}
