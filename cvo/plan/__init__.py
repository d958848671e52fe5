"""The sweep plan: what would be applied, in which order, and its lint — before anything touches a cluster.

Holds plan building (nodes, waves, the ClusterOperators a node waits on), its text/JSON/DOT/mermaid
output, and the payload lint.  Pure functions over :mod:`cvo.payload` data.
May import: ``cvo.payload`` only (no cluster, no runner).
"""
