"""The update graph: the update service's client, the graph's reader, the selection of updates, the
retrieval's reasons and the refetch policy.

No fixture of its own: the update service and the condition registry are in tests.support.update_service."""
