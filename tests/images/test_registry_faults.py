"""The registry client through the fault proxy (tests/support/faultproxy.py) in front of the real registry:
each fault is asked for with ``fail_next`` on the exact request, so it certainly happens; back-off runs on a
:class:`~tests.support.registry.StepClock`, so the waits are exact and cost no time."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cvo.images.errors import ImageError, Problem
from cvo.images.reference import parse_image
from cvo.images.registry import RegistryOptions, RegistryRepository, open_registry
from cvo.images.repository import Deadline, Descriptor
from tests.support.faultproxy import Fault, FaultPlan, FaultProxy
from tests.support.registry import BuiltImage, Registry, StepClock, skopeo, write_oci_layout


@pytest.fixture
def proxy(plain_registry: Registry) -> Iterator[FaultProxy]:
    with FaultProxy(plain_registry.url, plan=FaultPlan(rate=0.0), tls=False) as p:
        yield p


def repository_of(request: pytest.FixtureRequest) -> str:
    """A repository of the test's own (its node id, hashed into the reference grammar)."""
    return "faults/t" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]


@pytest.fixture
def image(plain_registry: Registry, tmp_path: Path, request: pytest.FixtureRequest) -> BuiltImage:
    built = write_oci_layout(tmp_path / "layout")
    repository = repository_of(request)
    skopeo("copy", f"oci:{built.layout}:{built.tag}", f"docker://{plain_registry.host}/{repository}:{built.tag}",
           "--dest-tls-verify=false")
    return built


def open_via(proxy: FaultProxy, request: pytest.FixtureRequest, clock: StepClock, seconds: float = 30.0,
             read_timeout: float = 30.0) -> RegistryRepository:
    return open_registry(parse_image(f"{proxy.host}/{repository_of(request)}:4.16.3"),
                         RegistryOptions(insecure=True, read_timeout=read_timeout),
                         Deadline(seconds, clock.monotonic, clock.sleep))


def manifest_path(repo: RegistryRepository, reference: str = "4.16.3") -> str:
    return f"/v2/{repo.ref.repository}/manifests/{reference}"


def blob_path(repo: RegistryRepository, digest: str) -> str:
    return f"/v2/{repo.ref.repository}/blobs/{digest}"


def read_blob(repo: RegistryRepository, image: BuiltImage, digest: str) -> bytes:
    with repo.open_blob(Descriptor("x", digest, len(image.blobs[digest]))) as reader:
        data = reader.read()
        reader.finish()
    return data


def error_of(call: Callable[[], object]) -> ImageError:
    with pytest.raises(ImageError) as info:
        call()
    assert "\n" not in str(info.value) and str(info.value).startswith(f"image {info.value.image}: ")
    return info.value


@pytest.mark.parametrize("fault", [Fault.INTERNAL, Fault.UNAVAILABLE, Fault.RESET])
def test_transient_failures_are_retried_with_back_off(fault: Fault, proxy: FaultProxy, image: BuiltImage,
                                                       request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    rule = proxy.fail_next("GET", manifest_path(repo), fault, count=3)
    assert repo.get_manifest("4.16.3").digest == image.manifest_digest
    assert rule.applied == 3
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_429_waits_as_long_as_retry_after_says(proxy: FaultProxy, image: BuiltImage,
                                               request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    proxy.plan = FaultPlan(rate=0.0, retry_after=3)
    proxy.fail_next("GET", manifest_path(repo), Fault.THROTTLE, count=2)
    assert repo.get_manifest("4.16.3").digest == image.manifest_digest
    assert clock.sleeps == [3.0, 3.0]  # Retry-After: 3 beats the back-off's 0.5 and 1


@pytest.mark.parametrize(("fault", "said"), [
    (Fault.INTERNAL, "500 Internal Server Error: UNKNOWN: unknown error"),
    (Fault.UNAVAILABLE, "503 Service Unavailable: UNAVAILABLE: service unavailable"),
    (Fault.THROTTLE, "429 Too Many Requests: TOOMANYREQUESTS: too many requests"),
    (Fault.RESET, "connection to {host} failed: connection reset"),
])
def test_a_failure_that_lasts_ends_within_the_timeout(fault: Fault, said: str, proxy: FaultProxy,
                                                      image: BuiltImage, request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock, seconds=10)
    proxy.fail_next("GET", manifest_path(repo), fault, count=1000)
    err = error_of(lambda: repo.get_manifest("4.16.3"))
    assert err.problem is Problem.TRANSIENT
    # the proxy says Retry-After: 1 to a 429: the first wait is 1 s, not 0.5
    assert clock.sleeps == ([1.0, 1.0, 2.0, 4.0] if fault is Fault.THROTTLE else [0.5, 1.0, 2.0, 4.0])
    assert str(err) == (f"image {repo.image}: reading manifest 4.16.3: {said.format(host=proxy.host)} "
                        "(gave up after 5 attempts within the timeout of 10 s)")


def test_403_is_not_retried(proxy: FaultProxy, image: BuiltImage, request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    proxy.fail_next("GET", manifest_path(repo), Fault.FORBIDDEN)
    err = error_of(lambda: repo.get_manifest("4.16.3"))
    assert err.problem is Problem.UNAUTHORIZED and clock.sleeps == []
    assert str(err) == (f"image {repo.image}: reading manifest 4.16.3: the registry {proxy.host} denied access "
                        "(403: DENIED: requested access to the resource is denied)")


@pytest.mark.parametrize("fault", [Fault.TRUNCATE, Fault.RESET, Fault.INTERNAL])
def test_a_blob_cut_short_is_resumed_where_it_stopped(fault: Fault, proxy: FaultProxy, image: BuiltImage,
                                                      request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    layer = image.layer_digests[-1]
    proxy.fail_next("GET", blob_path(repo, layer), fault)
    assert read_blob(repo, image, layer) == image.blobs[layer]
    assert clock.sleeps == [0.5]
    gets = [r for r in proxy.records if r.method == "GET" and r.path == blob_path(repo, layer)]
    assert [r.fault for r in gets] == [fault.value, None]


def test_a_stalled_blob_is_abandoned_after_the_read_timeout_and_resumed(proxy: FaultProxy, image: BuiltImage,
                                                                        request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock, read_timeout=0.5)
    layer = image.layer_digests[-1]
    proxy.fail_next("GET", blob_path(repo, layer), Fault.STALL_BODY)
    assert read_blob(repo, image, layer) == image.blobs[layer]
    assert clock.sleeps == [0.5]


def test_a_registry_that_never_answers_is_given_up_within_the_timeout(proxy: FaultProxy, image: BuiltImage,
                                                                      request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock, seconds=3, read_timeout=0.3)
    proxy.fail_next("GET", manifest_path(repo), Fault.STALL, count=1000)
    err = error_of(lambda: repo.get_manifest("4.16.3"))
    assert err.problem is Problem.TRANSIENT
    assert clock.sleeps == [0.5, 1.0]
    assert str(err) == (f"image {repo.image}: reading manifest 4.16.3: no answer from {proxy.host} within 0.3 s "
                        "(gave up after 3 attempts within the timeout of 3 s)")


def test_a_truncated_manifest_is_retried(proxy: FaultProxy, image: BuiltImage,
                                         request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    proxy.fail_next("GET", manifest_path(repo), Fault.TRUNCATE)
    assert repo.get_manifest("4.16.3").digest == image.manifest_digest
    assert clock.sleeps == [0.5]


def test_an_upload_that_fails_half_way_starts_again(proxy: FaultProxy, image: BuiltImage,
                                                    request: pytest.FixtureRequest, tmp_path: Path) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    data = b"a blob pushed through the fault proxy\n" * 1000
    path = tmp_path / "blob"
    path.write_bytes(data)
    from tests.support.registry import sha256

    digest = sha256(data)
    uploads = f"/v2/{repo.ref.repository}/blobs/uploads/"
    proxy.fail_next("POST", uploads, Fault.UNAVAILABLE)
    repo.put_blob(path, Descriptor("application/octet-stream", digest, len(data)))
    puts = [r for r in proxy.records if r.method == "PUT" and r.path.startswith(uploads)]
    assert len(puts) == 1, "the upload's Location led back through the proxy"
    assert clock.sleeps == [0.5]
    assert repo.has_blob(digest)
    with repo.open_blob(Descriptor("x", digest, len(data))) as reader:
        assert reader.read() == data
        reader.finish()


def test_a_blob_still_streaming_when_the_timeout_runs_out_is_abandoned(proxy: FaultProxy, image: BuiltImage,
                                                                       request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock, seconds=10)
    layer = image.layer_digests[-1]
    with repo.open_blob(Descriptor("x", layer, len(image.blobs[layer]))) as reader:
        assert reader.read(100) == image.blobs[layer][:100]
        clock.now = 10.0  # the command's time is up while the layer streams
        err = error_of(lambda: reader.read(100))
    assert err.problem is Problem.TRANSIENT
    assert str(err) == (f"image {repo.image}: reading blob {layer}: the timeout of 10 s ran out after 100 of "
                        f"{len(image.blobs[layer])} bytes")


def test_head_is_retried_and_keeps_the_size(proxy: FaultProxy, image: BuiltImage,
                                            request: pytest.FixtureRequest) -> None:
    clock = StepClock()
    repo = open_via(proxy, request, clock)
    proxy.fail_next("HEAD", manifest_path(repo), Fault.UNAVAILABLE)
    assert repo.head_manifest("4.16.3") == Descriptor(image.media_type, image.manifest_digest, len(image.manifest))
    assert clock.sleeps == [0.5]
    assert [r.method for r in proxy.records if r.path == manifest_path(repo)] == ["HEAD", "HEAD"]  # no GET needed


def test_a_transport_errors_reason_never_carries_what_was_being_handled() -> None:
    """Found by make fuzz: a connection failure's ``__context__`` (an error built from an earlier answer's body,
    which echoed a credential) went into the message."""
    from cvo.images.registry import _reason

    try:
        try:
            raise ValueError('{"errors":[{"detail":"dXNlcjpmdXp6LXNlY3JldC1wdw=="}]}')
        except ValueError:
            raise ConnectionAbortedError("connection aborted") from None
    except OSError as err:
        assert _reason(err) == "connection aborted"
