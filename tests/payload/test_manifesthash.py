"""The payload's manifest hash (ClusterVersion ``status.versionHash``), as the CVO computes it.

Upstream: openshift/cluster-version-operator ``pkg/payload/payload.go`` (``LoadUpdate``: ``fnv.New64``
over every kept manifest's ``Raw``, ``base64.URLEncoding``), golang/go ``src/hash/fnv/fnv.go`` and its
``fnv_test.go`` golden values, library-go ``pkg/manifest/manifest.go`` (``Raw``: a JSON document's own
bytes, trimmed).  The corpus's value is in ``tests/payload/test_corpus.py``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.payload.loader import load_release
from cvo.payload.manifesthash import manifest_hash
from tests.support.helpers import ReleaseFactory, obj

OFFSET64, PRIME64, MASK64 = 0xCBF29CE484222325, 0x100000001B3, 2**64 - 1


def go_sum64(chunks: list[bytes]) -> str:
    """fnv.go ``sum64.Write`` (``hash *= prime64; hash ^= sum64(c)``), then ``Sum`` big-endian in base64url."""
    h = OFFSET64
    for chunk in chunks:
        for c in chunk:
            h = ((h * PRIME64) & MASK64) ^ c
    return base64.urlsafe_b64encode(h.to_bytes(8, "big")).decode()


@pytest.mark.parametrize(("text", "digest"), [
    (b"", "cbf29ce484222325"), (b"a", "af63bd4c8601b7be"), (b"ab", "08326707b4eb37b8"), (b"abc", "d8dcca186bafadcb"),
])
def test_fnv1_64_golden_values(text: bytes, digest: str) -> None:
    """fnv_test.go ``golden64``: FNV-1, not FNV-1a (whose "a" is af63dc4c8601ec8c)."""
    assert manifest_hash([text]) == base64.urlsafe_b64encode(bytes.fromhex(digest)).decode()


@given(st.lists(st.binary(max_size=64), max_size=6))
def test_writes_concatenate(chunks: list[bytes]) -> None:
    """``hash.Write`` per manifest is one stream: the hash of the pieces is the hash of their concatenation."""
    assert manifest_hash(chunks) == go_sum64(chunks) == manifest_hash([b"".join(chunks)])


def test_hash_covers_kept_manifests_in_order(make_release: ReleaseFactory) -> None:
    """payload.go: only manifests that pass ``Include`` at load are hashed, in payload order."""
    files = {"0000_10_a_x.yaml": obj("ConfigMap", "a", "ns"), "0000_20_b_x.yaml": obj("ConfigMap", "b", "ns"),
             "0000_30_c_x.yaml": obj("ConfigMap", "hosted", "ns", annotations={})}
    release = load_release(make_release(files), use_cache=False)
    assert [m.name for m in release.manifests] == ["a", "b"]
    assert release.manifest_hash == go_sum64([m.raw for m in release.manifests])
    assert release.manifest_hash != go_sum64([m.raw for m in reversed(release.manifests)])

    excluded_changed = {**files, "0000_30_c_x.yaml": obj("ConfigMap", "other", "ns", annotations={})}
    assert load_release(make_release(excluded_changed, name="r2"), use_cache=False).manifest_hash == \
        release.manifest_hash
    kept_changed = {**files, "0000_20_b_x.yaml": obj("ConfigMap", "b", "ns", data={"k": "v"})}
    assert load_release(make_release(kept_changed, name="r3"), use_cache=False).manifest_hash != \
        release.manifest_hash


def test_raw_is_the_json_file_itself_or_the_yaml_in_go_json(make_release: ReleaseFactory) -> None:
    """library-go: a JSON document's ``Raw`` is its own bytes (white space included); YAML becomes Go's JSON."""
    doc = obj("ConfigMap", "a", "ns", data={"z": "<x>", "a": "1"})
    pretty = json.dumps(doc, indent=2)
    root = make_release({"0000_10_a_x.json": "\n" + pretty + "\n", "0000_10_a_y.yaml": {**doc, "kind": "Secret"}})
    json_manifest, yaml_manifest = load_release(root, use_cache=False).manifests
    assert json_manifest.raw == pretty.encode()
    assert yaml_manifest.raw == (b'{"apiVersion":"v1","data":{"a":"1","z":"\\u003cx\\u003e"},"kind":"Secret",'
                                 b'"metadata":{"annotations":{"include.release.openshift.io/self-managed-high-'
                                 b'availability":"true"},"name":"a","namespace":"ns"}}')


def test_cached_and_parsed_loads_hash_alike(make_release: ReleaseFactory, tmp_path: Path) -> None:
    root = make_release({"0000_10_a_x.yaml": obj("ConfigMap", "a", "ns", data={"k": "<&>"})})
    cold = load_release(root, cache_dir=tmp_path / "cache")
    warm = load_release(root, cache_dir=tmp_path / "cache")
    assert warm.manifest_hash == cold.manifest_hash == load_release(root, use_cache=False).manifest_hash
