"""The cache of finished plans (``cvo.plan.cache``): a hit prints exactly what a fresh plan prints, and any
change to what the plan depends on (file contents, the files present, the options, cvo's code) is a miss.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cvo.cli.plan_cmd as plan_cmd
from cvo.cli.main import main
from cvo.plan.cache import (
    FORMAT,
    KEY_BYTES,
    PlanCache,
    code_fingerprint,
    decode_entry,
    encode_entry,
    plan_key,
)
from tests.support.helpers import HA, ReleaseFactory, cluster_operator, obj, release_factory, write_docs

VERSION = "4.16.0"


def payload() -> dict[str, object]:
    return {
        "0000_10_a_00_ns.yaml": obj("Namespace", "a"),
        "0000_10_a_01_cm.yaml": [obj("ConfigMap", "a1", "a"),
                                 obj("ConfigMap", "hosted", "a",
                                     annotations={"include.release.openshift.io/hypershift": "true"})],
        "0000_20_b_00_deploy.yaml": obj("Deployment", "b", "a", api="apps/v1"),
        "0000_30_d_00_co.yaml": cluster_operator("d", VERSION),
        "0000_40_e_job.yaml": obj("Job", "e", "a", api="batch/v1"),
        "0000_50_f_x.yaml": obj("ConfigMap", "console", "a",
                                annotations={**HA, "capability.openshift.io/name": "Console"}),
    }


class Plans:
    """Runs ``cvo plan`` in this process and counts the plans actually built (cache misses)."""

    def __init__(self) -> None:
        self.built = 0
        real = plan_cmd.render

        def counting(*args: Any, **kwargs: Any) -> str:
            self.built += 1
            return real(*args, **kwargs)

        self._patch = mock.patch.object(plan_cmd, "render", counting)

    def __enter__(self) -> Plans:
        self._patch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.stop()

    def run(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["plan", *args])
        return code, out.getvalue(), err.getvalue()


@pytest.fixture
def plans() -> Iterator[Plans]:
    with Plans() as p:
        yield p


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "plan").glob("*.plan"))


# --- hits and misses, one change at a time -------------------------------------------------------


@pytest.mark.parametrize("output", ["text", "json", "dot", "mermaid"])
def test_a_hit_prints_what_a_fresh_plan_prints(make_release: ReleaseFactory, cache_dir: Path, plans: Plans,
                                              output: str) -> None:
    root = make_release(payload(), version=VERSION)
    fresh = plans.run(str(root), "-o", output, "--no-cache")
    assert plans.built == 1 and entries(cache_dir) == []  # --no-cache neither reads nor writes
    first = plans.run(str(root), "-o", output)
    second = plans.run(str(root), "-o", output)
    assert plans.built == 2  # the second run built nothing
    assert fresh == first == second
    assert fresh[0] == 0 and "d" in fresh[1]
    assert len(entries(cache_dir)) == 1


def test_a_content_change_with_the_same_size_and_mtime_is_a_miss(make_release: ReleaseFactory, cache_dir: Path,
                                                                  plans: Plans) -> None:
    root = make_release(payload(), version=VERSION)
    target = root / "release-manifests" / "0000_20_b_00_deploy.yaml"
    before = plans.run(str(root), "-o", "json")
    st_before = target.stat()
    text = target.read_text()
    assert "name: b\n" in text
    target.write_text(text.replace("name: b\n", "name: z\n"))  # same size
    os.utime(target, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))  # same mtime
    after = plans.run(str(root), "-o", "json")
    assert plans.built == 2
    assert '"name": "z"' in after[1] and '"name": "b"' in before[1]
    assert after == plans.run(str(root), "-o", "json", "--no-cache")


def test_an_mtime_only_change_is_a_hit(make_release: ReleaseFactory, cache_dir: Path, plans: Plans) -> None:
    root = make_release(payload(), version=VERSION)
    first = plans.run(str(root))
    for path in (root / "release-manifests").iterdir():
        os.utime(path, ns=(1, 1_000_000_000))
    assert plans.run(str(root)) == first
    assert plans.built == 1


def test_an_added_or_removed_file_is_a_miss(make_release: ReleaseFactory, cache_dir: Path, plans: Plans) -> None:
    root = make_release(payload(), version=VERSION)
    base = plans.run(str(root), "-o", "json")
    added = root / "release-manifests" / "0000_25_n_00_cm.yaml"
    write_docs(added, obj("ConfigMap", "new", "a"))
    with_new = plans.run(str(root), "-o", "json")
    assert '"name": "new"' in with_new[1] and '"name": "new"' not in base[1]
    added.unlink()
    assert plans.run(str(root), "-o", "json") == base
    ignored = root / "release-manifests" / "notes.txt"  # a file not read is still in the plan ("Files not read")
    ignored.write_text("hello")
    with_ignored = plans.run(str(root), "-o", "json")
    assert "notes.txt" in with_ignored[1]
    (root / "release-manifests" / "sub").mkdir()
    assert "sub" in plans.run(str(root), "-o", "json")[1]
    assert plans.built == 5


@pytest.mark.parametrize("options", [
    ["--mode", "install"], ["--mode", "reconcile", "--attempt", "9"], ["--profile", "hypershift"],
    ["--feature-set", "TechPreviewNoUpgrade"], ["--feature-gates", "Shiny"], ["--capabilities", ""],
    ["--exclude", "x"], ["--release-image", "quay.io/x/y:1"], ["--show-excluded"], ["-o", "dot"],
])
def test_every_option_is_part_of_the_key(make_release: ReleaseFactory, cache_dir: Path, plans: Plans,
                                         options: list[str]) -> None:
    root = make_release(payload(), version=VERSION)
    base = plans.run(str(root))
    other = plans.run(str(root), *options)
    assert plans.built == 2
    assert other == plans.run(str(root), *options, "--no-cache")
    assert plans.run(str(root)) == base  # both entries stay
    assert plans.run(str(root), *options) == other
    assert plans.built == 3


def test_a_file_that_breaks_is_an_error_not_a_stale_hit(make_release: ReleaseFactory, cache_dir: Path,
                                                        plans: Plans) -> None:
    root = make_release(payload(), version=VERSION)
    assert plans.run(str(root))[0] == 0
    (root / "release-manifests" / "0000_20_b_00_deploy.yaml").write_text("kind: [unclosed\n")
    code, out, err = plans.run(str(root))
    assert (code, out) == (2, "")
    assert err.startswith("error: release-manifests/0000_20_b_00_deploy.yaml") and len(err.splitlines()) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "other-key"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(make_release: ReleaseFactory, cache_dir: Path, plans: Plans,
                                                    damage: str) -> None:
    root = make_release(payload(), version=VERSION)
    good = plans.run(str(root))
    [entry] = entries(cache_dir)
    data = entry.read_bytes()
    damaged = {
        "truncate": data[:-7],
        "flip": data[:-3] + bytes([data[-3] ^ 0x20]) + data[-2:],
        "garbage": os.urandom(len(data)),
        "empty": b"",
        "other-key": FORMAT + bytes(KEY_BYTES) + data[len(FORMAT) + KEY_BYTES:],
    }[damage]
    entry.write_bytes(damaged)
    assert plans.run(str(root)) == good
    assert plans.built == 2
    assert entry.read_bytes() == data
    assert plans.run(str(root)) == good and plans.built == 2


def test_an_unwritable_cache_is_not_an_error(make_release: ReleaseFactory, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, plans: Plans) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("CVO_CACHE_DIR", str(blocker))
    root = make_release(payload(), version=VERSION)
    assert plans.run(str(root)) == plans.run(str(root), "--no-cache")


def test_entries_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cvo.plan.cache.MAX_ENTRIES", 3)
    cache = PlanCache(tmp_path)
    for i in range(6):
        path = cache.entry_path(tmp_path, [str(i)])
        cache.put(path, bytes(KEY_BYTES), b"x")
        os.utime(path, ns=(i * 10**9, i * 10**9))
    assert len(list((tmp_path / "plan").glob("*.plan"))) == 3


# --- cvo's own code is part of the key -----------------------------------------------------------


def test_the_code_fingerprint_follows_every_module(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 1\n")
    base = code_fingerprint(pkg)
    assert code_fingerprint(pkg) == base
    (pkg / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"compiled")  # not source: no change
    (pkg / "notes.txt").write_text("not a module")
    assert code_fingerprint(pkg) == base
    (pkg / "sub" / "b.py").write_text("B = 2\n")  # same size; the mtime moves
    os.utime(pkg / "sub" / "b.py", ns=(5, 5))
    changed = code_fingerprint(pkg)
    assert changed != base
    (pkg / "c.py").write_text("")
    assert code_fingerprint(pkg) not in (base, changed)


def test_the_key_separates_its_parts() -> None:
    code, release = b"c" * 32, b"r" * 32
    assert plan_key(release, ["a", "bc"], code) != plan_key(release, ["ab", "c"], code)
    assert plan_key(release, ["a"], code) != plan_key(release, ["a"], b"d" * 32)
    assert plan_key(release, ["a"], code) != plan_key(b"s" * 32, ["a"], code)


# --- the entry reader: never trusts what it reads -------------------------------------------------


@given(key=st.binary(min_size=KEY_BYTES, max_size=KEY_BYTES), body=st.binary(max_size=200))
def test_an_entry_round_trips(key: bytes, body: bytes) -> None:
    assert decode_entry(encode_entry(key, body), key) == body


@given(key=st.binary(min_size=KEY_BYTES, max_size=KEY_BYTES), body=st.binary(max_size=200), data=st.data())
def test_any_change_to_an_entry_is_a_miss(key: bytes, body: bytes, data: st.DataObject) -> None:
    entry = encode_entry(key, body)
    i = data.draw(st.integers(min_value=0, max_value=len(entry) - 1), label="position")
    kind = data.draw(st.sampled_from(["flip", "truncate", "append", "drop"]), label="damage")
    if kind == "flip":
        bit = data.draw(st.integers(min_value=0, max_value=7), label="bit")
        damaged = entry[:i] + bytes([entry[i] ^ (1 << bit)]) + entry[i + 1:]
    elif kind == "truncate":
        damaged = entry[:i]
    elif kind == "append":
        damaged = entry + data.draw(st.binary(min_size=1, max_size=20), label="tail")
    else:
        damaged = entry[:i] + entry[i + 1:]
    assert decode_entry(damaged, key) is None


@given(data=st.binary(max_size=300), key=st.binary(min_size=KEY_BYTES, max_size=KEY_BYTES))
def test_arbitrary_bytes_are_a_miss(data: bytes, key: bytes) -> None:
    assert decode_entry(data, key) is None
    assert decode_entry(FORMAT + data, key) is None


# --- any sequence of changes: the cached plan is always the fresh plan -----------------------------

OPTION_SETS = [[], ["--mode", "install"], ["--profile", "hypershift"], ["-o", "text", "--show-excluded"],
               ["--capabilities", ""], ["--feature-gates", "Shiny", "-o", "dot"]]
NAMES = sorted(payload())

operations = st.one_of(
    st.tuples(st.just("edit"), st.sampled_from(NAMES), st.text("abcxyz", min_size=1, max_size=6)),
    st.tuples(st.just("edit-keep-mtime"), st.sampled_from(NAMES), st.text("abcxyz", min_size=1, max_size=6)),
    st.tuples(st.just("touch"), st.sampled_from(NAMES), st.integers(min_value=1, max_value=2**40)),
    st.tuples(st.just("add"), st.sampled_from(["0000_15_n_x.yaml", "0000_99_z_x.yaml", "README.md"]),
              st.text("abc", min_size=1, max_size=3)),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("break"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("options"), st.integers(min_value=0, max_value=len(OPTION_SETS) - 1), st.none()),
    st.tuples(st.just("corrupt"), st.sampled_from(["truncate", "garbage", "empty", "flip"]), st.none()),
    st.tuples(st.just("metadata"), st.sampled_from(["4.15.0", "4.15.9"]), st.none()),
)


def _apply(op: tuple[str, Any, Any], root: Path, cache_dir: Path) -> list[str] | None:
    kind, what, value = op
    rel = root / "release-manifests"
    if kind in ("edit", "edit-keep-mtime"):
        path = rel / what
        if path.exists():
            before = path.stat()
            write_docs(path, obj("ConfigMap", f"cm-{value}", "a"))
            if kind == "edit-keep-mtime":
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif kind == "touch":
        if (rel / what).exists():
            os.utime(rel / what, ns=(value, value))
    elif kind == "add":
        write_docs(rel / what, obj("ConfigMap", f"added-{value}", "a"))
    elif kind == "remove":
        (rel / what).unlink(missing_ok=True)
    elif kind == "break":
        (rel / what).write_text("kind: [unclosed\n")
    elif kind == "options":
        return OPTION_SETS[what]
    elif kind == "corrupt":
        for entry in entries(cache_dir):
            data = entry.read_bytes()
            if what == "flip" and data:
                damaged = data[:-1] + bytes([data[-1] ^ 1])
            else:
                damaged = {"truncate": data[: len(data) // 2], "garbage": os.urandom(64)}.get(what, b"")
            entry.write_bytes(damaged)
    elif kind == "metadata":
        meta = rel / "release-metadata"
        meta.write_text(meta.read_text().replace('"previous": []', f'"previous": ["{what}"]')
                        .replace('"previous": ["4.15.0"]', f'"previous": ["{what}"]'))
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operations, min_size=1, max_size=8))
def test_after_any_changes_the_cached_plan_is_the_fresh_plan(ops: list[tuple[str, Any, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, Plans() as plans, \
            mock.patch.dict(os.environ, {"CVO_CACHE_DIR": str(Path(tmp) / "cache")}):
        root = release_factory(Path(tmp))(payload(), version=VERSION)
        options: list[str] = []
        for op in ops:
            options = _apply(op, root, Path(tmp) / "cache") or options
            cached = plans.run(str(root), *options)
            fresh = plans.run(str(root), *options, "--no-cache")
            assert cached == fresh, op
            assert plans.run(str(root), *options) == fresh  # and again, now certainly from the cache


def test_the_cli_s_modes_are_the_graph_s() -> None:
    from cvo.payload.graph import Mode

    assert tuple(m.value for m in Mode) == plan_cmd.MODES
