"""Fuzz targets of cvo.verify: name -> (hypothesis strategy, target), merged into fuzz_targets.TARGETS.

Each target feeds one reader of untrusted input and fails only when cvo does something other than
accept it or refuse it with its own one-line error: the signed JSON (``signature-json``), the OpenPGP
message a store serves (``signed-message``, through the real gpg), the release's verification ConfigMap
(``verifier-configmap``) and what a signature store answers (``store-response``: a real HTTP server on
127.0.0.1 answers each request with the generated status, headers and body; ConfigMap signatures too).
The GnuPG home, its key and the server are made once per process, at first use.
"""

from __future__ import annotations

import atexit
import base64
import http.server
import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

TARGETS: dict[str, tuple[st.SearchStrategy[Any], Any]] = {}

DIGEST = "sha256:" + "ab" * 32


def _one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


# --- signature JSON ------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=6) \
    | st.sampled_from([DIGEST, "atomic container signature", "quay.io/x:1"])
_keys = st.sampled_from(["critical", "optional", "type", "image", "identity", "docker-manifest-digest",
                         "docker-reference", "creator", "timestamp", "Critical", "x", ""])
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_keys, inner, max_size=4), max_leaves=16)


def _good_doc() -> dict[str, Any]:
    return {"critical": {"type": "atomic container signature", "image": {"docker-manifest-digest": DIGEST},
                         "identity": {"docker-reference": "quay.io/x:1"}},
            "optional": {"creator": "c", "timestamp": 1}}


@st.composite
def _mutated_doc(draw: st.DrawFn) -> bytes:
    """A good signature with one value replaced, added or removed somewhere, or raw edits of its text."""
    doc = _good_doc()
    paths = [(), ("critical",), ("critical", "image"), ("critical", "identity"), ("optional",)]
    target: Any = doc
    for part in draw(st.sampled_from(paths)):
        target = target[part]
    key = draw(_keys)
    if draw(st.booleans()):
        target[key] = draw(_json)
    else:
        target.pop(key, None)
    text = json.dumps(doc, allow_nan=True)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(['"a":1,', ",", "}", "{", '"critical":{}', "\\u0000", "NaN",
                                                 "1e400", " ", "\ud800"])) + text[at:]
    return text.encode("utf-8", "surrogatepass")


signature_json_bytes = st.one_of(_mutated_doc(), _json.map(lambda v: json.dumps(v, allow_nan=True).encode()),
                                 st.binary(max_size=64))


def signature_json_target(data: bytes) -> None:
    from cvo.verify.errors import SignatureInvalid
    from cvo.verify.signature import check_signature, parse_signature

    try:
        parsed = parse_signature(data)
    except SignatureInvalid as err:
        _one_line(str(err))
        return
    assert parsed.docker_reference and isinstance(parsed.digest, str)
    try:
        check_signature(data, DIGEST)
    except SignatureInvalid as err:
        assert str(err) == "signature digest does not match", err


TARGETS["signature-json"] = (signature_json_bytes, signature_json_target)


# --- signed messages (real gpg) -----------------------------------------------------------------

class _Gpg:
    """One throwaway GNUPGHOME with one key, its keyrings, and a good signed message, per process."""

    made: _Gpg | None = None

    def __init__(self) -> None:
        from cvo.verify.gpg import Keyrings
        from cvo.verify.signature import signature_json
        from tests.support.gpgkeys import gpg_sign, make_keys, stop_agent

        tmp = Path(tempfile.mkdtemp(prefix="cvo-fuzz-gpg-"))
        self.keys = make_keys(tmp / "gnupg")
        self.keyrings = Keyrings({"verifier-public-key-signer": self.keys.public("signer")})
        self.good = gpg_sign(self.keys, "signer", signature_json(DIGEST, "quay.io/x:1"))
        self.plain = gpg_sign(self.keys, "signer", signature_json(DIGEST, "quay.io/x:1"), "--compress-algo", "none")
        self.other = gpg_sign(self.keys, "signer", signature_json("sha256:" + "cd" * 32, "quay.io/x:1"))
        stop_agent(self.keys.home)   # no more signing: no agent left behind whatever way the process ends

        def clean() -> None:
            self.keyrings.close()
            stop_agent(self.keys.home)
            shutil.rmtree(tmp, ignore_errors=True)

        atexit.register(clean)

    @classmethod
    def get(cls) -> _Gpg:
        if cls.made is None:
            cls.made = _Gpg()
        return cls.made


@st.composite
def signed_messages(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, bytes]]]:
    """Which good message to start from and edits to make: (offset, bytes removed, bytes inserted)."""
    base = draw(st.sampled_from(["good", "plain", "empty"]))
    edits = draw(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 8), st.binary(max_size=8)), max_size=3))
    return base, edits


def edit(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    for at, cut, insert in edits:
        at = min(at, len(data))
        data = data[:at] + insert + data[at + cut:]
    return data


def signed_message_target(spec: tuple[str, list[tuple[int, int, bytes]]]) -> None:
    from cvo.verify.errors import SignatureInvalid
    from cvo.verify.signature import check_signature

    made = _Gpg.get()
    base, edits = spec
    data = edit({"good": made.good, "plain": made.plain, "empty": b""}[base], edits)
    try:
        signed = made.keyrings.verify(data)
        check_signature(signed.content, DIGEST)
    except SignatureInvalid as err:
        _one_line(str(err))
        return
    assert signed.fingerprint == made.keys.fingerprints["signer"]


TARGETS["signed-message"] = (signed_messages(), signed_message_target)


# --- the verification ConfigMap -----------------------------------------------------------------

_data_keys = st.sampled_from(["verifier-public-key-a", "verifier-public-key-b", "store-a", "store-b", "other", ""])
_store_urls = st.sampled_from(["file:///s", "https://h/s", "http://h:1/s", "ftp://h", "file://h/s", "", " ",
                               "http://[::1", "https://h:99999/", "file:relative", "http://h/a\nb", "\x00"])


@st.composite
def verifier_configmaps(draw: st.DrawFn) -> dict[str, Any]:
    data = draw(st.dictionaries(_data_keys, st.one_of(_store_urls, st.just("@KEY@"), st.text(max_size=20),
                                                      st.integers(), st.none()), max_size=4))
    cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": draw(st.one_of(st.just({"name": "v", "namespace": "ns"}), _json)),
                          "data": draw(st.one_of(st.just(data), _json))}
    return cm


def verifier_configmap_target(cm: dict[str, Any]) -> None:
    from cvo.verify.config import VerifierConfig, find_verifier_config
    from cvo.verify.errors import InvalidVerifierConfig

    if isinstance(cm.get("data"), dict):
        cm["data"] = {k: (_Gpg.get().keys.public("signer") if v == "@KEY@" else v) for k, v in cm["data"].items()}
    try:
        config = VerifierConfig.from_configmap(cm, "fuzz.yaml")
    except InvalidVerifierConfig as err:
        _one_line(str(err))
        return
    assert config.keyrings and config.stores
    meta = cm.get("metadata")
    cm["metadata"] = {**(meta if isinstance(meta, dict) else {}),
                      "annotations": {"release.openshift.io/verification-config-map": ""}}
    assert find_verifier_config([cm]) == config


TARGETS["verifier-configmap"] = (verifier_configmaps(), verifier_configmap_target)


# --- what a store answers ------------------------------------------------------------------------

class _Server:
    """A real HTTP server on 127.0.0.1 answering every GET with :attr:`response`."""

    made: _Server | None = None

    def __init__(self) -> None:
        self.response: tuple[int, list[tuple[str, str]], bytes] = (404, [], b"")
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = server.response
                self.send_response_only(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/sigs"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        atexit.register(self.httpd.shutdown)

    @classmethod
    def get(cls) -> _Server:
        if cls.made is None:
            cls.made = _Server()
        return cls.made


@st.composite
def store_responses(draw: st.DrawFn) -> dict[str, Any]:
    status = draw(st.sampled_from([200, 200, 200, 204, 301, 302, 400, 403, 404, 429, 500, 503]))
    body = draw(st.one_of(st.sampled_from([b"", b"@GOOD@", b"@OTHER@"]), st.binary(max_size=64)))
    headers = draw(st.lists(st.tuples(st.sampled_from(["Content-Length", "Location", "Content-Type", "X"]),
                                      st.sampled_from(["0", "5", "999999", "-1", "x", "file:///etc/passwd",
                                                       "ftp://h/x", "http://127.0.0.1:1/", "/sigs/other"])),
                            max_size=2))
    binary = draw(st.dictionaries(st.sampled_from([f"sha256-{'ab' * 32}-1", f"sha256-{'ab' * 32}-x", "other"]),
                                  st.one_of(st.sampled_from(["@GOOD@", "eA==", "!", ""]), st.integers()), max_size=2))
    return {"status": status, "headers": headers, "body": body, "binaryData": binary}


def store_response_target(spec: dict[str, Any]) -> None:
    from cvo.verify.config import VerifierConfig
    from cvo.verify.errors import VerificationFailed
    from cvo.verify.verifier import Verifier

    made, server = _Gpg.get(), _Server.get()
    body = spec["body"].replace(b"@GOOD@", made.good).replace(b"@OTHER@", made.other)
    server.response = (spec["status"], spec["headers"], body)
    binary = {k: (base64.b64encode(made.good).decode() if v == "@GOOD@" else v) for k, v in spec["binaryData"].items()}
    cms = [{"kind": "ConfigMap", "metadata": {"name": "s", "namespace": "openshift-config-managed",
                                              "labels": {"release.openshift.io/verification-signatures": ""}},
            "binaryData": binary}]
    config = VerifierConfig({"verifier-public-key-signer": made.keys.public("signer")}, (server.url,))
    with Verifier(config, signature_configmaps=cms, timeout=5) as verifier:
        try:
            verified = verifier.verify(DIGEST)
        except VerificationFailed as err:
            _one_line(str(err))
            return
    source = verified.signed_by["verifier-public-key-signer"].source
    assert made.good in (body, base64.b64decode(binary.get(source.rpartition(" key ")[2], "") or "")), source


TARGETS["store-response"] = (store_responses(), store_response_target)
