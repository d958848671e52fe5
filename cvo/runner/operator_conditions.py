"""cvo doing OLM's part for the operators it deploys (operator-lifecycle-manager pkg/controller/operators/operatorcondition{,generator}_controller.go).

* Before an operator Deployment is applied: the OperatorCondition of its ClusterOperator in the
  Deployment's namespace, listing *every* operator Deployment of that ClusterOperator there and
  their service accounts (OLM's generator lists every deployment of the CSV), so that the first
  Deployment applied writes it and the others find it as they want it: one write, one generation,
  per sweep; a Role that allows only get/update/patch of that object and a RoleBinding to those
  service accounts, both owned by the OperatorCondition (OLM's ``ensureOperatorConditionRole`` and
  ``ensureOperatorConditionRoleBinding``: put back when their rules, subjects or owner drift); and
  ``OPERATOR_CONDITION_NAME`` in the Deployment.  An existing OperatorCondition keeps
  ``spec.conditions`` and ``spec.overrides``; only ``spec.deployments`` and
  ``spec.serviceAccounts`` are put back when they drift.
* While cvo runs: ``spec.conditions`` (what a v2 operator writes) are copied into
  ``status.conditions`` with ``observedGeneration``, as OLM's operatorcondition controller does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref, WatchEvent
from cvo.cluster.informer import Backoff, Informer
from cvo.gates.olm import (
    OC_API_VERSION,
    OC_GROUP,
    OC_KIND,
    inject_env,
    is_owned_by,
    operator_condition,
    rbac_objects,
    synced_status,
    upgradeable_verdict,
)
from cvo.log import get_logger
from cvo.payload.fields import mapping, string
from cvo.payload.manifest import Manifest
from cvo.payload.operators import operator_deployments

log = get_logger("cvo.gates.olm")
RESYNC_DELAY = 2.0  # seconds before the status copy starts again after an API error


def _key(oc: dict[str, Any]) -> tuple[str, str]:
    meta = mapping(oc.get("metadata"))
    return string(meta.get("namespace")), string(meta.get("name"))


class OperatorConditionManager:
    def __init__(self, cluster: Cluster, manifests: Sequence[Manifest], *, create_first: bool = False) -> None:
        self.cluster = cluster
        # An install finds nothing there: create first, read only on AlreadyExists (a request less each).
        self.create_first = create_first
        self.owner: dict[tuple[str, str], str] = {}  # (namespace, deployment) -> ClusterOperator name
        # (namespace, ClusterOperator) -> its operator Deployments there, in payload order
        self.deployments: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for co, deployments in operator_deployments(manifests).items():
            for d in deployments:
                if (d.namespace, d.name) not in self.owner:  # a Deployment reports for one ClusterOperator
                    self.owner[(d.namespace, d.name)] = co
                    self.deployments.setdefault((d.namespace, co), []).append(d.obj)
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}  # one ensure at a time per OperatorCondition
        self._served: bool | None = None
        self._informer: Informer | None = None
        self._blocking: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> a blocking OC
        self._tracking = False  # the watch has listed them all and follows changes

    async def served(self) -> bool:
        if self._served is None:
            self._served = await self.cluster.serves(OC_API_VERSION, OC_KIND)
            if not self._served:
                log.info("the cluster does not serve OperatorConditions; operators cannot report Upgradeable there")
        return self._served

    def operator_for(self, m: Manifest) -> str | None:
        if m.kind != "Deployment" or m.group != "apps":
            return None
        return self.owner.get((m.namespace, m.name))

    async def prepare(self, m: Manifest) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
        """Ensure the OperatorCondition and its RBAC for Deployment ``m``; returns the env injector."""
        name = self.operator_for(m)
        if name is None or not await self.served():
            return None
        key = (m.namespace, name)
        async with self._locks.setdefault(key, asyncio.Lock()):
            oc = await self._ensure_condition(operator_condition(name, m.namespace, self.deployments[key]))
            for obj in rbac_objects(oc):
                await self._ensure_owned(obj, oc)
        return lambda deployment: inject_env(deployment, name)

    async def _ensure_condition(self, wanted: dict[str, Any]) -> dict[str, Any]:
        """The live OperatorCondition, created or with the generator's fields put back (OLM's
        ``ensureOperatorCondition``: ``spec.conditions`` and ``spec.overrides`` are never touched)."""
        ref = Ref.of(wanted)
        live = None if self.create_first else await self.cluster.get(ref)
        if live is None:
            try:
                return await self.cluster.create(wanted)
            except ApiError as err:
                if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                    raise
                live = await self.cluster.get(ref)  # created concurrently: take it as it is
                if live is None:
                    raise
        spec = dict(mapping(live.get("spec")))
        fields = {k: wanted["spec"][k] for k in ("deployments", "serviceAccounts")}
        if all(spec.get(k) == v for k, v in fields.items()):
            return live
        return await self.cluster.update({**live, "spec": {**spec, **fields}})

    async def _ensure_owned(self, obj: dict[str, Any], oc: dict[str, Any]) -> None:
        """Create the Role or RoleBinding, or put back its rules, subjects, roleRef and owner."""
        ref = Ref.of(obj)
        live = None if self.create_first else await self.cluster.get(ref)
        if live is None:
            try:
                await self.cluster.create(obj)
                return
            except ApiError as err:
                if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                    raise
                live = await self.cluster.get(ref)
                if live is None:
                    raise
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        owned = is_owned_by(live, oc)
        if owned and all(live.get(k) == v for k, v in body.items()):
            return
        meta = dict(mapping(live.get("metadata")))
        if not owned:  # as OLM: the owner references are replaced, not merged
            meta["ownerReferences"] = obj["metadata"]["ownerReferences"]
        await self.cluster.update({**live, **body, "metadata": meta})

    # --- OLM's status copy -------------------------------------------------------------------------

    async def start_sync(self) -> None:
        """OLM's controller loop, on an informer: an API error (the server down longer than the backend's
        retries) does not end it; it watches again and syncs everything again after a pause, as a
        controller's informer would."""
        if self._informer is None and await self.served():
            self._informer = Informer(self.cluster, OC_GROUP, OC_KIND, baseline=False, on_watch=self._resync,
                                      on_event=self._on_event, backoff=Backoff(RESYNC_DELAY, RESYNC_DELAY),
                                      task_name="operatorcondition sync")
            await self._informer.start()

    async def stop_sync(self) -> None:
        self._tracking = False
        if self._informer is not None:
            await self._informer.stop()
            self._informer = None

    async def sync_all(self) -> None:
        for oc in await self.cluster.list(OC_GROUP, OC_KIND):
            self._track(oc)
            await self._sync(oc)

    async def _resync(self, first: bool) -> None:
        await self.sync_all()
        self._tracking = True

    async def _on_event(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            self._blocking.pop(_key(event.obj), None)
        else:
            self._track(event.obj)
            await self._sync(event.obj)

    def _track(self, oc: dict[str, Any]) -> None:
        """Keep the OperatorConditions that block (only they can change the Upgradeable verdict)."""
        key = _key(oc)
        if upgradeable_verdict(oc).upgradeable:
            self._blocking.pop(key, None)
        else:
            self._blocking[key] = oc

    async def conditions(self) -> list[dict[str, Any]]:
        """The OperatorConditions that block upgrades now (OLM's verdict), from the watch once it runs."""
        if not await self.served():
            return []
        if self._informer is None or not self._tracking:
            return [oc for oc in await self.cluster.list(OC_GROUP, OC_KIND) if not upgradeable_verdict(oc).upgradeable]
        return list(self._blocking.values())

    async def sync_one(self, oc: dict[str, Any]) -> None:
        await self._sync(oc)

    async def _sync(self, oc: dict[str, Any]) -> None:
        status = synced_status(oc)
        if status is None:
            return
        try:
            await self.cluster.update_status({**oc, "status": status})
        except ApiError as err:
            if err.kind not in (ApiErrorKind.CONFLICT, ApiErrorKind.NOT_FOUND):
                raise
            # A newer version is on its way through the watch; it will be synced then.
