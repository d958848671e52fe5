"""Whether an operator's Deployments have really rolled out, on a cluster whose controllers act.

A real operator reports its new version only once its own Deployment runs the new image (library-go
``pkg/operator/status`` version getters are fed by the operator process of the new release).  On a cluster
with a kube-controller-manager (kind, kwok, a real one) the simulated operators do the same: a ClusterOperator
moves to its release's versions and ``Available=True`` only when every Deployment of its component at that
release is rolled out by kstatus's rules (:mod:`cvo.objects.rollout`).  While one is not, the operator says
what it waits on in ``Progressing``; a Deployment that will not get there by itself (past its progress deadline)
makes it ``Degraded`` with the Deployment's own message, as an operator's workload controller does
(library-go ``pkg/operator/apiserver/controller/workload`` ``updateOperatorStatus``).

The embedded and the API-server-only clusters have no controllers: nothing there ever writes a Deployment's
status, so the behaviour's timer alone decides, as before.  :func:`controllers_act` tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import ApiError, ReadOnlyCluster, Ref
from cvo.objects.rollout import Rollout, RolloutStatus, compute

# kube-controller-manager's serviceaccount controller creates this in every namespace (pkg/controller/serviceaccount
# serviceaccounts_controller.go): it exists where controllers act, and nowhere else
DEFAULT_SERVICE_ACCOUNT = Ref("", "ServiceAccount", "default", "default")


async def controllers_act(cluster: ReadOnlyCluster) -> bool:
    """Whether a kube-controller-manager acts on ``cluster`` (its ``default/default`` ServiceAccount exists)."""
    try:
        return await cluster.get(DEFAULT_SERVICE_ACCOUNT) is not None
    except ApiError:
        return False


@dataclass(frozen=True)
class Progress:
    """Where the Deployments of one operator's release stand."""

    done: bool
    waiting: str = ""  # what it waits on: "deployment ns/name: Updated: 1/3"
    failed: str = ""  # a Deployment that will not roll out by itself: "deployment ns/name: <its message>"


def _what(ref: Ref) -> str:
    return f"deployment {ref.namespace}/{ref.name}"


def progress(lives: Mapping[Ref, Mapping[str, Any] | None]) -> Progress:
    """The rollout of ``lives`` (Deployments by ref, None where absent): the first failure, else the first that
    is not done, in ref order."""
    waiting = ""
    for ref in sorted(lives, key=lambda r: (r.namespace, r.name)):
        live = lives[ref]
        if live is None:
            waiting = waiting or f"{_what(ref)}: not found"
            continue
        rollout: Rollout = compute(live)
        if rollout.status is RolloutStatus.FAILED:
            return Progress(False, failed=f"{_what(ref)}: {rollout.condition_message or rollout.message}")
        if not rollout.current:
            waiting = waiting or f"{_what(ref)}: {rollout.message}"
    return Progress(not waiting, waiting=waiting)
