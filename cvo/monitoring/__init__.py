"""The cluster's monitoring as cvo reads it: a Prometheus HTTP API client (instant queries, firing alerts)
with the CVO's flags (URL, bearer token file, CA bundle) and an injected clock.

May import: ``cvo.payload`` (input limits) only.
"""
