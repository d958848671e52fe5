"""What operators use to report to cvo: ClusterOperator status (and, later, OperatorConditions)."""
