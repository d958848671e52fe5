"""Risk sources (pkg/risk/*): every reason not to update, as a risk with the versions it applies to.

Each source reads objects through callables it is given (the CVO's listers), decides with no I/O of its
own and answers :class:`cvo.updates.sources.RiskSource`'s ``risks(versions)``: ``updating``,
``overrides``, ``deletion``, ``adminack``, ``upgradeable`` (ClusterOperators) and ``alert`` as the CVO
at 6e71933 has them, plus cvo's ``operatorconditions`` (OLM's OperatorConditions, an admin's
``spec.overrides`` winning); ``aggregate`` joins them.
May import: ``cvo.updates``, ``cvo.objects``, ``cvo.payload`` and ``cvo.gates.olm``.
"""
