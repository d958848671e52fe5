"""Scenarios: YAML files that replay an install or upgrade on the embedded cluster and check what happened.

Holds the scenario model (its parser and validation), the replay on a virtual clock, and the expectations.
May import: every package below it (``payload`` … ``runner``) and ``cvo.cluster.embedded``.
"""
