"""cvo: the OpenShift Cluster Version Operator's payload sweep, as a tool you can run and test."""

__version__ = "0.1.0"
