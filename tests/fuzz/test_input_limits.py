"""Bad input to the loader: one error line naming the file, never a traceback, never an exhausted machine.

Each case of issue 9's list is here; ``tests/fuzz/`` holds what the fuzzers found.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cvo.payload import limits
from cvo.payload.limits import InputError, read_input
from cvo.payload.loader import LoadError, load_release
from cvo.payload.yamlorjson import load_documents
from cvo.payload.yamlparse import LimitExceeded, _Budget
from tests.support.helpers import ReleaseFactory, obj

CM = obj("ConfigMap", "x", "ns")


def errors(root: Path) -> list[str]:
    with pytest.raises(LoadError) as info:
        load_release(root, use_cache=False)
    assert all("\n" not in e and "Traceback" not in e for e in info.value.errors)
    return info.value.errors


# --- file types --------------------------------------------------------------------------------

def test_symlink_loop_is_named(make_release: ReleaseFactory) -> None:
    root = make_release({"ok.yaml": CM})
    os.symlink("loop.yaml", root / "release-manifests" / "loop.yaml")
    assert errors(root) == ["release-manifests/loop.yaml: symbolic link loop (too many levels of symbolic links)"]


def test_symlink_to_a_device_is_not_read(make_release: ReleaseFactory) -> None:
    root = make_release({"ok.yaml": CM})
    os.symlink("/dev/zero", root / "release-manifests" / "zero.yaml")
    assert errors(root) == [
        "release-manifests/zero.yaml: is a character device, not a regular file (cvo reads only regular files)"]


def test_fifo_does_not_block(make_release: ReleaseFactory) -> None:
    root = make_release({"ok.yaml": CM})
    os.mkfifo(root / "release-manifests" / "x.yaml")
    assert errors(root) == [
        "release-manifests/x.yaml: is a FIFO (named pipe), not a regular file (cvo reads only regular files)"]


def test_symlink_to_a_regular_file_is_followed(make_release: ReleaseFactory, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: linked, namespace: ns}\n")
    root = make_release({"ok.yaml": CM})
    os.symlink(elsewhere, root / "release-manifests" / "linked.yaml")
    release = load_release(root, use_cache=False)
    assert [m.name for m in release.all_manifests] == ["linked", "x"]


def test_unreadable_file_is_named(make_release: ReleaseFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_release({"ok.yaml": CM, "secret.yaml": CM})
    real_open = os.open

    def refuse(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        if str(path).endswith("secret.yaml"):  # what chmod 0 gives a user who is not root
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse)
    assert errors(root) == ["release-manifests/secret.yaml: cannot read: Permission denied"]


def test_non_utf8_file_name_is_an_error(make_release: ReleaseFactory) -> None:
    root = make_release({"ok.yaml": CM})
    (root / "release-manifests" / os.fsdecode(b"0000_10_\xff.yaml")).write_text("kind: [\n")
    assert errors(root) == [r"release-manifests/0000_10_\xff.yaml: file name is not UTF-8 (cvo's rule; rename the file)"]


def test_read_input_never_reads_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"x" * 101)
    assert read_input(path, "f.yaml", limit=101) == b"x" * 101
    with pytest.raises(InputError, match=r"^f.yaml: file is 101 bytes, over cvo's limit of 100 bytes"):
        read_input(path, "f.yaml", limit=100)


def test_file_over_the_size_limit(make_release: ReleaseFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 1000)
    root = make_release({"big.yaml": "a: " + "x" * 2000 + "\n"})
    assert errors(root) == ["release-manifests/big.yaml: file is 2.0 KiB, over cvo's limit of 1000 bytes "
                            "(see docs/loading.md)"]


# --- YAML and JSON -----------------------------------------------------------------------------

def alias_bomb(levels: int = 9, width: int = 9) -> bytes:
    """The billion laughs: ``width ** levels`` strings from a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: x, namespace: ns}",
             "a: &a [" + ", ".join(['"lol"'] * width) + "]"]
    previous = "a"
    for name in "bcdefghijklmnop"[:levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * width) + "]")
        previous = name
    return ("\n".join(lines) + "\n").encode()


def test_alias_bomb_is_refused_at_once(make_release: ReleaseFactory) -> None:
    data = alias_bomb()
    assert len(data) < 706
    root = make_release({"bomb.yaml": data})
    started = time.perf_counter()
    (error,) = errors(root)
    assert time.perf_counter() - started < 5
    assert error.startswith("release-manifests/bomb.yaml (document 1): line ")
    assert error.endswith("document contains excessive aliasing (go-yaml v2's limit)")


def go_yaml_v2_refuses(k: int, plain: int, aliases: int) -> bool:
    """Whether go-yaml v2 refuses ``[&a [x, …k], y, …plain, *a, …aliases]``, node by node as its decoder counts.

    ``decodeCount`` counts every node it decodes, ``aliasCount`` those decoded under an alias; the
    test runs at every node.
    """
    decoded = 1 + 1 + 1 + k + plain  # document, outer sequence, the anchored sequence and its strings, plain strings
    aliased = 0
    for _ in range(aliases):
        decoded += 1  # the alias node itself is not under an alias
        if limits.excessive_aliasing(aliased, decoded):
            return True
        for _ in range(k + 1):  # the anchored sequence and its strings, again, under the alias
            decoded += 1
            aliased += 1
            if limits.excessive_aliasing(aliased, decoded):
                return True
    return False


@pytest.mark.parametrize(("k", "plain", "aliases", "refused"), [
    (150, 0, 291, False), (150, 0, 292, True),
    (150, 500, 1243, False), (150, 500, 1244, True),
    (1000, 0, 110, False), (1000, 0, 111, True),
    (1, 0, 5000, False),  # aliases of small values can never reach 99%
])
def test_alias_ratio_matches_go_yaml_v2_node_by_node(k: int, plain: int, aliases: int, refused: bool) -> None:
    assert go_yaml_v2_refuses(k, plain, aliases) is refused
    data = b"[&a [" + b", ".join([b"x"] * k) + b"]" + b", y" * plain + b", *a" * aliases + b"]"
    if refused:
        with pytest.raises(LimitExceeded, match="excessive aliasing"):
            load_documents(data)
    else:
        (doc,) = load_documents(data)
        assert len(doc) == 1 + plain + aliases


@pytest.mark.parametrize(("aliased", "start", "end", "refused"), [
    (1_000_000, 2_000_000, 2_300_000, False),
    (1_000_000, 2_900_000, 3_200_000, True),  # the allowed ratio falls faster than the ratio: refused at the end
    (410_000, 3_900_000, 4_200_000, True),  # refused only in the middle, just before 4,000,000
])
def test_a_stretch_without_aliases_is_checked_as_at_every_node(aliased: int, start: int, end: int,
                                                                refused: bool) -> None:
    assert any(limits.excessive_aliasing(aliased, d) for d in range(start + 1, end + 1)) is refused
    budget = _Budget()
    budget.aliased, budget.decoded, budget.checked = aliased, start, start
    if refused:
        with pytest.raises(LimitExceeded, match="excessive aliasing"):
            budget.plain_nodes(end, None)
    else:
        budget.plain_nodes(end, None)
    assert not limits.excessive_aliasing(aliased, start)
    assert limits.excessive_aliasing(aliased, end) is (refused and end < 4_000_000)


def test_aliases_of_a_long_string_are_limited_in_bytes() -> None:
    # go-yaml's rule counts nodes: 50 aliases of a 100 KB string pass it, and would make 5 MB of JSON.
    data = b"a: &a " + b"x" * 100_000 + b"\nb: [" + b", ".join([b"*a"] * 50) + b"]\n"
    with pytest.raises(LimitExceeded, match=r"aliases repeat more than 3 MiB of JSON in this file"):
        load_documents(data)


def test_alias_nesting_counts_towards_the_depth_limit() -> None:
    half = limits.MAX_DEPTH // 2 + 1
    data = b"a: &a " + b"[" * half + b"]" * half + b"\nb: " + b"[" * half + b"*a" + b"]" * half + b"\n"
    with pytest.raises(LimitExceeded, match="nested deeper than 200 levels through alias 'a'"):
        load_documents(data)


def test_documents_per_file_limit_stops_early() -> None:
    # The 50 MB file of 350,000 documents: the parser stops at the limit, long before the end.
    doc = b"---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n"
    started = time.perf_counter()
    with pytest.raises(LimitExceeded, match="more than 10,000 documents in one file") as info:
        load_documents(doc * 350_000)
    assert info.value.document == limits.MAX_DOCUMENTS_PER_FILE + 1
    assert time.perf_counter() - started < 10
    (json_values,) = [b"{}\n" * (limits.MAX_DOCUMENTS_PER_FILE + 1)]
    with pytest.raises(LimitExceeded, match="more than 10,000 documents"):
        load_documents(json_values)


def test_release_over_the_total_limit(make_release: ReleaseFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_RELEASE_BYTES", 3000)
    root = make_release({f"{i}.yaml": "# " + "x" * 1000 + "\n" for i in range(5)})
    assert errors(root) == ["release-manifests/2.yaml: the release's files add up to more than 2.9 KiB, cvo's "
                            "limit (see docs/loading.md)"]


def test_document_over_the_size_limit(make_release: ReleaseFactory) -> None:
    big = "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\ndata:\n" + "".join(
        f"  k{i}: {'x' * 1000}\n" for i in range(3200))
    root = make_release({"big.yaml": big})
    assert errors(root) == ["release-manifests/big.yaml (document 1): document is 3.1 MiB as JSON, over cvo's "
                            "limit of 3 MiB (see docs/loading.md)"]


# --- templates ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("action", "reason"), [
    (r'{{"\q"}}', r"unknown escape sequence \q in a string literal"),
    (r'{{"\ud800"}}', r"\ud800 is not a Unicode character"),
    (r'{{"\777"}}', r"octal escape \777 is over 255"),
    ('{{"\\', "unclosed action"),
])
def test_bad_template_string_literals_skip_the_file(make_release: ReleaseFactory, action: str, reason: str) -> None:
    root = make_release({"ok.yaml": CM}, cvo_files={"a.yaml": f"kind: ConfigMap\nmetadata:\n  name: {action}\n"})
    release = load_release(root, use_cache=False)
    (skipped,) = [s for s in release.skipped_files if s.path == "manifests/a.yaml"]
    assert reason in skipped.reason


def test_go_string_escapes_render_as_go_renders_them(make_release: ReleaseFactory) -> None:
    root = make_release({"ok.yaml": CM}, cvo_files={
        "a.yaml": 'kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: a\n  namespace: ns\n'
                  'data:\n  v: "{{"\\u00e9\\x41\\101\\t"}}"\n'})
    release = load_release(root, use_cache=False)
    (a,) = [m for m in release.all_manifests if m.name == "a"]
    assert a.obj["data"] == {"v": "éAA\t"}


def test_rendered_template_is_limited(make_release: ReleaseFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 10_000)
    root = make_release({"ok.yaml": CM}, images={"big": "x" * 5000},
                        cvo_files={"a.yaml": 'a: {{index .Images "big"}} {{index .Images "big"}} {{index .Images "big"}}'})
    assert errors(root) == ["manifests/a.yaml: rendered template is over cvo's limit of 9.8 KiB (see docs/loading.md)"]
