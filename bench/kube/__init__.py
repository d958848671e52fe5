"""``make bench`` section "kube": the corpus swept into the real test control plane, against kubectl.

Each run gets a fresh control plane (etcd + kube-apiserver, ``tests/e2e/controlplane.py``), so
neither tool meets a warm server.  cvo runs ``cvo install`` as a whole process with
``cvo sim-operators`` reporting every ClusterOperator at once (``default: {delay: 0s}``); kubectl
runs ``kubectl apply --server-side`` over the very same files.  A separate run upgrades to a
derived next version in update mode to measure how fast cvo reacts when a ClusterOperator it
waits on becomes ready.

The upgrade target is not given to sim-operators with ``--release``: it loads the target from the
ClusterVersion when ``cvo upgrade`` sets it, as a user's sim-operators would.

A cvo run takes 15–60 s (one attempt, or two with the CVO's back-off of about 25 s between them;
before the ClusterVersion status writes were serialised, self-inflicted Conflicts made it ~6.5 min),
a kubectl run 1–2 minutes (2–3 passes): ``--repeats 7`` means about 20 minutes.

The package, by concern: ``settings`` (paths, tools, time limits), ``prepare`` (the input corpus and
the upgrade target), ``processes`` (timed and time-stamped child processes), ``server`` (the control
plane: start, query, request counts, bootstrap, sim-operators), ``events`` (cvo's log and where a sweep's
time went), ``tool_runs`` (one run of cvo, one of kubectl), ``reaction`` (the reaction-delay run and its
analysis), ``render`` (the section's text) and ``section`` (``kube_section``, the runner's entry point).
"""

from __future__ import annotations

from bench.kube.section import kube_section

__all__ = ["kube_section"]
