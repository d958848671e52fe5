"""The embedded simulated cluster: an in-memory Kubernetes API server (the default backend).

:class:`~cvo.cluster.embedded.server.SimCluster` implements :class:`cvo.cluster.api.Cluster` with the server-side
rules the CVO depends on:

* every write bumps one global ``metadata.resourceVersion``; ``metadata.generation`` starts at 1 and
  moves only when something outside ``metadata`` and ``status`` changes; a write that changes
  nothing is not a write (no new resourceVersion, no watch event);
* kinds with a status subresource drop ``status`` on create and keep the stored one on update;
  ``update_status`` changes only ``status``; a stale ``resourceVersion`` is a CONFLICT;
* a namespaced object needs its Namespace; deleting a Namespace deletes its contents, deleting a
  CRD stops serving its kind and deletes its instances, deleting an object deletes the objects it
  owns (``metadata.ownerReferences``) once none of their owners is left, as the garbage collector
  does, at once;
* only served kinds can be written (:mod:`cvo.cluster.embedded.kinds`); a CRD's kind is served once the CRD is
  Established (at once, or after ``crd_establish_delay`` seconds of loop time);
* watches, read hooks, injected failures and call statistics for the simulation and scenarios;
* with ``--state``, every write is committed to an SQLite store (:mod:`cvo.cluster.embedded.store`)
  that several cvo processes share safely, with optimistic concurrency across them.

May import: ``cvo.cluster`` (the interface), ``cvo.objects`` (the metadata schema a stored object must
satisfy) and ``cvo.payload`` (object shapes); never ``cvo.cluster.kube``.
"""

from cvo.cluster.embedded.kinds import ServedKinds
from cvo.cluster.embedded.server import DEFAULT_NAMESPACES, SimCluster, SimStats

__all__ = ["DEFAULT_NAMESPACES", "ServedKinds", "SimCluster", "SimStats"]
