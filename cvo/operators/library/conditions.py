"""An operator's own OperatorCondition, as operator-lib's ``conditions`` package gives Go operators.

The OperatorCondition is found through ``OPERATOR_CONDITION_NAME`` (cvo injects it into the
operator's Deployment, as OLM does) and the operator's namespace (``OPERATOR_NAMESPACE``, as
operator-lib reads it, ``POD_NAMESPACE``, or the service account's namespace file); either missing
is operator-lib's error, with its ``get operator condition name: ``/``get operator condition
namespace: `` prefix (operator-lib: conditions/factory.go).  ``set`` writes ``spec.conditions`` (the
v2 API, the only channel: the operator owns spec, cvo copies it into status with the generation it
saw); ``lastTransitionTime`` changes only when the status changes.  ``get`` of a condition that was
never set raises :class:`ConditionNotFound` ("conditionType Upgradeable not found", operator-lib:
conditions/conditions.go).  When the cluster does not serve the OperatorCondition API, ``set`` is a
no-op that returns ``False``, ``get`` finds nothing (:class:`ConditionNotFound`), and one log line
says so, so an operator runs unchanged where there is no OLM or cvo.

Set your defaults before you report ready (operator-framework/olm-docs content/en/docs/advanced-tasks/communicating-operator-conditions-to-olm.md, "Setting Defaults"): an operator that opts in should write
``Upgradeable`` once at start-up, before its readiness probe passes::

    conditions = OperatorConditions(cluster, namespace=my_namespace)
    await conditions.set("Upgradeable", "False", reason="Starting", message="Checking for pending migrations")
    ...  # look at your state
    await conditions.set("Upgradeable", "True", reason="AsExpected")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cvo.clock import to_rfc3339
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref
from cvo.gates.olm import ENV_NAME, OC_API_VERSION, OC_GROUP, OC_KIND
from cvo.log import get_logger
from cvo.payload.fields import dig, entries, mapping, string

log = get_logger("cvo.operators.library")

NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
NAMESPACE_ENV = ("OPERATOR_NAMESPACE", "POD_NAMESPACE")  # operator-lib's variable, then the usual downward API one
MISSING_NAMESPACE = ("get operator condition namespace: namespace not found for current environment "
                     "(set OPERATOR_NAMESPACE or POD_NAMESPACE, or pass namespace=)")


class ConditionNameMissing(RuntimeError):
    """The OperatorCondition cannot be named: no ``OPERATOR_CONDITION_NAME``, or no namespace."""


class NamespaceMissing(ConditionNameMissing):
    """No namespace to look in: operator-lib's ``ErrNoNamespace``, with the factory's prefix."""


class ConditionNotFound(LookupError):
    """``get`` of a condition type the operator never set (operator-lib: ``conditionType %v not found``)."""


@dataclass
class ConditionValue:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""


def _namespace() -> str | None:
    for variable in NAMESPACE_ENV:
        if env := os.environ.get(variable, "").strip():
            return env
    try:
        with open(NAMESPACE_FILE) as f:
            return f.read().strip() or None
    except OSError:
        return None


class OperatorConditions:
    def __init__(self, cluster: Cluster, name: str | None = None, namespace: str | None = None,
                 clock: Any = None) -> None:
        self.cluster = cluster
        self.name = name or os.environ.get(ENV_NAME, "")
        self.namespace = namespace or _namespace() or ""
        self.clock = clock
        self._served: bool | None = None
        if not self.name:
            raise ConditionNameMissing(
                f"get operator condition name: could not determine operator condition name: environment variable "
                f"{ENV_NAME} not set")
        if not self.namespace:
            raise NamespaceMissing(MISSING_NAMESPACE)

    @property
    def ref(self) -> Ref:
        return Ref(OC_GROUP, OC_KIND, self.namespace, self.name)

    async def available(self) -> bool:
        if self._served is None:
            self._served = await self.cluster.serves(OC_API_VERSION, OC_KIND)
            if not self._served:
                log.info("the OperatorCondition API is not served; conditions are not reported", name=self.name)
        return self._served

    def _now(self) -> datetime:
        return self.clock.now() if self.clock is not None else datetime.now(UTC)

    async def get(self, type_: str) -> ConditionValue:
        """The condition as the operator last set it (``spec.conditions``).

        :class:`ConditionNotFound` when it was never set (or the API is not served), ``ApiError``
        ``NOT_FOUND`` when the OperatorCondition itself does not exist.
        """
        if not await self.available():
            raise ConditionNotFound(f"conditionType {type_} not found (the cluster does not serve OperatorConditions)")
        oc = await self.cluster.get(self.ref)
        if oc is None:
            raise ApiError(ApiErrorKind.NOT_FOUND, f'operatorconditions.{OC_GROUP} "{self.name}" not found', self.ref)
        for cond in entries(dig(oc, "spec", "conditions")):
            if cond.get("type") == type_:
                return ConditionValue(type_, string(cond.get("status")), string(cond.get("reason")),
                                      string(cond.get("message")), string(cond.get("lastTransitionTime")))
        raise ConditionNotFound(f"conditionType {type_} not found")

    async def set(self, type_: str, status: str, reason: str = "", message: str = "") -> bool:
        """Set a condition in ``spec.conditions``; ``False`` when the API is not there (a no-op)."""
        if not await self.available():
            return False
        for _ in range(5):
            oc = await self.cluster.get(self.ref)
            if oc is None:
                raise ApiError(ApiErrorKind.NOT_FOUND, f'operatorconditions.{OC_GROUP} "{self.name}" not found',
                               self.ref)
            spec = dict(mapping(oc.get("spec")))
            conditions = [dict(c) for c in entries(spec.get("conditions"))]
            current = next((c for c in conditions if c.get("type") == type_), None)
            stamp = to_rfc3339(self._now())
            wanted = {"type": type_, "status": status, "reason": reason or status, "message": message,
                      "lastTransitionTime": stamp if current is None or current.get("status") != status
                      else current.get("lastTransitionTime", stamp)}
            if current == wanted:
                return True
            if current is None:
                conditions.append(wanted)
            else:
                current.clear()
                current.update(wanted)
            spec["conditions"] = conditions
            try:
                await self.cluster.update({**oc, "spec": spec})
                return True
            except ApiError as err:
                if err.kind is not ApiErrorKind.CONFLICT:
                    raise
        raise ApiError(ApiErrorKind.CONFLICT, f"OperatorCondition {self.name}: kept conflicting", self.ref)
