"""The sync worker: sweeps a release's task graph into a cluster, as the CVO's ``pkg/cvo`` does.

Holds the worker (apply with retries and back-off, waits on ClusterOperators, the ClusterVersion status
writer and its report filter), the upgrade controller (preconditions, then the sweep), the checks before
a sweep starts, the one decision of what sweep a ClusterVersion calls for and what runs it (``decide``,
with ``releases``: finding the desired release), and the catalogue of the events a sweep reports
(``sweep_events``).  Talks to one :class:`cvo.cluster.api.Cluster` and never knows which backend it is.
May import: ``cvo.payload``, ``cvo.cluster`` (the interface and its wrappers), ``cvo.plan``, ``cvo.gates``,
``cvo.status``, ``cvo.operators``, ``cvo.updates`` (``feature_gates``: the CVO's gates as the cluster says them).
"""
