"""Where the kube bench finds things and how long it waits: paths, the tools, time limits."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ocp-5.0-nightly"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

KUBECTL = Path("/usr/bin/kubectl")
TIMEOUT = "10m"  # cvo's own --timeout for a sweep
PROCESS_TIMEOUT = 900.0  # seconds: a tool run that takes longer is killed and reported
READY_TIMEOUT = 120.0  # seconds for sim-operators to start watching
BEHAVIOURS = "default:\n  delay: 0s\n"  # every simulated operator reports Available at once
