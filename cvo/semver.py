"""Semantic versions as the CVO parses and compares them (``github.com/blang/semver``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$",
    re.ASCII,
)


class SemverError(ValueError):
    pass


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _SEMVER.match(text) if isinstance(text, str) else None
        if not match:
            raise SemverError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD])")
        pre = tuple(match.group(4).split(".")) if match.group(4) else ()
        for part in pre:
            if part.isdigit() and len(part) > 1 and part[0] == "0":
                raise SemverError(f"{text!r}: numeric pre-release part {part!r} has a leading zero")
        build = tuple(match.group(5).split(".")) if match.group(5) else ()
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)), pre, build)

    def _pre_key(self) -> tuple[object, ...]:
        # A version without pre-release sorts after every pre-release of the same core version.
        if not self.pre:
            return ((1,),)
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        core, other_core = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if core != other_core:
            return core < other_core
        if not self.pre or not other.pre:
            return bool(self.pre) and not other.pre
        return self._pre_key() < other._pre_key()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return (self.major, self.minor, self.patch, self.pre) == (other.major, other.minor, other.patch, other.pre)

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse(text: str) -> Version:
    return Version.parse(text)


def is_valid(text: str) -> bool:
    try:
        Version.parse(text)
    except SemverError:
        return False
    return True
