"""A command as the controller's client: is a controller leading, and what has it made of an update?

With a controller running, ``cvo upgrade --to DIR`` does what ``oc adm upgrade --to-image`` does on
OpenShift: it writes ``spec.desiredUpdate`` (:func:`cvo.runner.upgrade.set_desired_update`) and
follows the ClusterVersion's status (:func:`follow`) until the controller has completed the target,
or the target cannot be had, with the same report and exit codes as when the command sweeps itself.

* **Is one leading?**  :func:`lease_holder`: the Lease ``openshift-cluster-version/version`` is held
  and fresh by its ``renewTime`` (:func:`cvo.controller.lease.lease_is_held`, within
  :data:`LEASE_SKEW` of clock difference).  On the embedded cluster the CLI asks the sweep lock
  instead, which the leader holds while it leads and the kernel frees when it dies
  (:mod:`cvo.cluster.embedded.sweep_lock`): the store's clock is virtual and stands still when no
  process runs, so a dead controller's lease would look fresh there for ever.
* **What has it made of it?**  :func:`judge` reads one ClusterVersion: ``completed`` (the newest
  history entry is the target, ``Completed``, and ``status.desired`` is the target), ``failed``
  (``ReleaseAccepted=False`` with a retrieval step's reason for this image: the controller cannot
  read the release), ``superseded`` (``spec.desiredUpdate`` names another release now: someone
  retargeted), ``blocked`` (the gates hold it back with a block only ``--force`` passes: a rollback, a giant
  hop; waiting would not clear it), else ``working``.  :func:`at_timeout` decides what the command's ``--timeout`` ends
  in: ``blocked`` while the gates hold the target back (``ReleaseAccepted=False``,
  ``PreconditionChecks``: the command then says what blocks it, as it does when it sweeps itself),
  else ``failed`` with the ``Failing`` condition's message.

The spec stays as written whatever the command ends in (a timeout, Ctrl-C): the intent is the
cluster's, and the controller goes on with it, as the CVO does with ``oc adm upgrade``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import CLUSTER_VERSION, ApiError, ApiErrorKind, Cluster, Ref, cv_ref
from cvo.cluster.informer import Informer
from cvo.cluster.persist import Budget, steady
from cvo.controller.lease import lease_is_held, lease_ref
from cvo.gates.preconditions import force_only_named
from cvo.payload.conditions import find_condition
from cvo.payload.fields import dig
from cvo.runner.releases import Desired

LEASE_SKEW = 2.0  # seconds of clock difference between this command and the controller allowed for
RETRIEVE_REASONS = frozenset({"RetrievePayload", "LoadPayload", "VerifyPayloadVersion"})


async def lease_holder(cluster: Cluster, now_wall: float, ref: Ref | None = None) -> str:
    """The identity of the controller leading ``cluster`` now, or ``""``.

    A Lease the command may not read (Forbidden) or a cluster that does not serve Leases counts as no
    controller: the command then sweeps itself, as before ``cvo run`` existed.
    """
    try:
        lease = await cluster.get(ref or lease_ref())
    except ApiError as err:
        if err.kind in (ApiErrorKind.NOT_FOUND, ApiErrorKind.NO_KIND_MATCH, ApiErrorKind.FORBIDDEN):
            return ""
        raise
    return lease_is_held(lease, now_wall, LEASE_SKEW)


@dataclass(frozen=True)
class Verdict:
    state: str  # working, completed, failed, superseded, blocked
    message: str

    @property
    def final(self) -> bool:
        return self.state != "working"


def _conditions(cv: dict[str, Any]) -> list[dict[str, Any]]:
    found = dig(cv, "status", "conditions")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _condition(cv: dict[str, Any], type_: str) -> dict[str, Any]:
    return find_condition(_conditions(cv), type_) or {}


def describe(cv: dict[str, Any]) -> str:
    """One line on where the ClusterVersion is: Progressing's message, and what holds it back."""
    parts = []
    progressing = _condition(cv, "Progressing")
    if progressing.get("message"):
        parts.append(str(progressing["message"]))
    accepted = _condition(cv, "ReleaseAccepted")
    if accepted.get("status") == "False":
        parts.append(f"ReleaseAccepted=False ({accepted.get('reason', '')}): {accepted.get('message', '')}")
    failing = _condition(cv, "Failing")
    if failing.get("status") == "True":
        parts.append(f"Failing ({failing.get('reason', '')}): {failing.get('message', '')}")
    return "; ".join(parts) or "no status yet"


def judge(cv: dict[str, Any] | None, image: str) -> Verdict:
    """What the ClusterVersion says of the update to ``image`` (see the module docstring)."""
    cv = cv or {}
    desired = Desired.of(dig(cv, "spec", "desiredUpdate"))
    if desired is None or desired.image != image:
        now = "nothing" if desired is None else (desired.image or f"version {desired.version}")
        return Verdict("superseded", f"spec.desiredUpdate was changed to {now} while the command followed "
                                     f"the update to {image}")
    history = dig(cv, "status", "history")
    head = history[0] if isinstance(history, list) and history and isinstance(history[0], dict) else {}
    running = str(dig(cv, "status", "desired", "image") or "")
    if head.get("image") == image and head.get("state") == "Completed" and running == image:
        return Verdict("completed", str(_condition(cv, "Available").get("message") or f"Done applying {image}"))
    accepted = _condition(cv, "ReleaseAccepted")
    message = str(accepted.get("message") or "")
    if (accepted.get("status") == "False" and accepted.get("reason") in RETRIEVE_REASONS
            and f'image="{image}"' in message):
        return Verdict("failed", f"the controller cannot use the release: {message}")
    if _blocked_by_preconditions(accepted, image) and (named := force_only_named(message)):
        version = desired.version or image
        return Verdict("blocked", f"upgrade to {version} is blocked: {message.split(': ', 1)[-1]}\n"
                                  f"{', '.join(named)} blocks for good: waiting would not clear it, only --force "
                                  f"passes it; the controller keeps spec.desiredUpdate ('cvo upgrade --clear' "
                                  f"withdraws it)")
    return Verdict("working", describe(cv))


def _blocked_by_preconditions(accepted: dict[str, Any], image: str) -> bool:
    return (accepted.get("status") == "False" and accepted.get("reason") == "PreconditionChecks"
            and f'image="{image}"' in str(accepted.get("message") or ""))


def at_timeout(cv: dict[str, Any] | None, version: str, image: str, after: str) -> Verdict:
    """What a command that stops following after ``after`` (its ``--timeout``, on the wall clock) reports: blocked
    by the gates (and that the timeout ended the wait, how to wait longer), or failed."""
    cv = cv or {}
    accepted = _condition(cv, "ReleaseAccepted")
    if _blocked_by_preconditions(accepted, image):
        blocked = str(accepted["message"]).split(": ", 1)[-1]
        return Verdict("blocked", f"upgrade to {version} is blocked: {blocked}\n"
                                  f"the --timeout of {after} (on the wall clock: the command follows the controller in "
                                  f"real time) ended the wait; the controller goes on with spec.desiredUpdate ('cvo "
                                  f"upgrade --clear' withdraws it). To wait longer: a longer --timeout, or --timeout 0 "
                                  f"for no limit")
    failing = _condition(cv, "Failing")
    if failing.get("status") == "True" and failing.get("message"):
        return Verdict("failed", str(failing["message"]))
    return Verdict("failed", f"the controller had not completed {version} after {after}: {describe(cv)}")


async def follow(cluster: Cluster, version: str, image: str, timeout: float | None, after: str,
                 on_change: Callable[[Verdict, dict[str, Any]], None] | None = None,
                 budget: Budget | None = None) -> tuple[Verdict, dict[str, Any]]:
    """Watch the ClusterVersion until :func:`judge` is final, or ``timeout`` seconds (then :func:`at_timeout`).

    ``on_change`` is told each new :class:`Verdict` (its message changed).  Reads ride out a failing
    server within ``budget``.  Returns the verdict and the ClusterVersion it was read from.
    """
    reads = steady(cluster, budget)
    watch = Informer(reads, *CLUSTER_VERSION)
    await watch.start()
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    last = ""
    try:
        while True:
            mark = watch.mark()
            cv = await reads.get(cv_ref()) or {}
            verdict = judge(cv, image)
            if on_change is not None and verdict.message != last:
                on_change(verdict, cv)
            last = verdict.message
            if verdict.final:
                return verdict, cv
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return at_timeout(cv, version, image, after), cv
            await watch.wait_change(None, mark, remaining)
    finally:
        await watch.stop()
