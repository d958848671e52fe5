"""The registry client against a real registry, with skopeo as the independent client both ways:
skopeo pushes and cvo reads; cvo pushes and skopeo reads (plain HTTP, TLS from the test's CA, basic auth,
Bearer tokens; OCI and Docker schema 2)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cvo.images.errors import ImageError, Problem
from cvo.images.manifest import ImageManifest, parse_manifest
from cvo.images.reference import parse_image
from cvo.images.registry import RegistryOptions, RegistryRepository, open_registry
from cvo.images.repository import Deadline, Descriptor, RawManifest
from tests.support.registry import BuiltImage, Registry, blob_file, skopeo, write_oci_layout

USER, PASSWORD = "alice", "s3cret-pass"  # tests/images/conftest.py USERS


def auth_file(tmp_path: Path, key: str, user: str = USER, password: str = PASSWORD) -> Path:
    path = tmp_path / "auth.json"
    path.write_text(json.dumps({"auths": {key: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}}}))
    return path


def push_with_skopeo(registry: Registry, layout: BuiltImage, repository: str, *extra: str) -> str:
    creds = ["--dest-creds", f"{USER}:{PASSWORD}"] if registry.users else []
    target = f"{registry.host}/{repository}:{layout.tag}"
    skopeo("copy", f"oci:{layout.layout}:{layout.tag}", f"docker://{target}", "--dest-tls-verify=false", *creds,
           *extra)
    return target


def options_for(registry: Registry, tmp_path: Path, **kw: object) -> RegistryOptions:
    config = auth_file(tmp_path, registry.host) if registry.users else None
    return RegistryOptions(registry_config=config, ca_file=registry.ca_path if registry.tls else None,
                           insecure=not registry.tls, **kw)  # type: ignore[arg-type]


def read_all(repo: RegistryRepository, reference: str) -> tuple[ImageManifest, dict[str, bytes]]:
    raw = repo.get_manifest(reference)
    manifest = parse_manifest(repo.image, raw)
    assert isinstance(manifest, ImageManifest)
    blobs = {}
    for desc in (manifest.config, *manifest.layers):
        with repo.open_blob(desc) as reader:
            blobs[desc.digest] = reader.read()
            reader.finish()
    return manifest, blobs


@pytest.mark.parametrize("mode", ["plain", "tls", "basic", "token"])
def test_cvo_reads_what_skopeo_pushed(mode: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    registry: Registry = request.getfixturevalue(f"{mode}_registry")
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(registry, built, f"pull/{mode}")
    repo = open_registry(parse_image(spec), options_for(registry, tmp_path), Deadline(60))
    manifest, blobs = read_all(repo, "4.16.3")
    assert manifest.digest == built.manifest_digest
    assert blobs == {d: built.blobs[d] for d in (built.config_digest, *built.layer_digests)}
    # by digest, and HEAD gives the same descriptor without the body
    assert repo.get_manifest(built.manifest_digest).data == built.manifest
    assert repo.head_manifest("4.16.3") == Descriptor(built.media_type, built.manifest_digest, len(built.manifest))
    assert repo.has_blob(built.config_digest)
    assert not repo.has_blob("sha256:" + "0" * 64)


def test_docker_schema2_as_skopeo_converts_it(plain_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(plain_registry, built, "pull/docker", "--format", "v2s2")
    repo = open_registry(parse_image(spec), RegistryOptions(insecure=True), Deadline(60))
    raw = repo.get_manifest("4.16.3")
    assert raw.media_type == "application/vnd.docker.distribution.manifest.v2+json"
    served = skopeo("inspect", "--raw", "--tls-verify=false", f"docker://{spec}").stdout.encode()
    assert raw.digest == "sha256:" + hashlib.sha256(served).hexdigest()
    manifest, blobs = read_all(repo, raw.digest)
    assert blobs[manifest.layers[-1].digest] == built.blobs[built.layer_digests[-1]]


@pytest.mark.parametrize("mode", ["plain", "basic", "token"])
def test_skopeo_reads_what_cvo_pushed(mode: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    registry: Registry = request.getfixturevalue(f"{mode}_registry")
    built = write_oci_layout(tmp_path / "layout")
    spec = f"{registry.host}/push/{mode}:v1"
    repo = open_registry(parse_image(spec), options_for(registry, tmp_path), Deadline(60))
    raw = repo_manifest(built)
    for digest in (built.config_digest, *built.layer_digests):
        repo.put_blob(built.layout / "blobs/sha256" / digest[7:], Descriptor("x", digest, len(built.blobs[digest])))
    repo.put_manifest("v1", raw)
    creds = ["--creds", f"{USER}:{PASSWORD}"] if registry.users else []
    served = skopeo("inspect", "--raw", "--tls-verify=false", *creds, f"docker://{spec}").stdout.encode()
    assert served == built.manifest
    copy = tmp_path / "copy"
    skopeo("copy", "--src-tls-verify=false", *(["--src-creds", f"{USER}:{PASSWORD}"] if creds else []),
           f"docker://{spec}", f"oci:{copy}:v1")
    for digest in (built.config_digest, *built.layer_digests):  # skopeo checked every digest while copying
        assert (copy / "blobs/sha256" / digest[7:]).read_bytes() == built.blobs[digest]


def repo_manifest(built: BuiltImage) -> RawManifest:
    return RawManifest(built.manifest, built.media_type, built.manifest_digest)


def test_a_big_blob_goes_up_in_chunks_and_a_pushed_blob_is_not_sent_again(plain_registry: Registry,
                                                                          tmp_path: Path) -> None:
    data = bytes(range(256)) * 4099  # 1 MiB and a bit: 5 chunks of 256 KiB
    path = tmp_path / "blob"
    path.write_bytes(data)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    repo = open_registry(parse_image(f"{plain_registry.host}/push/chunks:v1"), RegistryOptions(insecure=True),
                         Deadline(60))
    repo.monolithic_max, repo.chunk_size = 1 << 18, 1 << 18
    repo.put_blob(path, Descriptor("application/octet-stream", digest, len(data)))
    assert blob_file(plain_registry, digest).read_bytes() == data
    before = blob_file(plain_registry, digest).stat().st_mtime_ns
    repo.put_blob(path, Descriptor("application/octet-stream", digest, len(data)))  # HEAD says it is there
    assert blob_file(plain_registry, digest).stat().st_mtime_ns == before
    with repo.open_blob(Descriptor("x", digest, len(data))) as reader:
        assert reader.read() == data
        reader.finish()


# --- what goes wrong, each an ImageError naming the image and the problem ------------------------------------

def error_of(call: Callable[[], object]) -> ImageError:
    with pytest.raises(ImageError) as info:
        call()
    err = info.value
    assert str(err).startswith(f"image {err.image}: ")
    assert "\n" not in str(err)
    return err


def test_missing_manifest_repository_and_blob_are_not_found(plain_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(plain_registry, built, "errors/notfound")
    repo = open_registry(parse_image(spec), RegistryOptions(insecure=True), Deadline(30))
    err = error_of(lambda: repo.get_manifest("4.99.0"))
    assert err.problem is Problem.NOT_FOUND
    assert str(err) == (f"image {spec}: reading manifest 4.99.0: not found (404: MANIFEST_UNKNOWN: "
                        "manifest unknown)")
    other = open_registry(parse_image(f"{plain_registry.host}/no/such:1"), RegistryOptions(insecure=True),
                          Deadline(30))
    err = error_of(lambda: other.get_manifest("1"))
    assert err.problem is Problem.NOT_FOUND and str(err).endswith("not found (404: MANIFEST_UNKNOWN: manifest unknown)")
    missing = Descriptor("application/octet-stream", "sha256:" + "1" * 64, 3)
    err = error_of(lambda: repo.open_blob(missing).__enter__())
    assert err.problem is Problem.NOT_FOUND and "BLOB_UNKNOWN" in str(err) and missing.digest in str(err)


def test_content_that_does_not_match_its_digest_is_refused(plain_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(plain_registry, built, "errors/tampered")
    layer = built.layer_digests[-1]
    stored = blob_file(plain_registry, layer)
    stored.write_bytes(bytes(len(built.blobs[layer])))  # same size, other bytes, in the registry's own storage
    repo = open_registry(parse_image(spec), RegistryOptions(insecure=True), Deadline(30))
    with repo.open_blob(Descriptor("x", layer, len(built.blobs[layer]))) as reader:
        reader.read()
        err = error_of(reader.finish)
    assert err.problem is Problem.REFUSED and f"blob {layer} does not match its content" in str(err)
    blob_file(plain_registry, built.manifest_digest).write_bytes(built.manifest + b" ")
    err = error_of(lambda: repo.get_manifest("4.16.3"))  # the tag's digest is the registry's, the bytes are not
    assert err.problem is Problem.REFUSED and f"the registry says its digest is {built.manifest_digest}" in str(err)
    err = error_of(lambda: repo.get_manifest(built.manifest_digest))
    assert err.problem is Problem.REFUSED and "does not match its content" in str(err)


def test_basic_auth_without_or_with_wrong_credentials(basic_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(basic_registry, built, "errors/auth")
    anonymous = RegistryOptions(registry_config=tmp_path / "none.json", ca_file=basic_registry.ca_path)
    err = error_of(lambda: open_registry(parse_image(spec), anonymous, Deadline(30)).get_manifest("4.16.3"))
    assert err.problem is Problem.UNAUTHORIZED
    assert "requires authentication (401: UNAUTHORIZED: authentication required) and no credentials for " \
           f"{basic_registry.host} were found" in str(err)
    wrong = auth_file(tmp_path, basic_registry.host, password="not-the-password")
    options = RegistryOptions(registry_config=wrong, ca_file=basic_registry.ca_path)
    repo = open_registry(parse_image(spec), options, Deadline(30))
    err = error_of(lambda: repo.get_manifest("4.16.3"))
    assert err.problem is Problem.UNAUTHORIZED
    assert f"refused the credentials from {wrong} ({basic_registry.host})" in str(err)
    assert "not-the-password" not in str(err) + repr(repo) + repr(repo.credentials) + repr(options)


def test_token_auth_anonymous_pull_and_push_without_rights(token_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(token_registry, built, "errors/token")
    anonymous = RegistryOptions(registry_config=tmp_path / "none.json", ca_file=token_registry.ca_path)
    repo = open_registry(parse_image(spec), anonymous, Deadline(30))
    assert repo.get_manifest("4.16.3").digest == built.manifest_digest  # the token server lets anyone pull
    assert token_registry.token_server is not None
    asked = token_registry.token_server.requests[-1]
    assert (asked.account, asked.scopes) == (None, ["repository:errors/token:pull"])
    err = error_of(lambda: repo.put_manifest("v2", repo_manifest(built)))
    assert err.problem is Problem.UNAUTHORIZED and "no credentials for" in str(err)
    wrong = RegistryOptions(registry_config=auth_file(tmp_path, token_registry.host, password="nope"),
                            ca_file=token_registry.ca_path)
    err = error_of(lambda: open_registry(parse_image(spec), wrong, Deadline(30)).get_manifest("4.16.3"))
    assert err.problem is Problem.UNAUTHORIZED and "the token server" in str(err) and "nope" not in str(err)


def test_tls_is_verified_and_plain_http_needs_insecure(tls_registry: Registry, plain_registry: Registry,
                                                       tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(tls_registry, built, "errors/tls")
    err = error_of(lambda: open_registry(parse_image(spec), RegistryOptions(), Deadline(30)).get_manifest("4.16.3"))
    assert err.problem is Problem.UNAVAILABLE
    assert "certificate verify failed" in str(err) and "--registry-ca" in str(err)
    insecure = open_registry(parse_image(spec), RegistryOptions(insecure=True), Deadline(30))
    assert insecure.get_manifest("4.16.3").digest == built.manifest_digest  # unverified TLS, still https
    plain = f"{plain_registry.host}/errors/tls:4.16.3"
    err = error_of(lambda: open_registry(parse_image(plain), RegistryOptions(), Deadline(30)).get_manifest("x"))
    assert err.problem is Problem.UNAVAILABLE and "needs --insecure-registry" in str(err)
    bad_ca = tmp_path / "ca.pem"
    bad_ca.write_text("not a certificate")
    err = error_of(lambda: open_registry(parse_image(spec), RegistryOptions(ca_file=bad_ca), Deadline(30)))
    assert err.problem is Problem.INVALID and f"--registry-ca {bad_ca}" in str(err)


def test_nothing_listening_is_unavailable_at_once(tmp_path: Path) -> None:
    from tests.support.registry import StepClock, free_port

    clock = StepClock()
    spec = f"127.0.0.1:{free_port()}/a/b:1"
    repo = open_registry(parse_image(spec), RegistryOptions(insecure=True), Deadline(30, clock.monotonic, clock.sleep))
    err = error_of(lambda: repo.get_manifest("1"))
    assert err.problem is Problem.UNAVAILABLE and "connection refused" in str(err)
    assert clock.sleeps == []


def test_memory_stays_flat_whatever_the_blob_size(plain_registry: Registry, tmp_path: Path) -> None:
    import os
    import tracemalloc

    size = 24 << 20
    path = tmp_path / "big"
    digest_of = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            chunk = os.urandom(1 << 20)
            digest_of.update(chunk)
            f.write(chunk)
    descriptor = Descriptor("application/octet-stream", "sha256:" + digest_of.hexdigest(), size)
    repo = open_registry(parse_image(f"{plain_registry.host}/memory/big:v1"), RegistryOptions(insecure=True),
                         Deadline(120))
    tracemalloc.start()
    try:
        repo.put_blob(path, descriptor)
        _, pushed_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with repo.open_blob(descriptor) as reader:
            while reader.read(1 << 20):
                pass
            reader.finish()
        _, pulled_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert blob_file(plain_registry, descriptor.digest).stat().st_size == size
    assert pushed_peak < 4 << 20 and pulled_peak < 4 << 20, (pushed_peak, pulled_peak)  # a 24 MiB blob


def test_credentials_stay_out_of_the_logs(basic_registry: Registry, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from cvo.log import configure

    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(basic_registry, built, "logs/basic")
    configure("json", 2)  # debug lines too
    try:
        capsys.readouterr()
        repo = open_registry(parse_image(spec), options_for(basic_registry, tmp_path), Deadline(30))
        read_all(repo, "4.16.3")
        err = capsys.readouterr().err
    finally:
        configure("text", 0)
    assert "registry credentials found" in err  # the debug line naming where they came from was written
    assert PASSWORD not in err and base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() not in err


def test_the_pull_secret_answers_for_the_cluster(basic_registry: Registry, tmp_path: Path) -> None:
    built = write_oci_layout(tmp_path / "layout")
    spec = push_with_skopeo(basic_registry, built, "pull/secret")
    secret = {"auths": {basic_registry.host: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
                                              "email": "ignored@example.com"}}}
    options = RegistryOptions(registry_config=tmp_path / "none.json", ca_file=basic_registry.ca_path,
                              pull_secret=secret)
    repo = open_registry(parse_image(spec), options, Deadline(30))
    assert repo.get_manifest("4.16.3").digest == built.manifest_digest
    assert repo.credentials is not None and repo.credentials.source == f"the pull secret ({basic_registry.host})"
