"""Sweep reports: what a sweep's events (or the cluster's records of its sweeps) say, as a timeline with its
critical path, for a person to look at.

Holds the JSON-lines events file (written with ``--events FILE``, read back together with
``--log-format json`` output), the timeline model built from events (nodes, tasks, ClusterOperator
waits, attempts, back-offs, failures and retries), the coarser one built from the records cvo keeps on the
cluster (``records``: the ClusterVersion's history, the sweep records, ClusterOperator conditions), the
critical path, the summary tables, the estimate for a plan before it runs, and the two renderings: one
self-contained HTML page and text.
May import: ``cvo.payload``, ``cvo.plan``, ``cvo.operators`` (behaviours, for estimates), ``cvo.status``
(the sweep records of ``cvo.status.update_records``, the expected durations of ``cvo.status.forecast``) and
``cvo.runner.sweep_events`` (the events themselves); never a cluster backend: the objects are read by the CLI.
"""
