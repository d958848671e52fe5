"""``cvo upgrade accept RISK,RISK-…``: oc's ``oc adm upgrade accept`` (pkg/cli/admin/upgrade/accept/accept.go).

Edits ``spec.desiredUpdate.acceptRisks``: by default the names given are added and those ending in ``-``
removed; ``--replace`` sets the list to the names given; ``--clear`` empties it.  The cluster version
operator honours the list only under the ClusterUpdateAcceptRisks feature gate (TechPreviewNoUpgrade,
DevPreviewNoUpgrade); when the cluster's FeatureGate says it is off, cvo says so on stderr, and writes the
list anyway, as oc does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, cv_ref
from cvo.payload.conditions import current_version
from cvo.runner.feature_gates import read_gates

HELP = "accept risks exposed to conditional updates, like 'oc adm upgrade accept'"
DESCRIPTION = (
    "Manage update risk acceptance. Multiple risks are concatenated with comma. By default, the command appends "
    "the provided accepted risks into the existing list. If --replace is specified, the existing accepted risks "
    "will be replaced with the provided ones instead of appending. Placing \"-\" as suffix to an accepted risk "
    "will lead to removal if it exists and no-ops otherwise. If --replace is specified, the suffix \"-\" on the "
    "risks is not allowed. Passing --clear removes all existing accepted risks."
)
EXAMPLES = """\
Examples:
  # Accept RiskA and RiskB and stop accepting RiskC if accepted
  cvo upgrade accept RiskA,RiskB,RiskC-

  # Accept RiskA and RiskB and nothing else
  cvo upgrade accept --replace RiskA,RiskB

  # Accept no risks
  cvo upgrade accept --clear
"""
CONFLICT_RETRIES = 5


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-accept", prog="cvo upgrade accept", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    parser.add_argument("risks", metavar="RISK[-],…", nargs="*", help="risk names; a trailing '-' removes one")
    parser.add_argument("--replace", action="store_true", help="Replace existing accepted risks with new ones")
    parser.add_argument("--clear", action="store_true", help="Remove all existing accepted risks")
    add_backend_flags(parser)
    parser.set_defaults(func=run)


def parse_risks(args: Sequence[str], replace: bool, clear: bool) -> tuple[frozenset[str], frozenset[str]]:
    """accept.go ``Complete``: (names to add, names to remove), or :class:`UsageError` with oc's words."""
    if clear and replace:
        raise UsageError("--clear and --replace are mutually exclusive")
    if clear and args:
        raise UsageError(f"unexpected arguments: {list(args)}")
    if not clear and not args:
        raise UsageError("no positional arguments given")
    if len(args) > 1:
        raise UsageError("multiple positional arguments given")
    add: set[str] = set()
    remove: set[str] = set()
    for part in args[0].split(",") if args else []:
        trimmed = part.strip()
        if trimmed in ("-", ""):
            raise UsageError(f'illegal risk "{trimmed}"')
        if trimmed.endswith("-"):
            remove.add(trimmed.removesuffix("-"))
        else:
            add.add(trimmed)
    if add & remove:
        raise UsageError(f"requested risks with both Risk and Risk-: {','.join(sorted(add & remove))}")
    if replace and remove:
        raise UsageError("The suffix '-' on risks is not allowed if --replace is specified")
    return frozenset(add), frozenset(remove)


def accept_risks(existing: Sequence[str], replace: bool, clear: bool, add: frozenset[str],
                 remove: frozenset[str]) -> list[str]:
    """accept.go ``getAcceptRisks``: the existing names kept (unless replaced or removed), then the added
    ones in sorted order."""
    if clear:
        return []
    out = [] if replace else [name for name in existing if name not in remove]
    out += [name for name in sorted(add) if name not in out and name not in remove]
    return out


def _existing(cv: dict[str, Any]) -> list[str]:
    desired = (cv.get("spec") or {}).get("desiredUpdate")
    risks = desired.get("acceptRisks") if isinstance(desired, dict) else None
    return [r["name"] for r in risks or [] if isinstance(r, dict) and isinstance(r.get("name"), str)]


async def _write(cluster: Cluster, replace: bool, clear: bool, add: frozenset[str],
                 remove: frozenset[str]) -> tuple[list[str] | None, dict[str, Any]]:
    """The new list (None: unchanged) and the ClusterVersion, written with retries on conflicts."""
    for _attempt in range(CONFLICT_RETRIES):
        cv = await cluster.get(cv_ref())
        if cv is None:
            raise CommandFailed("no cluster version information available - you must be connected to an OpenShift "
                                "server to fetch the current version")
        existing = _existing(cv)
        wanted = accept_risks(existing, replace, clear, add, remove)
        if wanted == existing:
            return None, cv
        spec = dict(cv.get("spec") or {})
        desired = dict(spec.get("desiredUpdate") or {})
        if wanted:
            desired["acceptRisks"] = [{"name": n} for n in wanted]
        else:
            desired.pop("acceptRisks", None)  # the merge patch's null
        if desired:
            spec["desiredUpdate"] = desired
        else:
            spec.pop("desiredUpdate", None)
        try:
            return wanted, await cluster.update({**cv, "spec": spec})
        except ApiError as err:
            if err.kind != ApiErrorKind.CONFLICT:
                raise CommandFailed(f"unable to accept risks: {err}") from None
    raise CommandFailed(f"unable to accept risks: the ClusterVersion kept changing ({CONFLICT_RETRIES} conflicts)")


async def _gate_off_warning(cluster: Cluster, cv: dict[str, Any]) -> str:
    """A warning when the cluster's FeatureGate says the gate is off; "" when it is on or the cluster serves no
    FeatureGate (the embedded cluster: the gate is then ``cvo run``'s --feature-set/--feature-gates)."""
    history = (cv.get("status") or {}).get("history") or []
    gates, served = await read_gates(cluster, current_version([h for h in history if isinstance(h, dict)]))
    if gates.accept_risks or not served:
        return ""
    return ("warning: the ClusterUpdateAcceptRisks feature gate is off on this cluster (TechPreviewNoUpgrade or "
            "DevPreviewNoUpgrade turns it on): while spec.desiredUpdate.acceptRisks is set the cluster version operator "
            "finds the ClusterVersion invalid (Invalid=True) and takes no requested update")


def run(args: argparse.Namespace) -> int:
    add, remove = parse_risks(args.risks, args.replace, args.clear)
    options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(options)
    done: dict[str, Any] = {}

    async def main() -> None:
        async with open_backend(options, clock, simulate_operators=False, create=False, say_where=True) as backend:
            done["risks"], cv = await _write(backend.cluster, args.replace, args.clear, add, remove)
            done["warning"] = await _gate_off_warning(backend.cluster, cv)

    run_loop(main)
    if done["warning"]:
        print(done["warning"], file=sys.stderr)
    if done["risks"] is None:
        print("info: Accept risks are not changed")
    else:
        print(f"info: Accept risks are [{', '.join(done['risks'])}]")
    return EXIT_OK
