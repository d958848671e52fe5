"""The upgrade gates: whether an upgrade may start, and who blocks it.

Holds the preconditions (Upgradeable with the CVO's minor/patch rules, the graph's recommendation, the
release's signature-free checks), the risk sources of pkg/risk (``risks/``: updating, overrides,
deletion, adminack, upgradeable, alert, aggregate, and cvo's OperatorConditions), the ``Upgradeable``
condition derived from them, and OperatorConditions with OLM's rules (an admin's ``spec.overrides``
win).  Decisions over objects already read or handed over by the caller's readers; no I/O of its own.
May import: ``cvo.payload``, ``cvo.objects``, ``cvo.updates`` and the types of ``cvo.cluster.api``.
"""
