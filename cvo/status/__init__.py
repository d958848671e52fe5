"""The ClusterVersion's status: its conditions and history in the CVO's conventions, and their rendering.

Holds the status computation from a sweep's progress (Available, Progressing, Failing, history entries)
and the kubectl-style text view of a ClusterVersion and its ClusterOperators (and a requested release not
accepted yet: ``pending_release``); the ``oc adm upgrade status`` assessment (``upgrade_status``, Go's durations and tab writer in ``godur``), its text and data
(``upgrade_text``), the graph-aware forecast of an update's end (``forecast``) and the update-duration
records it learns from (``update_records``: their storage format on the cluster); ``oc adm upgrade recommend``'s
precheck (``recommend``, over the alerts answer read by ``recommend_alerts``) Go's buffered tab writer
(``tabwriter``) and Go's ``sort.Slice`` (``gosort``).
May import: ``cvo.payload``, ``cvo.objects``, ``cvo.updates``, ``cvo.monitoring`` and ``cvo.gates``.
"""
