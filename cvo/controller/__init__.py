"""The controller: cvo as a long-running, leader-elected, observable operator (``cvo run``).

Holds ``cvo run``'s wiring from its options (:mod:`cvo.controller.start`), the level-triggered loop over the
sync worker (:mod:`cvo.controller.loop`, deciding through :mod:`cvo.runner.decide`), leader election on a Lease with client-go's semantics
(:mod:`cvo.controller.lease`) and the fenced cluster that writes only while leading
(:mod:`cvo.controller.fence`), one replica's life (:mod:`cvo.controller.replica`), and the CVO's metrics
with the /healthz, /readyz and /metrics endpoint (:mod:`cvo.controller.metrics`, :mod:`cvo.controller.http`),
and a command as the controller's client (:mod:`cvo.controller.client`: is one leading, what has it made
of an update).
The CVO's counterparts: ``pkg/cvo/cvo.go``, ``pkg/start/start.go``, ``pkg/cvo/metrics.go``.
May import: ``cvo.runner`` and everything it may import (``cvo.payload``, ``cvo.cluster``, ``cvo.plan``,
``cvo.gates``, ``cvo.status``, ``cvo.operators``); never a backend (the CLI picks one).
"""
