"""End-to-end tests against a real kube-apiserver + etcd (see controlplane.py and hack/control-plane/README.md).

A package (unlike tests/), so that this directory's conftest.py is imported as ``e2e.conftest`` and
does not replace the ``conftest`` module the other test files import helpers from.
"""
