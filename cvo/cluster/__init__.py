"""The one interface between cvo and a cluster, and the wrappers that work on any backend.

:mod:`cvo.cluster.api` is the ``Cluster`` protocol (get, list, create, update, update_status, delete, watch,
serves) and the API error kinds; :mod:`cvo.cluster.persist` retries what is transient within a budget and
:mod:`cvo.cluster.landed` tells whether a write whose response was lost landed.  The two backends are the
sub-packages :mod:`cvo.cluster.embedded` and :mod:`cvo.cluster.kube`; neither imports the other.
May import: ``cvo.payload`` (object shapes) only.
"""
