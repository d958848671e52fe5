"""Release images: pulling the corpus from a real registry, beside skopeo; the cache; memory; plan from an image.

A local Debian ``docker-registry`` (plain HTTP on 127.0.0.1) holds the corpus built as a release image by
``cvo release new``.  Measured side by side, interleaved, in the same run:

* *pull and extract*: ``cvo release extract IMAGE --to DIR`` with an empty image cache, against
  ``skopeo copy docker://IMAGE oci:DIR`` followed by ``tar -xzf`` of every layer (what a shell script
  would do), both whole processes;
* *second pull*: ``pull_release`` of the same digest in one process (the cache), timed, and the registry's
  access log counted for blob requests;
* *peak RSS*: ``cvo release extract`` of the corpus image, and of the same image with a 256 MiB layer
  outside the payload directories below it (memory must not follow the layer's size);
* *plan*: ``cvo plan IMAGE`` (warm image and plan caches) against ``cvo plan DIR`` (warm plan cache).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
sys.path.insert(0, str(REPO))

from bench.measure import Run, cvo, run_process  # noqa: E402

REGISTRY = Path("/usr/bin/docker-registry")
SKOPEO = Path("/usr/bin/skopeo")
BIG = 256 << 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_registry(root: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = _free_port()
    log = root / "registry.log"
    (root / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    with open(log, "wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen([str(REGISTRY), "serve", str(root / "config.yml")], stdout=out,
                                stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"127.0.0.1:{port}", log
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"error: docker-registry did not start: {log.read_text()[-2000:]}")


def _big_base(root: Path, env: dict[str, str], host: str) -> str:
    """An image whose one layer holds a 256 MiB file outside the payload directories (incompressible), pushed to
    the registry: the base of the corpus image for the RSS run."""
    layer = root / "big.tar.gz"
    with gzip.open(layer, "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        info = tarfile.TarInfo("usr/share/big.bin")
        info.size = BIG
        tar.addfile(info, _Random(BIG))
    oci = root / "big-oci"
    script = f"""
import hashlib, json, os, sys
from pathlib import Path
from cvo.images.layout import OciLayout
from cvo.images.repository import Descriptor, RawManifest
from cvo.images import media
from cvo.images.digest import sha256_of
layer = Path({str(layer)!r})
h = hashlib.sha256()
with open(layer, 'rb') as f:
    for chunk in iter(lambda: f.read(1 << 20), b''):
        h.update(chunk)
digest = 'sha256:' + h.hexdigest()
repo = OciLayout(Path({str(oci)!r}), "oci:big")
repo.put_blob(layer, Descriptor(media.OCI_LAYER_GZIP, digest, layer.stat().st_size))
config = json.dumps({{'architecture': 'amd64', 'os': 'linux', 'rootfs': {{'type': 'layers', 'diff_ids': []}}}}).encode()
cpath = Path({str(root / 'config.json')!r}); cpath.write_bytes(config)
repo.put_blob(cpath, Descriptor(media.OCI_CONFIG, sha256_of(config), len(config)))
manifest = json.dumps({{'schemaVersion': 2, 'mediaType': media.OCI_MANIFEST,
    'config': {{'mediaType': media.OCI_CONFIG, 'digest': sha256_of(config), 'size': len(config)}},
    'layers': [{{'mediaType': media.OCI_LAYER_GZIP, 'digest': digest, 'size': layer.stat().st_size}}]}}).encode()
repo.put_manifest('base', RawManifest(manifest, media.OCI_MANIFEST, sha256_of(manifest)))
"""
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
    subprocess.run([str(SKOPEO), "copy", "--quiet", "--dest-tls-verify=false", f"oci:{oci}:base",
                    f"docker://{host}/bench/base:big"], check=True)
    return f"{host}/bench/base:big"


class _Random(io.RawIOBase):
    """``size`` random bytes (incompressible)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return os.urandom(n)


def _skopeo_and_tar(image: str, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    subprocess.run([str(SKOPEO), "copy", "--quiet", "--src-tls-verify=false", f"docker://{image}",
                    f"oci:{work / 'oci'}:x"], check=True)
    import json

    index = json.loads((work / "oci" / "index.json").read_text())
    manifest = json.loads((work / "oci" / "blobs" / "sha256" / index["manifests"][0]["digest"][7:]).read_text())
    (work / "tree").mkdir()
    for layer in manifest["layers"]:
        subprocess.run(["tar", "-xzf", str(work / "oci" / "blobs" / "sha256" / layer["digest"][7:]), "-C",
                        str(work / "tree")], check=True)


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def images_section(repeats: int) -> list[str]:
    if not REGISTRY.exists() or not SKOPEO.exists():
        raise SystemExit("error: the images benchmark needs docker-registry and skopeo (make registry-tools)")
    with tempfile.TemporaryDirectory(prefix="cvo-bench-images-") as scratch:
        root = Path(scratch)
        proc, host, log = _start_registry(root)
        try:
            return _measure(root, host, log, repeats)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _measure(root: Path, host: str, log: Path, repeats: int) -> list[str]:
    env = {**os.environ, "CVO_CACHE_DIR": str(root / "cache")}
    image = f"{host}/bench/release:corpus"
    subprocess.run(cvo("release", "new", "--from-dir", str(CORPUS), "--to", image, "--insecure-registry"),
                   check=True, env=env, stdout=subprocess.DEVNULL, cwd=REPO)
    pulls: list[Run] = []
    peers: list[float] = []
    for _ in range(repeats):
        # each run starts from written-out disks: what the last one deleted and wrote is not paid by the next
        shutil.rmtree(root / "cache", ignore_errors=True)
        shutil.rmtree(root / "out", ignore_errors=True)
        shutil.rmtree(root / "peer", ignore_errors=True)
        os.sync()
        pulls.append(run_process(cvo("release", "extract", image, "--to", str(root / "out"), "--insecure-registry"),
                                 env))
        os.sync()
        peers.append(_timed(lambda: _skopeo_and_tar(image, root / "peer")))
    cvo_s, peer_s = statistics.median(r.seconds for r in pulls), statistics.median(peers)
    pull_rss = max(r.max_rss_kb for r in pulls) / 1024

    # the second pull of the digest: in one process, from the cache; blob requests counted in the access log
    digest_spec = subprocess.run(cvo("release", "info", image, "--insecure-registry", "-o", "json"), check=True,
                                 env=env, capture_output=True, text=True).stdout
    import json

    pinned = json.loads(digest_spec)["pullFrom"]
    before = log.read_text().count("/blobs/sha256:")
    second = subprocess.run([sys.executable, "-c", (
        "import time; from cvo.images.pull import pull_release, PullOptions; "
        "from cvo.images.options import RegistryOptions; "
        f"o = PullOptions(registry=RegistryOptions(insecure=True)); pull_release({pinned!r}, o); "
        "t = time.perf_counter(); [pull_release(" + repr(pinned) + ", o) for _ in range(20)]; "
        "print((time.perf_counter() - t) / 20)")], check=True, env=env, capture_output=True, text=True)
    second_s = float(second.stdout.strip())
    blob_requests = log.read_text().count("/blobs/sha256:") - before

    # peak RSS with a 256 MiB layer below the payload
    base = _big_base(root, env, host)
    big = f"{host}/bench/release:big"
    subprocess.run(cvo("release", "new", "--from-dir", str(CORPUS), "--to", big, "--base", base,
                       "--insecure-registry"), check=True, env=env, stdout=subprocess.DEVNULL, cwd=REPO)
    shutil.rmtree(root / "cache", ignore_errors=True)
    big_run = run_process(cvo("release", "extract", big, "--to", str(root / "out-big"), "--insecure-registry"), env)

    # plan from the image (warm image and plan caches) against plan from the directory (warm plan cache)
    tree = root / "out"
    plan_dir = cvo("plan", str(tree), "-o", "json", "--release-image", pinned)
    plan_image = cvo("plan", pinned, "-o", "json", "--insecure-registry")
    for argv in (plan_dir, plan_image):
        run_process(argv, env)  # fill the caches
    dirs, imgs = [], []
    for _ in range(repeats):
        dirs.append(run_process(plan_dir, env).seconds)
        imgs.append(run_process(plan_image, env).seconds)
    plan_dir_s, plan_image_s = statistics.median(dirs), statistics.median(imgs)

    ratio = cvo_s / peer_s
    layer_mb = sum(p.stat().st_size for p in (root / "data").rglob("data") if p.is_file()) / 1e6

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    return [
        "## Release images: pull and extract the corpus from a real registry",
        "",
        f"The corpus built as a release image (`cvo release new`, two layers), pushed to Debian's docker-registry "
        f"on 127.0.0.1 (plain HTTP); the registry holds {layer_mb:.1f} MB for both images of this section. "
        f"Medians of {repeats} interleaved runs, whole processes, empty caches, each run after `sync` (file "
        f"creation here costs 0.3-1 ms a file, and a run would otherwise pay for the writes and deletions of the one "
        f"before it).",
        "",
        "| what | seconds | peak RSS MB |",
        "|---|---|---|",
        f"| `cvo release extract IMAGE --to DIR` (pull, verify digests, apply both layers) | {cvo_s:.3f} | "
        f"{pull_rss:.0f} |",
        f"| `skopeo copy docker://IMAGE oci:DIR` + `tar -xzf` of each layer | {peer_s:.3f} | — |",
        f"| the same image with a 256 MiB layer below the payload (`cvo release extract`) | {big_run.seconds:.3f} | "
        f"{big_run.max_rss_kb / 1024:.0f} |",
        f"| second pull of the digest (in process, from the cache) | {second_s:.4f} | — |",
        f"| `cvo plan DIR` (warm plan cache) | {plan_dir_s:.3f} | — |",
        f"| `cvo plan IMAGE@sha256:…` (warm image and plan caches) | {plan_image_s:.3f} | — |",
        "",
        f"Goals: pull and extract ≤ 1.0× skopeo + tar: {verdict(ratio <= 1.0)} ({ratio:.2f}×); a second pull of "
        f"the same digest ≤ 0.1 s and no blob request: {verdict(second_s <= 0.1 and blob_requests == 0)} "
        f"({second_s * 1000:.1f} ms, {blob_requests} blob requests); peak RSS of a pull ≤ 100 MB, independent of "
        f"layer size: {verdict(max(pull_rss, big_run.max_rss_kb / 1024) <= 100)} ({pull_rss:.0f} MB for the "
        f"corpus, {big_run.max_rss_kb / 1024:.0f} MB with the 256 MiB layer); `cvo plan IMAGE` within 1.2× of "
        f"`cvo plan DIR`: {verdict(plan_image_s <= 1.2 * plan_dir_s)} ({plan_image_s / plan_dir_s:.2f}×).",
        "",
    ]
