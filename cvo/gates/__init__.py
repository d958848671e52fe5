"""The upgrade gates: whether an upgrade may start, and who blocks it.

Holds the preconditions (Upgradeable with the CVO's minor/patch rules, the release's signature-free
checks), the Upgradeable aggregation over ClusterOperators, and OperatorConditions with OLM's rules
(an admin's ``spec.overrides`` win).  Decisions over objects already read; no I/O.
May import: ``cvo.payload`` and the types of ``cvo.cluster.api``.
"""
