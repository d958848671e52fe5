"""MachineConfig (``machineconfiguration.openshift.io/v1``): only what names the release a rendered config
belongs to, the ``machineconfiguration.openshift.io/release-image-version`` annotation the machine-config
controller writes (openshift/machine-config-operator ``pkg/controller/common/constants.go``
``ReleaseImageVersionAnnotationKey``).  The config itself (ignition, kernel arguments) is no reader's here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cvo.objects.base import Kind, Object, declared

GROUP = "machineconfiguration.openshift.io"
RELEASE_IMAGE_VERSION = "machineconfiguration.openshift.io/release-image-version"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "spec": {"type": "object"}}}


@dataclass(frozen=True)
class MachineConfig(Object):
    KIND = Kind(GROUP, "MachineConfig", declared(SCHEMA))

    @property
    def release_version(self) -> str:
        """The OpenShift version the config was rendered for; "" when it names none."""
        return self.metadata.annotations.get(RELEASE_IMAGE_VERSION, "")
