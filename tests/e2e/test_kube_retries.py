"""KubeCluster's retry and error-class rules, against a scripted HTTP server (no control plane needed).

A real API server does not answer 429 or 500 on demand; this one does.  It speaks just enough of
the API: discovery (aggregated, or legacy when asked to) and whatever each test scripts per path.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from cvo.cluster.api import ApiError, ApiErrorKind, Ref
from cvo.cluster.intercept import guarding_writes
from cvo.cluster.kube import KubeCluster, RetryPolicy
from cvo.runner.reasons import wrap_apply_error

TOKEN = "secret-token-0123456789"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}, "data": {}}
CM_PATH = "/api/v1/namespaces/ns/configmaps"
AGGREGATED_CORE = {
    "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
    "items": [{"metadata": {}, "versions": [{"version": "v1", "resources": [
        {"resource": "configmaps", "responseKind": {"kind": "ConfigMap"}, "scope": "Namespaced"},
        {"resource": "namespaces", "responseKind": {"kind": "Namespace"}, "scope": "Cluster",
         "subresources": [{"subresource": "status"}]}]}]}],
}
AGGREGATED_GROUPS = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": []}


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message, **({"details": details} if details else {})}


class FakeServer:
    def __init__(self) -> None:
        self.script: dict[tuple[str, str], deque[tuple[int, dict[str, str], Any]]] = defaultdict(deque)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.legacy = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                path = self.path.split("?")[0]
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                server.requests.append((self.command, path, dict(self.headers)))
                code, headers, payload = server.answer(self.command, path, body)
                data = json.dumps(payload).encode()
                self.send_response(code)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def answer(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        queue = self.script.get((method, path))
        if queue:
            return queue.popleft()
        if path == "/version":
            return 200, {}, {"major": "1", "minor": "37", "gitVersion": "v1.37.2"}
        if path == "/api":
            return 200, {}, {"kind": "APIVersions", "versions": ["v1"]} if self.legacy else AGGREGATED_CORE
        if path == "/apis":
            return 200, {}, {"kind": "APIGroupList", "groups": []} if self.legacy else AGGREGATED_GROUPS
        if path == "/api/v1":
            return 200, {}, {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "configmaps", "namespaced": True, "kind": "ConfigMap"}]}
        if method in ("POST", "PUT") and body is not None:
            return (201 if method == "POST" else 200), {}, {**body, "metadata": {**body["metadata"], "resourceVersion": "7"}}
        return 404, {}, status(404, "NotFound", f"{path} not found")

    def then(self, method: str, path: str, *answers: tuple[int, dict[str, str], Any]) -> None:
        self.script[(method, path)].extend(answers)

    def count(self, method: str, path: str) -> int:
        return sum(1 for m, p, _ in self.requests if (m, p) == (method, path))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


def kube(fake: FakeServer, **options: Any) -> KubeCluster:
    config = client.Configuration(host=fake.url)
    config.api_key = {"BearerToken": f"Bearer {TOKEN}"}
    options.setdefault("retry", RetryPolicy(attempts=4, initial=0.01, cap=0.02))
    return KubeCluster(config, **options)


def run(fake: FakeServer, test: Any, **options: Any) -> Any:
    async def main() -> Any:
        cluster = kube(fake, **options)
        try:
            return await test(cluster)
        finally:
            await cluster.close()

    return asyncio.run(main())


@pytest.mark.parametrize(("code", "reason", "kind"), [
    (429, "TooManyRequests", ApiErrorKind.SERVER_TIMEOUT),
    (500, "InternalError", ApiErrorKind.INTERNAL),
    (500, "ServerTimeout", ApiErrorKind.SERVER_TIMEOUT),
    (503, "ServiceUnavailable", ApiErrorKind.TIMEOUT),
    (504, "Timeout", ApiErrorKind.TIMEOUT),
    (502, "", ApiErrorKind.TIMEOUT),
])
def test_transient_errors_are_retried_then_succeed(fake: FakeServer, code: int, reason: str,
                                                   kind: ApiErrorKind) -> None:
    fake.then("POST", CM_PATH, (code, {}, status(code, reason, "busy")), (code, {}, status(code, reason, "busy")))

    async def test(cluster: KubeCluster) -> None:
        created = await cluster.create(dict(CM))
        assert created["metadata"]["resourceVersion"] == "7"
        assert cluster.stats.retries == 2

    run(fake, test)
    assert fake.count("POST", CM_PATH) == 3


@pytest.mark.parametrize(("code", "reason", "kind", "cvo_reason"), [
    (429, "TooManyRequests", ApiErrorKind.SERVER_TIMEOUT, "UpdatePayloadClusterOverloaded"),
    (500, "InternalError", ApiErrorKind.INTERNAL, "UpdatePayloadClusterError"),
    (503, "ServiceUnavailable", ApiErrorKind.TIMEOUT, "UpdatePayloadClusterDown"),
])
def test_a_transient_error_that_persists_is_raised_after_the_attempts(fake: FakeServer, code: int, reason: str,
                                                                     kind: ApiErrorKind, cvo_reason: str) -> None:
    fake.then("POST", CM_PATH, *[(code, {}, status(code, reason, "still busy"))] * 10)

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.create(dict(CM))
        assert err.value.kind is kind and str(err.value) == "still busy"
        assert err.value.ref == Ref("", "ConfigMap", "ns", "cm")
        assert wrap_apply_error(err.value, "t").reason == cvo_reason

    run(fake, test)
    assert fake.count("POST", CM_PATH) == 4


@pytest.mark.parametrize(("code", "reason", "kind"), [
    (400, "BadRequest", ApiErrorKind.OTHER),
    (401, "Unauthorized", ApiErrorKind.UNAUTHORIZED),
    (403, "Forbidden", ApiErrorKind.FORBIDDEN),
    (404, "NotFound", ApiErrorKind.NOT_FOUND),
    (409, "Conflict", ApiErrorKind.CONFLICT),
    (409, "AlreadyExists", ApiErrorKind.ALREADY_EXISTS),
    (422, "Invalid", ApiErrorKind.INVALID),
    (405, "MethodNotAllowed", ApiErrorKind.OTHER),
    (422, "", ApiErrorKind.INVALID),
    (409, "", ApiErrorKind.CONFLICT),
])
def test_client_errors_are_never_retried(fake: FakeServer, code: int, reason: str, kind: ApiErrorKind) -> None:
    fake.then("PUT", CM_PATH + "/cm", (code, {}, status(code, reason, f"no: {code}")))

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.update(dict(CM))
        assert err.value.kind is kind
        assert cluster.stats.retries == 0

    run(fake, test)
    assert fake.count("PUT", CM_PATH + "/cm") == 1


def test_retry_after_is_honoured_and_capped(fake: FakeServer) -> None:
    fake.then("POST", CM_PATH, (429, {"Retry-After": "1"}, status(429, "TooManyRequests", "slow down")),
              (500, {}, status(500, "ServerTimeout", "later", retryAfterSeconds=30)))

    async def test(cluster: KubeCluster) -> float:
        started = time.monotonic()
        await cluster.create(dict(CM))
        return time.monotonic() - started

    elapsed = run(fake, test, retry=RetryPolicy(attempts=4, initial=0.01, cap=0.02, retry_after_cap=1.0))
    assert 1.9 <= elapsed < 10  # 1 s (Retry-After), then 1 s (retryAfterSeconds 30, capped; uncapped: 31 s)


def test_a_body_without_a_status_still_names_the_request(fake: FakeServer) -> None:
    fake.then("GET", CM_PATH + "/cm", (418, {}, "teapot"))

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.get(Ref("", "ConfigMap", "ns", "cm"))
        assert err.value.kind is ApiErrorKind.OTHER
        assert str(err.value).startswith("get ConfigMap ns/cm: HTTP 418")

    run(fake, test)


def test_credentials_are_sent_but_never_in_messages(fake: FakeServer) -> None:
    fake.then("POST", CM_PATH, *[(503, {}, "")] * 10)

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.create(dict(CM))
        assert TOKEN not in str(err.value) and TOKEN not in repr(err.value)

    run(fake, test)
    headers = {k.lower(): v for k, v in fake.requests[-1][2].items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["user-agent"].startswith("cvo/")


def test_legacy_discovery_when_the_server_has_no_aggregated_one(fake: FakeServer) -> None:
    fake.legacy = True

    async def test(cluster: KubeCluster) -> None:
        assert await cluster.serves("v1", "ConfigMap")
        assert not await cluster.serves("v1", "Pod")
        assert (await cluster.create(dict(CM)))["metadata"]["resourceVersion"] == "7"

    run(fake, test)
    assert fake.count("GET", "/api/v1") >= 1


def test_discovery_misses_are_remembered_briefly(fake: FakeServer) -> None:
    async def test(cluster: KubeCluster) -> None:
        for _ in range(20):
            assert not await cluster.serves("route.openshift.io/v1", "Route")
        await asyncio.gather(*(cluster.serves("route.openshift.io/v1", "Route") for _ in range(20)))

    run(fake, test)
    assert fake.count("GET", "/apis/route.openshift.io/v1") == 1


def test_an_unreachable_server_is_cluster_down(fake: FakeServer) -> None:
    fake.close()

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.create(dict(CM))
        assert err.value.kind is ApiErrorKind.TIMEOUT
        assert "unreachable (connection refused)" in str(err.value)
        assert cluster.stats.retries == 3

    run(fake, test)


def test_a_cluster_without_cvos_crds_says_to_bootstrap(fake: FakeServer, tmp_path: Any, make_release: Any,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.cli.main import main as cvo_main
    from tests.support.helpers import obj

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    release = make_release({"0000_50_e2e_00_config.yaml": obj("ConfigMap", "cm", "ns")})
    assert cvo_main(["install", str(release), "--kubeconfig", str(kubeconfig)]) == 2
    err = capsys.readouterr().err
    assert 'no matches for kind "ClusterVersion" in version "config.openshift.io/v1"' in err
    assert "run 'cvo bootstrap' with the same --kubeconfig/--context first" in err
    assert TOKEN not in err


# --- writes whose answer was lost -----------------------------------------------------------------------------


def test_a_retried_create_that_meets_its_own_landed_write_returns_the_object(fake: FakeServer) -> None:
    live = {**CM, "metadata": {**CM["metadata"], "resourceVersion": "9", "uid": "u1"}}
    fake.then("POST", CM_PATH, (504, {}, status(504, "Timeout", "the answer was lost")),
              (409, {}, status(409, "AlreadyExists", 'configmaps "cm" already exists')))
    fake.then("GET", CM_PATH + "/cm", (200, {}, live))

    async def test(cluster: KubeCluster) -> None:
        created = await cluster.create(dict(CM))
        assert created["metadata"]["uid"] == "u1" and cluster.stats.landed == 1

    run(fake, test)


def test_a_retried_update_that_meets_a_different_object_is_still_a_conflict(fake: FakeServer) -> None:
    sent = {**CM, "metadata": {**CM["metadata"], "resourceVersion": "7"}, "data": {"k": "mine"}}
    theirs = {**CM, "metadata": {**CM["metadata"], "resourceVersion": "8"}, "data": {"k": "theirs"}}
    fake.then("PUT", CM_PATH + "/cm", (503, {}, status(503, "ServiceUnavailable", "restarting")),
              (409, {}, status(409, "Conflict", "the object has been modified")))
    fake.then("GET", CM_PATH + "/cm", (200, {}, theirs))

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError) as err:
            await cluster.update(sent)
        assert err.value.kind is ApiErrorKind.CONFLICT and cluster.stats.landed == 0

    run(fake, test)
    assert fake.count("GET", CM_PATH + "/cm") == 1


def test_a_conflict_without_an_earlier_failure_is_not_questioned(fake: FakeServer) -> None:
    fake.then("PUT", CM_PATH + "/cm", (409, {}, status(409, "Conflict", "the object has been modified")))

    async def test(cluster: KubeCluster) -> None:
        with pytest.raises(ApiError):
            await cluster.update(dict(CM))

    run(fake, test)
    assert fake.count("GET", CM_PATH + "/cm") == 0


# --- the write guard, and the CRD nudge as an explicit write ----------------------------------------------------


class Stale(Exception):
    """What a fence's guard raises (the controller's LeaseLost)."""


def test_the_write_guard_is_asked_before_every_try_of_a_retried_write(fake: FakeServer) -> None:
    """A write that fails transiently is tried again by the backend; the guard in force (a leader's fence) is
    asked before each try, and a refusal ends the write there: no further request reaches the server."""
    fake.then("POST", CM_PATH, *[(503, {}, status(503, "ServiceUnavailable", "down"))] * 5)

    def guard() -> None:
        if fake.count("POST", CM_PATH) >= 2:  # the lease went stale after the second try
            raise Stale("the lease is stale")

    async def test(cluster: KubeCluster) -> None:
        with guarding_writes(guard), pytest.raises(Stale):
            await cluster.create(dict(CM))
        await cluster.create(dict(CM))  # no guard outside the block: sent (and retried) as ever

    run(fake, test)
    assert fake.count("POST", CM_PATH) == 2 + 4  # two guarded tries; then the last 3 scripted 503s and a 201


def unestablished_crd(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "resourceVersion": "5", **(
                {"annotations": annotations} if annotations else {})},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": True, "storage": True}]},
            "status": {"conditions": [{"type": "NamesAccepted", "status": "True"},
                                      {"type": "Established", "status": "False"}]}}


def test_serves_only_reads_and_establish_nudges_once_the_crd_stalled(fake: FakeServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from cvo.cluster.kube import cluster as kube_cluster

    monkeypatch.setattr(kube_cluster, "CRD_STALL", 0.2)
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
    fake.then("GET", crd_path, (200, {}, unestablished_crd()),
              (200, {}, unestablished_crd({kube_cluster.NUDGE_ANNOTATION: "nudged"})))

    async def test(cluster: KubeCluster) -> list[bool]:
        for _ in range(3):
            assert not await cluster.serves("example.com/v1", "Widget")
            await asyncio.sleep(0.1)
        writes = [m for m, _, _ in fake.requests if m in ("PUT", "POST", "DELETE")]
        assert writes == []  # a read path sends no write
        assert not await cluster.establish("widgets.example.com")  # a CRD it never saw: not even a read
        cluster.observe(unestablished_crd())  # as a watch of the CRDs delivers it
        nudged = [await cluster.establish("widgets.example.com")]  # the stall starts now
        await asyncio.sleep(0.3)
        nudged.append(await cluster.establish("widgets.example.com"))
        nudged.append(await cluster.establish("widgets.example.com"))  # looked at again only after the stall
        assert cluster.stats.nudged == 1
        return nudged

    assert run(fake, test) == [False, True, False]
    assert fake.count("PUT", crd_path) == 2  # the annotation set, then removed
    assert fake.count("GET", crd_path) == 2


def test_a_tls_connection_cut_mid_way_is_transient_an_untrusted_certificate_is_not() -> None:
    import ssl

    import urllib3

    from cvo.cluster.kube import errors

    cut = urllib3.exceptions.SSLError(ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))
    assert errors.from_exception(cut, None, "get x", "https://h").kind is ApiErrorKind.TIMEOUT
    untrusted = urllib3.exceptions.SSLError(ssl.SSLCertVerificationError(1, "certificate verify failed"))
    err = errors.from_exception(untrusted, None, "get x", "https://h")
    assert err.kind is ApiErrorKind.OTHER and "TLS failure" in str(err)
