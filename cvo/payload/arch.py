"""The architecture a release is reported for: ``Multi`` when its metadata says so, else the runtime's.

The CVO reports ``runtime.GOARCH`` of its own process (pkg/payload/payload.go ``loadReleaseMetadata``):
a release runs on the architecture the CVO runs on.  cvo does the same with the machine it runs on,
named as Go names it.
"""

from __future__ import annotations

import platform

# platform.machine() -> Go's GOARCH, for the architectures OpenShift ships.
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
            "s390x": "s390x", "i386": "386", "i686": "386", "armv7l": "arm", "riscv64": "riscv64"}


def go_arch(machine: str | None = None) -> str:
    """``runtime.GOARCH`` for ``machine`` (default: this one); an unknown machine name as it is, lowercased."""
    name = platform.machine() if machine is None else machine
    return _GO_ARCH.get(name.lower(), name.lower() or "unknown")
