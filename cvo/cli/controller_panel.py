"""The live display of ``cvo upgrade`` when a controller (``cvo run``) runs the update: the same panel as a sweep
run here (:class:`cvo.cli.progress.LiveDisplay`), fed from what the cluster says instead of the sweep's events.

* **progress**: the ClusterVersion's ``Progressing`` message ("Working towards 4.17.0: 120 of 158 done (75%
  complete), …", pkg/cvo/status.go ``syncStatus``) gives done/total and the status line;
* **waiting on**: the target release's ClusterOperators the update has reached and that are not done, as the
  CVO judges them (pkg/cvo/internal/operatorstatus.go ``checkOperatorHealth``): since their condition's last
  transition, on the cluster's clock;
* **blocked**: ``ReleaseAccepted=False`` (``PreconditionChecks``) for the target image, and who blocks it, from
  the gates read again whenever the cluster changes (:func:`cvo.runner.upgrade.preflight`, read only).
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cvo.cluster.api import CLUSTER_OPERATOR, CLUSTER_VERSION, ReadOnlyCluster
from cvo.cluster.informer import Informer
from cvo.payload.conditions import find_condition
from cvo.payload.fields import dig, entries
from cvo.payload.graph import Mode, operator_versions
from cvo.runner.events import Progress, Waiting
from cvo.runner.health import check_operator_health

if TYPE_CHECKING:
    from cvo.cli.progress import LiveDisplay
    from cvo.clock import Clock
    from cvo.payload.loader import Release

_DONE = re.compile(r"(\d+) of (\d+) done")
_COUNTS = re.compile(r":? ?\d+ of \d+ done \(\d+% complete\),? ?")


def _since(condition: dict[str, Any] | None) -> datetime | None:
    from cvo.clock import parse_rfc3339

    try:
        return parse_rfc3339(str((condition or {}).get("lastTransitionTime") or ""))
    except ValueError:
        return None


class ControllerPanel:
    """What the panel shows, kept from the ClusterVersion (:meth:`on_cluster_version`) and the ClusterOperators
    (:meth:`on_cluster_operator`, an informer's listener) as the command follows the update."""

    def __init__(self, target: Release, clock: Clock) -> None:
        self.target = target
        self.clock = clock
        # the operators the update waits for, with the versions the CVO waits for (pkg/cvo/internal/operatorstatus.go)
        self.expected = {m.name: operator_versions(m) for m in target.manifests
                         if m.kind == "ClusterOperator" and m.group == "config.openshift.io"}
        self.cv: dict[str, Any] = {}
        self.cos: dict[str, dict[str, Any]] = {}
        self.blockers: list[str] = []
        self._said = ""  # the last status said as an event (its counters left out)

    def on_cluster_version(self, cv: dict[str, Any], display: LiveDisplay | None = None) -> None:
        self.cv = cv
        status = self.status()
        said = _COUNTS.sub(lambda m: ", " if m.end() < len(status) else "", status).strip(" ,:")
        if display is not None and said and said != self._said and not self.blocked():
            display.say(self.clock.now(), said)
        self._said = said

    def on_cluster_operator(self, name: str, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self.cos.pop(name, None)
        else:
            self.cos[name] = obj

    def _condition(self, type_: str) -> dict[str, Any]:
        return find_condition(entries(dig(self.cv, "status", "conditions")), type_) or {}

    def _started(self) -> bool:
        """Whether the controller works towards the target (it accepted it: the newest history entry is it)."""
        history = entries(dig(self.cv, "status", "history"))
        return bool(history) and history[0].get("image") == self.target.image

    def status(self) -> str:
        """The ClusterVersion's ``Progressing`` message (or, before the controller has taken the update, that it
        has not yet)."""
        if not self._started():
            return f"requested {self.target.version}: waiting for the controller to take it"
        return " ".join(str(self._condition("Progressing").get("message") or "").split())

    def blocked(self) -> str:
        """The preconditions' message while ``ReleaseAccepted=False`` (``PreconditionChecks``) for the target."""
        accepted = self._condition("ReleaseAccepted")
        message = str(accepted.get("message") or "")
        if (accepted.get("status") == "False" and accepted.get("reason") == "PreconditionChecks"
                and f'image="{self.target.image}"' in message):
            return message.split(": ", 1)[-1]
        return ""

    def progress(self) -> Progress:
        p = Progress(version=self.target.version, mode="update")
        if not self._started():
            return p
        found = _DONE.search(self.status())
        if found:
            p.done, p.total = int(found[1]), int(found[2])
        for name, versions in sorted(self.expected.items()):
            live = self.cos.get(name)
            if live is None:
                continue
            error = check_operator_health(name, versions, live, Mode.UPDATE)
            if error is None:
                continue
            conditions = entries(dig(live, "status", "conditions"))
            reached = [c for c in conditions if (c.get("type"), c.get("status")) in (
                ("Available", "False"), ("Degraded", "True"), ("Progressing", "True"))]
            if not reached:
                continue  # not reached yet: the update has not applied it
            since = _since(reached[0])
            message = str(reached[0].get("message") or "") or error.message
            error.message = message
            p.waiting[name] = Waiting("", name, since or self.clock.now(), error)
        return p


async def feed(cluster: ReadOnlyCluster, panel: ControllerPanel, display: LiveDisplay, force: bool) -> None:
    """Keep ``panel`` and ``display`` up to date until cancelled: the ClusterOperators as they change, and while
    the target is blocked, who blocks it (the gates, read only)."""
    from cvo.runner.upgrade import first_change, preflight

    operators = Informer(cluster, *CLUSTER_OPERATOR)
    operators.listeners.append(panel.on_cluster_operator)
    version = Informer(cluster, *CLUSTER_VERSION)
    version.listeners.append(lambda _name, cv: panel.on_cluster_version(cv or {}, display))
    watchers = [operators, version]
    for w in watchers:
        await w.start()
    try:
        while True:
            marks = [w.mark() for w in watchers]
            if panel.blocked():
                check = await preflight(cluster, panel.target, force, panel.clock.now())
                panel.blockers = display.blockers = [r.name for r in check.blockers]
            await first_change(watchers, marks)
    except asyncio.CancelledError:
        raise
    finally:
        for w in watchers:
            await w.stop()
