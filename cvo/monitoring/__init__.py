"""The cluster's monitoring as cvo reads it: a Prometheus HTTP API client (instant queries, firing alerts)
with the CVO's flags (URL, bearer token file, CA bundle): ``client.py`` (the requests, their deadline and
body cap), ``answers.py`` (the readers of what the API answers, and promql.go's one-sample-of-0-or-1 rule).

May import: ``cvo.payload`` (input limits) only.
"""
