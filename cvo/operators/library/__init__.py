"""What operators use to report to cvo: ClusterOperator status and OperatorConditions, as operator-lib does.

The public import path for operator authors (docs/operator-library.md).
May import: ``cvo.payload``, ``cvo.cluster`` (the interface), ``cvo.gates``.
"""
