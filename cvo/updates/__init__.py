"""The update graph and what a cluster may update to: the update service's graph (Cincinnati), the
releases and conditional updates the CVO derives from it, their risks, and the ``RetrievedUpdates`` and
``Recommended`` conditions.

``graph.py`` holds the graph (nodes, edges, conditional edges) as the update service serves it, and its
reader; ``model.py`` the releases, risks and conditional updates as a ClusterVersion's status holds them;
``client.py`` the HTTP exchange with the update service; ``select.py`` what a graph offers the cluster's
version; ``retrieve.py`` one retrieval with the ``RetrievedUpdates`` reasons; ``poll.py`` the state kept
between syncs and when to fetch again; ``conditions.py`` the matching rules' registry (Always, PromQL behind
the CVO's cache); ``evaluate.py`` the ``Recommended`` evaluation and what the status holds of it;
``featuregates.py`` the CVO's feature gates; ``validation.py`` the CVO's check of the ClusterVersion's spec
(the ``Invalid`` condition); ``build.py``, ``graph_data.py``, ``serve.py`` and ``path.py``
build a graph from releases and cincinnati-graph-data, serve it as the update service does, and plan paths
over it.
Decisions over data already read, and the update service's HTTP client; no cluster I/O.
May import: ``cvo.payload`` (semantic versions, limits) only; the typed views of a ClusterVersion's
conditional updates are ``cvo.objects.clusterversion``'s.
"""
