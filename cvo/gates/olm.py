"""OperatorConditions the way OLM treats them (operator-lifecycle-manager pkg/controller/operators/olm/operatorconditions.go).

* Which object: ``operators.coreos.com`` OperatorCondition, v1 or v2; both versions share one
  storage schema.  The operator reports in ``spec.conditions`` (v2), and the status copy carries
  ``observedGeneration``.  That is the only channel: v1 operators once wrote ``status.conditions``,
  but OLM's Role has not allowed the status subresource since May 2021 (OLM commit 86eda229a,
  "Operator can create/update/patch OperatorCondition but not its status"), and cvo's Role is OLM's.
* Whether it blocks (``isOperatorUpgradeable``): no object, or no ``Upgradeable`` condition: not
  blocked; an admin's ``spec.overrides`` entry wins (True lets through, anything else blocks); a
  status condition whose ``observedGeneration`` differs from ``metadata.generation`` blocks as
  outdated; ``False`` blocks; ``True``/``Unknown`` do not.  Condition types OLM does not support
  are shown to admins and change nothing.
* What cvo creates per ClusterOperator and namespace, as OLM's generator does per CSV
  (``operatorconditiongenerator_controller.go``) and its reconciler per OperatorCondition
  (``operatorcondition_controller.go``): the OperatorCondition (named after the ClusterOperator)
  listing every operator Deployment of that ClusterOperator in the namespace and their service
  accounts; a Role allowing exactly ``get``/``update``/``patch`` on that one object and a
  RoleBinding to those service accounts, both owned by the OperatorCondition (``controller: true``,
  ``blockOwnerDeletion: false``: ``ownerutil.AddOwner(role, operatorCondition, false, true)``), so
  that deleting it garbage-collects them; and ``OPERATOR_CONDITION_NAME`` in the Deployments'
  containers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvo.objects import Condition, OperatorCondition
from cvo.objects.condition import find
from cvo.payload.fields import dig, entries, mapping, string

OC_GROUP = "operators.coreos.com"
OC_KIND = "OperatorCondition"
OC_API_VERSION = "operators.coreos.com/v2"
ENV_NAME = "OPERATOR_CONDITION_NAME"
UPGRADEABLE = "Upgradeable"
SUPPORTED_TYPES = frozenset({UPGRADEABLE})
LABEL = "cvo.openshift.io/operator-condition"  # on the OperatorCondition, its Role and its RoleBinding


@dataclass(frozen=True)
class Verdict:
    """Whether an OperatorCondition lets its operator be upgraded, and why not."""

    upgradeable: bool
    reason: str = ""  # e.g. the condition's or the override's reason, or "Outdated"
    message: str = ""
    source: str = ""  # "override", "status", "" (nothing reported)


def _find(conditions: Any, type_: object) -> dict[str, Any] | None:
    for cond in entries(conditions):
        if cond.get("type") == type_:
            return cond
    return None


def upgradeable_verdict(oc: OperatorCondition | Mapping[str, Any] | None) -> Verdict:
    """OLM's ``isOperatorUpgradeable`` for one OperatorCondition (``None``: no object)."""
    if oc is None:
        return Verdict(True)
    oc = OperatorCondition.of(oc)
    override = find(oc.spec.overrides, UPGRADEABLE)
    if override is not None:
        if override.status == "True":
            return Verdict(True, override.reason, override.message, "override")
        return Verdict(False, override.reason or "AdminOverride",
                       f"the operator is not upgradeable: {override.message}", "override")
    cond = find(oc.status.conditions, UPGRADEABLE)
    if cond is None:
        return Verdict(True)
    if cond.observed_generation != oc.metadata.generation:
        return Verdict(False, "Outdated", f'the operatorcondition status "Upgradeable"="{cond.status}" is outdated',
                       "status")
    if cond.status == "False":
        return Verdict(False, cond.reason or "NotUpgradeable", f"the operator is not upgradeable: {cond.message}",
                       "status")
    return Verdict(True, cond.reason, cond.message, "status")


def unsupported_conditions(oc: OperatorCondition) -> list[Condition]:
    """Conditions an operator reports that OLM does not act on: shown to admins, nothing more."""
    out: list[Condition] = []
    names = set()
    for cond in (*oc.spec.conditions, *oc.status.conditions):
        if cond.type not in SUPPORTED_TYPES and cond.type not in names:
            names.add(cond.type)
            out.append(cond)
    return out


def synced_status(oc: dict[str, Any]) -> dict[str, Any] | None:
    """OLM's ``syncOperatorConditionStatus``: copy ``spec.conditions`` into status with the generation.

    Returns the new status, or ``None`` when nothing changes.  Upserts only: a condition removed
    from spec keeps its stale status copy (and then blocks as outdated, as in OLM).
    """
    spec_conditions = entries(dig(oc, "spec", "conditions"))
    if not spec_conditions:
        return None
    generation = dig(oc, "metadata", "generation")
    status = dict(mapping(oc.get("status")))
    current = [dict(c) for c in entries(status.get("conditions"))]
    changed = False
    for cond in spec_conditions:
        existing = _find(current, cond.get("type"))
        wanted = {**cond, "observedGeneration": generation}
        if existing is None:
            current.append(wanted)
            changed = True
        elif existing.get("status") != cond.get("status") or existing.get("observedGeneration") != generation or any(
                existing.get(k) != cond.get(k) for k in ("reason", "message")):
            existing.clear()
            existing.update(wanted)
            changed = True
    if not changed:
        return None
    status["conditions"] = current
    return status


def service_account(deployment: dict[str, Any]) -> str:
    spec = mapping(dig(deployment, "spec", "template", "spec"))
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    return account if isinstance(account, str) and account else "default"


def operator_condition(name: str, namespace: str, deployments: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The OperatorCondition for the operator Deployments ``deployments`` (all in ``namespace``).

    ``spec.deployments`` lists every one of them, ``spec.serviceAccounts`` their service accounts
    in the same order, each once (OLM's generator: the CSV's install deployments, and the service
    accounts of its permissions).
    """
    accounts = list(dict.fromkeys(service_account(d) for d in deployments))
    return {"apiVersion": OC_API_VERSION, "kind": OC_KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: name}},
            "spec": {"deployments": [string(dig(d, "metadata", "name")) for d in deployments],
                     "serviceAccounts": accounts}}


def owner_reference(oc: dict[str, Any]) -> dict[str, Any]:
    """OLM's ``ownerutil.AddOwner(obj, operatorCondition, false, true)``: the controller, not blocking deletion."""
    meta = mapping(oc.get("metadata"))
    return {"apiVersion": string(oc.get("apiVersion")) or OC_API_VERSION, "kind": OC_KIND,
            "name": string(meta.get("name")), "uid": string(meta.get("uid")),
            "controller": True, "blockOwnerDeletion": False}


def is_owned_by(obj: dict[str, Any], oc: dict[str, Any]) -> bool:
    """OLM's ``ownerutil.IsOwnedBy``: some ownerReference carries the OperatorCondition's uid."""
    uid = dig(oc, "metadata", "uid")
    return bool(uid) and any(ref.get("uid") == uid for ref in entries(dig(obj, "metadata", "ownerReferences")))


def rbac_objects(oc: dict[str, Any]) -> list[dict[str, Any]]:
    """The Role and RoleBinding of the live OperatorCondition ``oc``: only its service accounts may get,
    update and patch it (not its status), and both are owned by it."""
    meta = mapping(oc.get("metadata"))
    name, namespace = string(meta.get("name")), string(meta.get("namespace"))
    accounts = [a for a in (dig(oc, "spec", "serviceAccounts") or []) if isinstance(a, str)]

    def owned() -> dict[str, Any]:
        return {"name": name, "namespace": namespace, "labels": {LABEL: name},
                "ownerReferences": [owner_reference(oc)]}

    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": owned(),
         "rules": [{"verbs": ["get", "update", "patch"], "apiGroups": [OC_GROUP],
                    "resources": ["operatorconditions"], "resourceNames": [name]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": owned(),
         "subjects": [{"kind": "ServiceAccount", "name": a, "namespace": namespace} for a in accounts],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}},
    ]


def inject_env(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    """``OPERATOR_CONDITION_NAME`` in every container (not init containers), as OLM injects it."""
    spec = mapping(dig(deployment, "spec", "template", "spec"))
    for container in entries(spec.get("containers")):
        env = entries(container.get("env"))
        for i, item in enumerate(env):
            if item.get("name") == ENV_NAME:  # keep its place, override the value
                env[i] = {"name": ENV_NAME, "value": name}
                break
        else:
            env.append({"name": ENV_NAME, "value": name})
        container["env"] = env
    return deployment
