"""Semantic versions as the CVO parses and compares them: a port of ``github.com/blang/semver/v4``'s ``Parse``.

The error texts are blang/semver's own (``No Major.Minor.Patch elements found``, ``Invalid character(s)
found in minor number "x"``), because the CVO puts them in precondition messages word for word.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import total_ordering

from cvo.payload.gostrings import go_parse_uint, go_quote

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


class SemverError(ValueError):
    pass


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A semantic version."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """``semver.Parse``: the version, or :class:`SemverError` with blang/semver's message."""
        if not isinstance(text, str) or not text:
            raise SemverError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        major = _number(parts[0], "major", "Major")
        minor = _number(parts[1], "minor", "Minor")
        patch_text, build_text, pre_text = parts[2], None, None
        if "+" in patch_text:
            patch_text, build_text = patch_text.split("+", 1)
        if "-" in patch_text:
            patch_text, pre_text = patch_text.split("-", 1)
        patch = _number(patch_text, "patch", "Patch")
        pre = tuple(_prerelease(p) for p in pre_text.split(".")) if pre_text is not None else ()
        build: tuple[str, ...] = ()
        if build_text is not None:
            for part in build_text.split("."):
                if not part:
                    raise SemverError("Build meta data is empty")
                if not set(part) <= _ALPHANUM:
                    raise SemverError(f"Invalid character(s) found in build meta data {go_quote(part)}")
            build = tuple(build_text.split("."))
        return cls(major, minor, patch, pre, build)

    def _pre_key(self) -> tuple[object, ...]:
        # A version without pre-release sorts after every pre-release of the same core version.
        if not self.pre:
            return ((1,),)
        return tuple((0, int(p), "") if set(p) <= _NUMBERS else (1, 0, p) for p in self.pre)

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


def _number(text: str, name: str, title: str) -> int:
    if not set(text) <= _NUMBERS:
        raise SemverError(f"Invalid character(s) found in {name} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{title} number must not contain leading zeroes {go_quote(text)}")
    value = go_parse_uint(text)
    if isinstance(value, str):
        raise SemverError(value)
    return value


def _prerelease(part: str) -> str:
    """``NewPRVersion``: a numeric or alphanumeric identifier."""
    if not part:
        raise SemverError("Prerelease is empty")
    if set(part) <= _NUMBERS:
        if len(part) > 1 and part[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(part)}")
        value = go_parse_uint(part)
        if isinstance(value, str):
            raise SemverError(value)
        return part
    if not set(part) <= _ALPHANUM:
        raise SemverError(f"Invalid character(s) found in prerelease {go_quote(part)}")
    return part


def parse(text: str) -> Version:
    return Version.parse(text)


def is_valid(text: str) -> bool:
    try:
        Version.parse(text)
    except SemverError:
        return False
    return True
