"""The ClusterVersion's status: its conditions and history in the CVO's conventions, and their rendering.

Holds the status computation from a sweep's progress (Available, Progressing, Failing, history entries)
and the kubectl-style text view of a ClusterVersion and its ClusterOperators.
May import: ``cvo.payload`` and ``cvo.gates``.
"""
