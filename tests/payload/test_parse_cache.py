"""The parse cache's pack (``cvo.payload.cache``): entries read one at a time, and nothing read is trusted.

A pack cvo wrote gives back exactly what was stored; a pack damaged in any way gives back either what
was stored or nothing (a miss), never an exception and never something else.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cvo.payload.cache import FORMAT, ParseCache, valid_headers, write_pack
from cvo.payload.manifest import Header

texts = st.text(max_size=12)
headers_st = st.lists(
    st.tuples(st.integers(min_value=1, max_value=10_000), texts, texts, texts, texts,
              st.dictionaries(texts, texts, max_size=3), st.binary(max_size=40)),
    max_size=4,
)
entries_st = st.dictionaries(st.binary(min_size=16, max_size=16), headers_st, max_size=5)


def pack_bytes(entries: dict[bytes, list[Header]]) -> bytes:
    out = io.BytesIO()
    write_pack(out, entries)
    return out.getvalue()


def read_back(data: bytes, keys: list[bytes]) -> dict[bytes, list[Header] | None]:
    with tempfile.TemporaryDirectory() as tmp:
        cache = ParseCache(Path(tmp), Path(tmp) / "release")
        cache.path.parent.mkdir(parents=True)
        cache.path.write_bytes(data)
        cache.load()
        try:
            return {key: cache.get(key) for key in keys}
        finally:
            cache.close()


@given(entries=entries_st)
def test_a_pack_gives_back_what_was_stored(entries: dict[bytes, list[Header]]) -> None:
    assert read_back(pack_bytes(entries), list(entries)) == entries


@settings(max_examples=300)
@given(entries=entries_st, data=st.data())
def test_a_damaged_pack_gives_back_what_was_stored_or_nothing(entries: dict[bytes, list[Header]],
                                                               data: st.DataObject) -> None:
    pack = pack_bytes(entries)
    i = data.draw(st.integers(min_value=0, max_value=len(pack) - 1), label="position")
    damage = data.draw(st.sampled_from(["flip", "truncate", "drop", "insert"]), label="damage")
    if damage == "flip":
        bit = data.draw(st.integers(min_value=0, max_value=7), label="bit")
        damaged = pack[:i] + bytes([pack[i] ^ (1 << bit)]) + pack[i + 1:]
    elif damage == "truncate":
        damaged = pack[:i]
    elif damage == "drop":
        damaged = pack[:i] + pack[i + 1:]
    else:
        damaged = pack[:i] + data.draw(st.binary(min_size=1, max_size=8), label="inserted") + pack[i:]
    other = b"\x00" * 16
    found = read_back(damaged, [*entries, other])
    for key, value in found.items():
        assert value is None or value == entries.get(key)


@given(junk=st.binary(max_size=300), key=st.binary(min_size=16, max_size=16))
def test_arbitrary_bytes_are_an_empty_cache(junk: bytes, key: bytes) -> None:
    assert read_back(junk, [key]) == {key: None}
    assert read_back(FORMAT + junk, [key]) == {key: None}


def test_only_headers_pass_the_shape_check() -> None:
    good: list[Header] = [(1, "v1", "ConfigMap", "a", "ns", {"k": "v"}, b"{}")]
    assert valid_headers(good) and valid_headers([])
    for bad in (None, {}, [None], [(1, "v1")], [("1", "v1", "ConfigMap", "a", "ns", {}, b"{}")],
                [(1, "v1", "ConfigMap", "a", "ns", {"k": 1}, b"{}")], [(1, "v1", "ConfigMap", "a", "ns", {}, "{}")],
                (good[0],)):
        assert not valid_headers(bad), bad
