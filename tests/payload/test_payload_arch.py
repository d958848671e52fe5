"""The architecture a release is reported for (pkg/payload/payload.go: ``runtime.GOARCH`` unless ``Multi``)."""

from __future__ import annotations

import platform

import pytest

from cvo.payload.arch import go_arch


@pytest.mark.parametrize(("machine", "goarch"), [("x86_64", "amd64"), ("aarch64", "arm64"), ("arm64", "arm64"),
                                                 ("ppc64le", "ppc64le"), ("s390x", "s390x"), ("AMD64", "amd64"),
                                                 ("mips", "mips")])
def test_machine_names_as_go_names_them(machine: str, goarch: str) -> None:
    assert go_arch(machine) == goarch


def test_this_machine() -> None:
    assert go_arch() == go_arch(platform.machine())
    assert go_arch() != ""
