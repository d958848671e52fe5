"""Semantic versions as blang/semver v4 parses them, with its error texts (the CVO quotes them)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cvo.payload import semver

# blang/semver v4 semver.go Parse: each failure and its message.
ERRORS = [
    ("", "Version string empty"),
    ("4.16", "No Major.Minor.Patch elements found"),
    ("4", "No Major.Minor.Patch elements found"),
    ("a.1.0", 'Invalid character(s) found in major number "a"'),
    ("01.1.0", 'Major number must not contain leading zeroes "01"'),
    ("1.a.0", 'Invalid character(s) found in minor number "a"'),
    ("1.01.0", 'Minor number must not contain leading zeroes "01"'),
    ("1.1.a", 'Invalid character(s) found in patch number "a"'),
    ("1.1.01", 'Patch number must not contain leading zeroes "01"'),
    ("1.1.0-", "Prerelease is empty"),
    ("1.1.0-a..b", "Prerelease is empty"),
    ("1.1.0-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.1.0-a$", 'Invalid character(s) found in prerelease "a$"'),
    ("1.1.0+", "Build meta data is empty"),
    ("1.1.0+a.$", 'Invalid character(s) found in build meta data "$"'),
    ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ("1..0", 'strconv.ParseUint: parsing "": invalid syntax'),
    ("1.1.0-\n", 'Invalid character(s) found in prerelease "\\n"'),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_parse_errors_are_blangs(text: str, message: str) -> None:
    with pytest.raises(semver.SemverError) as info:
        semver.parse(text)
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "expected"), [
    ("4.16.0", (4, 16, 0, (), ())),
    ("5.0.0-0.nightly-2026-08-22-120000", (5, 0, 0, ("0", "nightly-2026-08-22-120000"), ())),
    ("1.0.0-rc.1+build.5", (1, 0, 0, ("rc", "1"), ("build", "5"))),
    ("1.0.0+0build", (1, 0, 0, (), ("0build",))),
])
def test_parse(text: str, expected: tuple[object, ...]) -> None:
    v = semver.parse(text)
    assert (v.major, v.minor, v.patch, v.pre, v.build) == expected
    assert str(v) == text


def test_order_as_blang_compares() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
               "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    versions = [semver.parse(t) for t in ordered]
    assert sorted(reversed(versions)) == versions
    assert semver.parse("1.0.0+a") == semver.parse("1.0.0+b")  # build metadata has no precedence


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_semver_error(text: str) -> None:
    try:
        v = semver.parse(text)
    except semver.SemverError as err:
        assert str(err)
        return
    assert str(v) == text
