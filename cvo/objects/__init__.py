"""Typed views of the objects cvo reads from outside: a cluster, the embedded store, saved files.

An object is read once, at the boundary (``ClusterVersion.read(obj)``), into frozen dataclasses that
cannot hold a string where a list belongs: it is checked against its kind's schema (the CRDs of
``manifests/``, or a schema declared in code), each field of the wrong shape is left out with one warning
naming the object and the field, and the rest of cvo reads typed fields without guarding again.
``schema.py`` is the check, ``view.py`` the dataclass builder, ``base.py`` kinds and reading, ``times.py``
timestamps as nanoseconds (any time Go holds), ``crds.py`` finds ``manifests/``, ``rollout.py`` whether a
workload has rolled out (kstatus's rules, over raw objects); one module per kind.
A new kind is a module with its views and a ``KIND`` (:func:`~cvo.objects.base.crd` or
:func:`~cvo.objects.base.declared`), listed in :data:`KINDS`.
May import: ``cvo.payload`` (input limits, the YAML decoder, field helpers) only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cvo.objects.base import Object, Refused
    from cvo.objects.clusteroperator import ClusterOperator
    from cvo.objects.clusterversion import ClusterVersion
    from cvo.objects.condition import Condition
    from cvo.objects.crds import SchemaMissing
    from cvo.objects.deployment import Deployment
    from cvo.objects.machineconfig import MachineConfig
    from cvo.objects.machineconfigpool import MachineConfigPool
    from cvo.objects.node import Node
    from cvo.objects.operatorcondition import OperatorCondition
    from cvo.objects.times import Time

    KINDS: dict[tuple[str, str], type[Object]]

# Each name is imported from its module when first asked for (PEP 562): the embedded store needs only
# ``cvo.objects.meta``, and a command that reads no typed object (``cvo diff``) does not pay for the views.
_HOMES = {"Object": "base", "Refused": "base", "ClusterOperator": "clusteroperator",
          "ClusterVersion": "clusterversion", "Condition": "condition", "SchemaMissing": "crds",
          "Deployment": "deployment", "MachineConfig": "machineconfig", "MachineConfigPool": "machineconfigpool",
          "Node": "node", "OperatorCondition": "operatorcondition", "Time": "times"}
_VIEWS = ("ClusterVersion", "ClusterOperator", "OperatorCondition", "Deployment", "Node", "MachineConfigPool",
          "MachineConfig")


def __getattr__(name: str) -> Any:
    if name == "KINDS":
        # (group, kind) -> its view: what the readers of saved objects check as they read them
        kinds = {(cls.KIND.group, cls.KIND.kind): cls for cls in (__getattr__(view) for view in _VIEWS)}
        globals()["KINDS"] = kinds
        return kinds
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = ["KINDS", "ClusterOperator", "ClusterVersion", "Condition", "Deployment", "MachineConfig",
           "MachineConfigPool", "Node", "Object", "OperatorCondition", "Refused",
           "SchemaMissing", "Time"]
