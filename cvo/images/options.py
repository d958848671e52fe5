"""How registries are reached: the registry flags as one value, apart from the client (which imports urllib3)
so that a command that only reads the image cache never loads the HTTP stack."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RegistryOptions:
    """How registries are reached."""

    registry_config: Path | None = None  # --registry-config; else $REGISTRY_AUTH_FILE and the default files
    ca_file: Path | None = None  # --registry-ca: trusted besides the system store
    insecure: bool = False  # --insecure-registry: plain HTTP, or TLS without verification
    read_timeout: float = 30.0  # a connection that sends nothing for this long is abandoned (and retried)
    pull_secret: Mapping[str, Any] | None = field(default=None, repr=False)  # a cluster's .dockerconfigjson
