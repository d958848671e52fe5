"""Operators: the simulated ones that stand in for a payload's real operators, and the library real ones use.

Holds the behaviour models (``--operators`` files), the simulator that watches Deployments and reports
ClusterOperator and OperatorCondition status (``rollouts.py``: on a cluster whose controllers act, only once
the operator's Deployments have really rolled out), the stand-alone process of ``cvo sim-operators``, and
:mod:`cvo.operators.library` for operators that report to cvo.
May import: ``cvo.payload``, ``cvo.objects``, ``cvo.cluster`` (the interface, never a backend), ``cvo.gates``,
``cvo.status``.
"""
