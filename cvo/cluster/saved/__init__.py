"""A read-only cluster over saved objects: ``oc get -o yaml`` files, ``kind: List``s, a must-gather's directory.

:mod:`cvo.cluster.saved.reader` reads files and directories of YAML or JSON objects under cvo's input
limits (one ``error:`` line naming the file and document for anything it cannot use);
:mod:`cvo.cluster.saved.cluster` serves them through the ``Cluster`` protocol, refusing every write.
A third backend beside :mod:`cvo.cluster.embedded` and :mod:`cvo.cluster.kube`; it imports neither.
May import: ``cvo.payload`` (input limits, the YAML/JSON decoder), ``cvo.objects`` (the kinds it checks) and
``cvo.cluster`` (the interface).
"""
