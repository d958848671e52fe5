"""Choosing and opening the cluster a command talks to.

The default is the embedded simulated cluster, persisted to a state file so that ``cvo install``,
``cvo upgrade`` and ``cvo status`` see one cluster, with simulated operators running beside the
sweep on a virtual clock.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from cvo.cli.common import UsageError
from cvo.clock import Clock, parse_rfc3339
from cvo.cluster.api import Cluster
from cvo.payload.loader import Release
from cvo.sim.behaviour import Behaviours


def default_state_path() -> Path:
    if env := os.environ.get("CVO_STATE"):
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "cvo" / "sim-cluster.json"


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cluster")
    group.add_argument("--state", type=Path, default=None, metavar="FILE",
                       help="state file of the embedded simulated cluster (default: $CVO_STATE or "
                            "~/.local/state/cvo/sim-cluster.json); 'none' keeps it in memory")
    group.add_argument("--speed", type=float, default=None, metavar="X",
                       help="simulated seconds per real second (default: as fast as possible)")


def add_behaviour_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--operators", type=Path, metavar="FILE",
                        help="YAML file of simulated operator behaviours (see docs/scenarios.md)")


def state_path(args: argparse.Namespace) -> Path | None:
    if args.state is not None and str(args.state) == "none":
        return None
    return args.state or default_state_path()


def saved_time(path: Path | None) -> datetime | None:
    """The simulated wall-clock time the state file was saved at: the next command continues from it."""
    if path is None or not path.exists():
        return None
    try:
        data = orjson.loads(path.read_bytes())
        return parse_rfc3339(data["clock_time"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # SimCluster.load reports a corrupt file properly


def load_behaviours(args: argparse.Namespace) -> Behaviours:
    path: Path | None = getattr(args, "operators", None)
    if path is None:
        return Behaviours()
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
        return Behaviours.parse(data, f"{path}")
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None
    except (yaml.YAMLError, ValueError) as err:
        raise UsageError(f"{path}: {str(err).splitlines()[0]}") from None


@dataclass
class Backend:
    cluster: Cluster
    clock: Clock
    description: str
    simulator: object | None = None

    def register(self, release: Release) -> None:
        if self.simulator is not None:
            self.simulator.register_release(release)  # type: ignore[attr-defined]


@asynccontextmanager
async def open_backend(args: argparse.Namespace, clock: Clock, behaviours: Behaviours | None = None,
                       simulate_operators: bool = True) -> AsyncIterator[Backend]:
    from cvo.sim.cluster import SimCluster
    from cvo.sim.operators import OperatorSimulator

    path = state_path(args)
    try:
        cluster = SimCluster.load(path, clock) if path is not None and path.exists() else SimCluster(clock=clock, path=path)
    except ValueError as err:
        raise UsageError(str(err)) from None
    description = f"embedded simulated cluster (state: {path})" if path else "embedded simulated cluster (in memory)"
    simulator = OperatorSimulator(cluster, clock, behaviours) if simulate_operators else None
    backend = Backend(cluster, clock, description, simulator)
    try:
        yield backend
    finally:
        if simulator is not None:
            await simulator.stop()
        await cluster.close()
