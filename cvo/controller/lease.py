"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

This ports ``k8s.io/client-go/tools/leaderelection`` (``leaderelection.go``, ``resourcelock/leaselock.go``)
as the CVO uses it (``pkg/start/start.go``: lock ``openshift-cluster-version/version``, lease duration
137 s, renew deadline 107 s, retry period 26 s, released on a clean shutdown):

* **acquire**: every ``retry_period`` (jittered by up to 20 %, ``wait.JitterUntil``) try to take the
  lease.  A lease held by another identity is free only once it has not changed for its
  ``leaseDurationSeconds``, measured on *this* replica's monotonic clock from when it last saw the
  record change (``observedTime``), never from the record's own ``renewTime``: clocks of two
  replicas need not agree.  An empty ``holderIdentity`` (a released lease) is free at once.
* **renew**: the leader renews every ``retry_period``; when no renewal has succeeded for
  ``renew_deadline`` it has lost the lease.  cvo counts the deadline from the last successful
  renewal, not from the start of the failing round as client-go does, so it gives up up to one
  retry period *earlier*: never later.
* **fencing**: :meth:`LeaderElector.may_write` is true only while the last renewal is younger than
  ``renew_deadline``; :class:`cvo.controller.fence.FencedCluster` refuses every write otherwise, so a
  replica that lost the lease (stopped, partitioned, starved) writes nothing after it, even before
  its renew loop notices.  Because ``renew_deadline < lease_duration``, the old leader stops writing
  before another replica can take the lease.
* **release**: on a clean shutdown the leader writes ``holderIdentity: ""`` and
  ``leaseDurationSeconds: 1`` (client-go's ``release()``), so the next replica takes over at its
  next retry instead of after a full lease duration.

Writes are optimistic (``resourceVersion``): two replicas racing for a free lease get one success
and one Conflict.  Times: ``renewTime``/``acquireTime`` are the injected clock's wall time
(``MicroTime``); every wait uses the running loop's clock, so the unit tests run on virtual time.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cvo.clock import Clock
from cvo.cluster.api import ApiError, Cluster, Object, Ref
from cvo.log import get_logger

log = get_logger("cvo.controller.lease")

LEASE_API_VERSION = "coordination.k8s.io/v1"
LEASE = ("coordination.k8s.io", "Lease")
LEASE_NAMESPACE = "openshift-cluster-version"  # the CVO's lock: openshift-cluster-version/version
LEASE_NAME = "version"
JITTER_FACTOR = 1.2  # leaderelection.JitterFactor


@dataclass(frozen=True)
class LeaseTimings:
    """client-go's ``LeaderElectionConfig`` durations, in seconds; the defaults are the CVO's."""

    lease_duration: float = 137.0  # how long a non-leader waits after the last change before taking over
    renew_deadline: float = 107.0  # how long the leader keeps trying to renew before it gives up
    retry_period: float = 26.0  # between tries, to acquire and to renew

    def problem(self) -> str | None:
        """Why client-go's ``NewLeaderElector`` would refuse these, or ``None``."""
        if self.lease_duration <= self.renew_deadline:
            return "the lease duration must be greater than the renew deadline"
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            return f"the renew deadline must be greater than {JITTER_FACTOR} × the retry period"
        if min(self.lease_duration, self.renew_deadline, self.retry_period) < 1:
            return "the lease duration, renew deadline and retry period must be at least 1s"
        return None


class LeaseLost(Exception):
    """This replica is not (or no longer) the leader: it must not write."""


def micro_time(clock: Clock) -> str:
    """``metav1.MicroTime`` as the API server serialises it: RFC 3339 with microseconds, in UTC."""
    return clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Record:
    """``LeaderElectionRecord``: the parts of a Lease's spec the election reads."""

    holder: str
    duration: int
    transitions: int

    @classmethod
    def of(cls, lease: Object) -> Record:
        spec = lease.get("spec") if isinstance(lease.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        duration = spec.get("leaseDurationSeconds")
        transitions = spec.get("leaseTransitions")
        return cls(str(spec.get("holderIdentity") or ""),
                   duration if isinstance(duration, int) and not isinstance(duration, bool) else 0,
                   transitions if isinstance(transitions, int) and not isinstance(transitions, bool) else 0)


def lease_ref(namespace: str = LEASE_NAMESPACE, name: str = LEASE_NAME) -> Ref:
    return Ref(*LEASE, namespace, name)


class LeaderElector:
    """One replica's view of the election.  See the module docstring for the rules."""

    def __init__(self, cluster: Cluster, clock: Clock, identity: str, timings: LeaseTimings | None = None,
                 ref: Ref | None = None, rng: random.Random | None = None) -> None:
        self.cluster = cluster  # the raw cluster: the lease's own writes are never fenced
        self.clock = clock
        self.identity = identity
        self.timings = timings or LeaseTimings()
        self.ref = ref or lease_ref()
        self._rng = rng or random.Random()
        self._observed_raw: Any = None  # the spec as last seen (observedRawRecord)
        self._observed: Record | None = None
        self._observed_at = 0.0  # loop time when the record last changed (observedTime)
        self._renewed_at: float | None = None  # loop time of the last successful acquire or renew
        self.transitions_seen = 0
        self._leading = False
        self._last_error = ""
        self.on_change: list[Callable[[bool], None]] = []  # told True when leading starts, False when it ends

    # --- state --------------------------------------------------------------------------------

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def may_write(self) -> bool:
        """Whether this replica leads now: its last renewal is younger than the renew deadline."""
        return self._renewed_at is not None and self._now() < self._renewed_at + self.timings.renew_deadline

    def check(self) -> None:
        """:class:`LeaseLost` unless :meth:`may_write`."""
        if not self.may_write():
            raise LeaseLost(f"{self.identity} does not hold the lease {self.ref.namespace}/{self.ref.name}")

    @property
    def leader(self) -> str:
        """The holder this replica last saw (``""``: none)."""
        return self._observed.holder if self._observed is not None else ""

    def _set_leading(self, leading: bool) -> None:
        was, self._leading = self._leading, leading
        if not leading:
            self._renewed_at = None
        if was != leading:
            for callback in list(self.on_change):
                callback(leading)

    # --- one try (tryAcquireOrRenew) ---------------------------------------------------------------

    def _spec(self, acquire_time: str, transitions: int) -> dict[str, Any]:
        now = micro_time(self.clock)
        return {"holderIdentity": self.identity, "leaseDurationSeconds": max(1, round(self.timings.lease_duration)),
                "acquireTime": acquire_time or now, "renewTime": now, "leaseTransitions": transitions}

    async def try_acquire_or_renew(self) -> bool:
        """One ``tryAcquireOrRenew``: True when this replica holds the lease afterwards.

        API errors (the server down, a Conflict with another replica's write) are a failed try.
        """
        started = self._now()
        try:
            lease = await self.cluster.get(self.ref)
            if lease is None:
                created = await self.cluster.create({
                    "apiVersion": LEASE_API_VERSION, "kind": "Lease",
                    "metadata": {"name": self.ref.name, "namespace": self.ref.namespace},
                    "spec": self._spec("", 0)})
                self._observe(created, started)
                self._renewed_at = started
                return True
            raw = lease.get("spec")
            if raw != self._observed_raw:
                self._observe(lease, started)
            assert self._observed is not None
            old = self._observed
            mine = old.holder == self.identity
            if old.holder and not mine and started < self._observed_at + old.duration:
                return False  # held by another replica, and fresh
            spec = raw if isinstance(raw, dict) else {}
            acquire = str(spec.get("acquireTime") or "") if mine else ""
            transitions = old.transitions if mine else old.transitions + 1
            updated = await self.cluster.update({**lease, "spec": {**spec, **self._spec(acquire, transitions)}})
        except ApiError as err:
            fields = {"lease": f"{self.ref.namespace}/{self.ref.name}", "error": str(err), "kind": err.kind.value}
            if str(err) != self._last_error:  # say it once, not every retry period
                log.warning("lease.try_failed", **fields)
            else:
                log.debug("lease.try_failed", **fields)
            self._last_error = str(err)
            return False
        self._last_error = ""
        self._observe(updated, started)
        self._renewed_at = started  # the write was sent at ``started`` at the latest: count from then
        return True

    def _observe(self, lease: Object, when: float) -> None:
        self._observed_raw = lease.get("spec")
        self._observed = Record.of(lease)
        self._observed_at = when
        self.transitions_seen = self._observed.transitions

    # --- the loops ---------------------------------------------------------------------------

    def _jittered(self) -> float:
        return self.timings.retry_period * (1 + (JITTER_FACTOR - 1) * self._rng.random())

    async def acquire(self) -> None:
        """Return once this replica holds the lease (``acquire``: a try every jittered retry period)."""
        first = True
        while True:
            if await self.try_acquire_or_renew():
                log.info("lease.acquired", lease=f"{self.ref.namespace}/{self.ref.name}", identity=self.identity,
                         transitions=self.transitions_seen)
                self._set_leading(True)
                return
            if first and self.leader:
                log.info("lease.held", lease=f"{self.ref.namespace}/{self.ref.name}", holder=self.leader)
            first = False
            await asyncio.sleep(self._jittered())

    async def hold(self) -> None:
        """Renew every retry period while leading; return when the lease is lost (``renew``).

        A renewal that fails is tried again every retry period until the renew deadline, counted
        from the last success, has passed: then the lease is lost and writes stop at once (they were
        fenced from the same instant already).
        """
        while True:
            await asyncio.sleep(self.timings.retry_period)
            while not await self.try_acquire_or_renew():
                if not self.may_write():
                    log.warning("lease.lost", lease=f"{self.ref.namespace}/{self.ref.name}", identity=self.identity,
                                holder=self.leader)
                    self._set_leading(False)
                    return
                assert self._renewed_at is not None
                left = self._renewed_at + self.timings.renew_deadline - self._now()
                await asyncio.sleep(max(0.0, min(self.timings.retry_period, left)))
            if not self.may_write():  # a renewal that took longer than the deadline does not count
                self._set_leading(False)
                return

    async def release(self) -> bool:
        """Give the lease up (``release``): ``holderIdentity: ""``, ``leaseDurationSeconds: 1``.

        Only if this replica still holds it; True when the release was written.
        """
        if not self._leading:
            return False
        self._set_leading(False)
        try:
            lease = await self.cluster.get(self.ref)
            if lease is None or Record.of(lease).holder != self.identity:
                return False
            now = micro_time(self.clock)
            old = lease.get("spec")
            spec = {**(old if isinstance(old, dict) else {}),
                    "holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now}
            await self.cluster.update({**lease, "spec": spec})
        except ApiError as err:
            log.warning("lease.release_failed", lease=f"{self.ref.namespace}/{self.ref.name}", error=str(err))
            return False
        log.info("lease.released", lease=f"{self.ref.namespace}/{self.ref.name}", identity=self.identity)
        return True


def lease_is_held(lease: Object | None, now_wall: float, skew: float = 0.0) -> str:
    """The holder of ``lease`` if its last renewal is younger than its duration by the wall clock
    ``now_wall`` (seconds since the epoch), else ``""``.

    For clients (``cvo upgrade`` asking whether a controller runs), which see the lease once and
    cannot observe it over a lease duration as a candidate does: they trust ``renewTime``, within
    ``skew`` seconds of clock difference.
    """
    if lease is None:
        return ""
    record = Record.of(lease)
    spec = lease.get("spec") if isinstance(lease.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    renewed = _parse_micro_time(str(spec.get("renewTime") or ""))
    if not record.holder or renewed is None:
        return ""
    return record.holder if now_wall < renewed + record.duration + skew else ""


def _parse_micro_time(text: str) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
