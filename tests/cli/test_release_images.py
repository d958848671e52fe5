"""Release images on the command line: ``cvo release new|info|extract|sign``, a pull spec wherever a release
directory is accepted, ``cvo upgrade --to-image`` with oc's rules.  Real processes, real OCI layouts (read back
by skopeo), real GnuPG keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import PAYLOADS, REPO
from tests.support.signing import make_key, trusting_release

OPS = str(PAYLOADS / "demo-operators.yaml")


def cvo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    return subprocess.run([sys.executable, "-m", "cvo", *args], cwd=REPO, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=300)


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a failed command, which printed no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The demo releases as images in one OCI layout; ``cache`` and ``layout`` are the paths."""
    root = tmp_path_factory.mktemp("images")
    env = {"CVO_CACHE_DIR": str(root / "cache")}
    found = {"cache": str(root / "cache"), "layout": str(root / "layout")}
    for version in ("4.16.0", "4.16.3", "4.17.0"):
        done = cvo("release", "new", "--from-dir", str(PAYLOADS / f"demo-{version}"), "--to",
                   f"oci:{root / 'layout'}:{version}", "-o", "json", env=env)
        assert done.returncode == 0, done.stderr
        found[version] = json.loads(done.stdout)["pullSpec"]
    return found


def env_of(images: dict[str, str]) -> dict[str, str]:
    return {"CVO_CACHE_DIR": images["cache"]}


def test_release_new_writes_an_image_skopeo_reads(images: dict[str, str], tmp_path: Path) -> None:
    inspected = subprocess.run(["skopeo", "inspect", f"oci:{images['layout']}:4.16.3"], capture_output=True,
                               text=True, timeout=60)
    assert inspected.returncode == 0, inspected.stderr
    doc = json.loads(inspected.stdout)
    assert doc["Digest"] == images["4.16.3"].rpartition("@")[2]
    assert doc["Labels"]["io.openshift.release"] == "4.16.3"
    assert len(doc["Layers"]) == 2  # manifests/ (the CVO image's part), then release-manifests/
    copied = subprocess.run(["skopeo", "copy", f"oci:{images['layout']}:4.16.3", f"dir:{tmp_path / 'copy'}"],
                            capture_output=True, text=True, timeout=60)
    assert copied.returncode == 0, copied.stderr


def test_release_info_prints_what_oc_prints(images: dict[str, str]) -> None:
    done = cvo("release", "info", images["4.16.3"], env=env_of(images))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Name:      4.16.3"  # oc's tabwriter columns
    assert lines[1] == f"Digest:    {images['4.16.3'].rpartition('@')[2]}"
    assert f"Pull From: {images['4.16.3']}" in lines
    assert "  Upgrades: 4.16.0" in lines and "Images:" in lines
    as_json = json.loads(cvo("release", "info", images["4.16.3"], "-o", "json", env=env_of(images)).stdout)
    assert as_json["metadata"]["version"] == "4.16.3" and as_json["pullFrom"] == images["4.16.3"]
    tags = {t["name"]: t["from"]["name"] for t in as_json["references"]["spec"]["tags"]}  # oc's ReleaseInfo keys
    assert tags["cli"].startswith("quay.io/demo/release@sha256:")


def test_release_extract_writes_a_tree_plan_reads_back(images: dict[str, str], tmp_path: Path) -> None:
    done = cvo("release", "extract", images["4.17.0"], "--to", str(tmp_path / "out"), env=env_of(images))
    assert done.returncode == 0, done.stderr
    for name in ("manifests", "release-manifests"):
        source = sorted(p.relative_to(PAYLOADS / "demo-4.17.0").as_posix()
                        for p in (PAYLOADS / "demo-4.17.0" / name).rglob("*") if p.is_file())
        written = sorted(p.relative_to(tmp_path / "out").as_posix()
                         for p in (tmp_path / "out" / name).rglob("*") if p.is_file())
        assert written == source
    same_image = ["--release-image", images["4.17.0"]]  # {{.ReleaseImage}} is rendered into the manifests
    from_dir = cvo("plan", str(PAYLOADS / "demo-4.17.0"), "-o", "json", *same_image)
    from_tree = cvo("plan", str(tmp_path / "out"), "-o", "json", *same_image)
    from_image = cvo("plan", images["4.17.0"], "-o", "json", env=env_of(images))
    assert from_dir.returncode == from_tree.returncode == from_image.returncode == 0, from_image.stderr
    plans = [json.loads(d.stdout) for d in (from_dir, from_tree, from_image)]
    assert plans[0]["nodes"] == plans[1]["nodes"] == plans[2]["nodes"]  # the same graph, task by task
    assert plans[0]["versionHash"] == plans[1]["versionHash"] == plans[2]["versionHash"]
    assert plans[2]["image"] == images["4.17.0"]  # known by its digest
    # an existing, non-empty target is refused, and left alone
    again = cvo("release", "extract", images["4.17.0"], "--to", str(tmp_path / "out"), env=env_of(images))
    assert again.returncode == 2 and "exists and is not an empty directory" in one_error(again)


def test_release_extract_included_keeps_what_the_cluster_would_apply(images: dict[str, str], tmp_path: Path) -> None:
    done = cvo("release", "extract", images["4.17.0"], "--to", str(tmp_path / "inc"), "--included",
               "--capabilities", "", env=env_of(images))
    assert done.returncode == 0, done.stderr
    everything = cvo("release", "extract", images["4.17.0"], "--to", str(tmp_path / "all"), env=env_of(images))
    assert everything.returncode == 0
    count = [sum(1 for p in (tmp_path / d).rglob("*.yaml")) for d in ("inc", "all")]
    assert 0 < count[0] < count[1]  # capability-gated manifests (the console, samples…) are left out
    assert (tmp_path / "inc" / "release-manifests" / "release-metadata").is_file()


def test_bad_images_get_one_error_line(images: dict[str, str], tmp_path: Path) -> None:
    bad_spec = cvo("plan", "quay.io/UPPER/case:tag")
    assert bad_spec.returncode == 2
    assert one_error(bad_spec).startswith("error: image quay.io/UPPER/case:tag: not a pull spec")
    missing = cvo("plan", f"oci:{tmp_path / 'nowhere'}:1.0")
    assert missing.returncode == 1 and "nowhere: no such directory" in one_error(missing)
    no_tag = cvo("release", "info", f"oci:{images['layout']}:4.99.0", env=env_of(images))
    assert no_tag.returncode == 1 and "no image tagged '4.99.0'" in one_error(no_tag)
    not_release = tmp_path / "not-a-release"
    (not_release / "manifests").mkdir(parents=True)
    (not_release / "manifests" / "x.yaml").write_text("kind: ConfigMap\n")
    built = cvo("release", "new", "--from-dir", str(not_release), "--to", f"oci:{tmp_path / 'l'}:x")
    assert built.returncode == 2 and "release-manifests/release-metadata: file not found" in one_error(built)


def test_upgrade_to_image_follows_oc(images: dict[str, str], tmp_path: Path) -> None:
    state = ["--state", str(tmp_path / "s.db"), "--speed", "6000", "--operators", OPS]
    env = env_of(images)
    assert cvo("install", f"oci:{images['layout']}:4.16.0", *state, env=env).returncode == 0
    by_tag = cvo("upgrade", "--to-image", f"oci:{images['layout']}:4.16.3", *state, env=env)
    assert by_tag.returncode == 2
    assert one_error(by_tag) == (
        "error: --to-image must be a by-digest pull spec, unless --force is also set, because release images "
        "that are not accessed via digest cannot be verified by the cluster.  Even when --force is set, using "
        "tags is not recommended, although we continue to allow it for backwards compatibility")
    explicit = cvo("upgrade", "--to-image", images["4.16.3"], *state, env=env)
    assert explicit.returncode == 2  # oc's words: the cluster has no updates (RetrievedUpdates=False), so
    assert one_error(explicit) == "error: cannot refresh available updates:"  # one error, its Reason under it
    assert explicit.stderr.endswith("\n\nspecify --allow-explicit-upgrade to continue with the update.\n")
    done = cvo("upgrade", "--to-image", images["4.16.3"], "--allow-explicit-upgrade", *state, "-o", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert "is not one of the available updates" in done.stderr
    history = json.loads(done.stdout)["clusterVersion"]["status"]["history"]
    assert (history[0]["version"], history[0]["image"], history[0]["verified"]) == ("4.16.3", images["4.16.3"], False)


def test_signed_unsigned_and_forced(images: dict[str, str], tmp_path: Path) -> None:
    """The loop of the issue: build, sign, publish, verify, upgrade — then an unsigned image refused and forced."""
    key = make_key(tmp_path / "gnupg", "release key <k@test.invalid>")
    store = tmp_path / "signatures"
    env = {"CVO_CACHE_DIR": str(tmp_path / "cache")}
    layout = tmp_path / "layout"
    pulls = {}
    for version in ("4.16.0", "4.16.3", "4.17.0"):
        directory = trusting_release(PAYLOADS / f"demo-{version}", tmp_path / version, {"k": key.public},
                                     [f"file://{store}"])
        done = cvo("release", "new", "--from-dir", str(directory), "--to", f"oci:{layout}:{version}", "-o", "json",
                   env=env)
        pulls[version] = json.loads(done.stdout)["pullSpec"]
    state = ["--state", str(tmp_path / "s.db"), "--speed", "6000", "--operators", OPS]
    assert cvo("install", pulls["4.16.0"], *state, env=env).returncode == 0
    signed = cvo("release", "sign", pulls["4.16.3"], "--key", key.uid, "--to", str(store), "--gnupg-home",
                 str(key.home), env=env)
    assert signed.returncode == 0, signed.stderr
    assert (store / f"sha256={pulls['4.16.3'].rpartition(':')[2]}" / "signature-1").is_file()
    up = cvo("upgrade", "--to-image", pulls["4.16.3"], "--allow-explicit-upgrade", *state, "-o", "json", env=env)
    assert up.returncode == 0, up.stderr
    assert json.loads(up.stdout)["clusterVersion"]["status"]["history"][0]["verified"] is True

    refused = cvo("upgrade", "--to-image", pulls["4.17.0"], "--allow-explicit-upgrade", *state, env=env)
    assert refused.returncode == 1
    assert "The update cannot be verified: unable to verify sha256:" in one_error(refused)
    status = json.loads(cvo("status", "--state", str(tmp_path / "s.db"), "-o", "json").stdout)
    accepted = next(c for c in status["clusterVersion"]["status"]["conditions"] if c["type"] == "ReleaseAccepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "RetrievePayload")
    assert accepted["message"].startswith(f'Retrieving payload failed version="4.17.0" image="{pulls["4.17.0"]}" '
                                          "failure=The update cannot be verified: ")
    assert status["clusterVersion"]["status"]["desired"]["version"] == "4.16.3"  # nothing moved

    forced = cvo("upgrade", "--to-image", pulls["4.17.0"], "--allow-explicit-upgrade", "--force", *state, "-o",
                 "json", env=env)
    assert forced.returncode == 0, forced.stderr
    head = json.loads(forced.stdout)["clusterVersion"]["status"]["history"][0]
    assert (head["version"], head["verified"]) == ("4.17.0", False)
    assert "cannot be verified, but continuing anyway because the update was forced" in head["acceptedRisks"]
