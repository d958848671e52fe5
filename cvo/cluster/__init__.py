"""The one interface between cvo and a cluster, and what works on any backend.

:mod:`cvo.cluster.api` is the interface, split by role (``Reader``, ``Writer``, ``StatusWriter``,
``Watcher``; ``Cluster`` is all of them, ``ReadOnlyCluster`` what saved objects are), the optional
capabilities, and the API error kinds with the one definition of transient.  :mod:`cvo.cluster.intercept`
is the base of every wrapper and the write guard; :mod:`cvo.cluster.persist` retries what is transient
within a budget; :mod:`cvo.cluster.landed` tells whether a write whose response was lost landed;
:mod:`cvo.cluster.informer` is the one watch loop (waiters, listeners and handlers).  The backends are the
sub-packages :mod:`cvo.cluster.embedded`, :mod:`cvo.cluster.kube` and :mod:`cvo.cluster.saved`; none imports another.
May import: ``cvo.payload`` (object shapes) only.
"""
