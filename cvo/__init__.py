"""cvo: the OpenShift Cluster Version Operator's payload sweep, as a tool you can run and test.

The packages, from the bottom layer up: payload, cluster (and its backends embedded and kube), plan, gates,
status, operators, runner, scenario, cli; docs/architecture.md has the map.  Only ``cvo.log`` and
``cvo.clock`` sit here at the top, shared by every layer.
"""

__version__ = "0.1.0"
