"""The watch thread's reader of a watch response: events are lines, however the chunks cut them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cvo.cluster.kube.watch import _lines


class Chunks:
    """A urllib3 response whose body arrives in the given chunks."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks


def test_lines_are_joined_across_chunks_and_split_within_one() -> None:
    resp = Chunks(b'{"type":"ADD', b'ED"}\n{"type":"MODIFIED"}\n{"type"', b':"DELETED"}\n', b"", b"\n \n")
    assert list(_lines(resp)) == [b'{"type":"ADDED"}', b'{"type":"MODIFIED"}', b'{"type":"DELETED"}']  # type: ignore[arg-type]


def test_a_last_line_without_its_newline_still_counts() -> None:
    assert list(_lines(Chunks(b'{"a":1}\n{"b"', b":2}"))) == [b'{"a":1}', b'{"b":2}']  # type: ignore[arg-type]
