"""``cvo upgrade ack [KEY…] [--clear]``: the admin's acknowledgement of an update gate (pkg/risk/adminack).

A gate is a key of the ``admin-gates`` ConfigMap in ``openshift-config-managed`` (``ack-4.Y-…``, its value
says what to check); while the cluster runs 4.Y and the same key of ``admin-acks`` in ``openshift-config``
is not ``"true"``, it is a risk that blocks minor and major updates (``Upgradeable=False``).  With KEYs this
writes ``"true"`` for each (``--clear`` removes them), as ``oc -n openshift-config patch cm admin-acks
--type=merge -p '{"data":{"KEY":"true"}}'`` does; without, it lists the gates and their state.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, UsageError
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump, is_structured
from cvo.cluster.api import ApiError, ApiErrorKind, Cluster, Ref, cv_ref
from cvo.cluster.persist import reread_on_conflict
from cvo.gates.risks.adminack import (
    ADMIN_ACKS,
    ADMIN_ACKS_REF,
    ADMIN_GATES,
    ADMIN_GATES_REF,
    CONFIG_MANAGED_NAMESPACE,
    CONFIG_NAMESPACE,
    Gate,
    data,
    gates,
    is_gate_name,
    with_acks,
)
from cvo.objects import ClusterVersion

HELP = "acknowledge an update gate of admin-gates (or list them), as the admin does in admin-acks"
DESCRIPTION = (
    "Some updates need an admin's explicit acknowledgement first: the release lists them as gates in the "
    "admin-gates ConfigMap of openshift-config-managed, and each gate for the cluster's minor version blocks "
    "minor and major updates (Upgradeable=False) until the same key is \"true\" in the admin-acks ConfigMap of "
    "openshift-config. With KEYs, this writes that acknowledgement (--clear takes it back); without, it lists "
    "the gates, whether they apply to the cluster's version, and whether they are acknowledged."
)
EXAMPLES = """\
Examples:
  # Which gates are there, and which hold back the next minor update?
  cvo upgrade ack

  # Acknowledge one, having done what its message asks
  cvo upgrade ack ack-4.16-kube-1.30-api-removals-in-4.17

  # Take the acknowledgement back
  cvo upgrade ack ack-4.16-kube-1.30-api-removals-in-4.17 --clear
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-ack", help=HELP, description=DESCRIPTION, epilog=EXAMPLES,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("keys", metavar="KEY", nargs="*", help="the admin-gates keys to acknowledge")
    parser.add_argument("--clear", action="store_true", help="remove the acknowledgements of the KEYs instead")
    add_output_flag(parser, (TEXT, *STRUCTURED), "cvo upgrade ack -o json",
                    what="the gates and their state (json, yaml), after any acknowledgement written")
    add_backend_flags(parser)
    parser.set_defaults(func=run)


def gate_data(gate: Gate) -> dict[str, Any]:
    return {"key": gate.key, "message": gate.message, "applies": gate.applies, "acknowledged": gate.acknowledged,
            "blocks": gate.risk is not None, "risk": gate.risk.name if gate.risk is not None else None}


async def _ensure_namespace(cluster: Cluster) -> None:
    ref = Ref("", "Namespace", "", CONFIG_NAMESPACE)
    if await cluster.get(ref) is None:
        try:
            await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONFIG_NAMESPACE}})
        except ApiError as err:
            if err.kind is not ApiErrorKind.ALREADY_EXISTS:
                raise


async def acknowledge(cluster: Cluster, keys: list[str], clear: bool) -> bool:
    """Write the acknowledgements (read again on a Conflict); False when ``admin-acks`` said so already."""
    wrote: list[bool] = []

    async def write() -> None:
        current = await cluster.get(ADMIN_ACKS_REF)
        wanted = with_acks(current, keys, clear)
        if wanted is None:
            return
        if current is None:
            await _ensure_namespace(cluster)
            await cluster.create(wanted)
        else:
            await cluster.update(wanted)
        wrote.append(True)

    await reread_on_conflict(write, None, f"acknowledge {', '.join(keys)} in {CONFIG_NAMESPACE}/{ADMIN_ACKS}")
    return bool(wrote)


def print_gates(version: str, listed: list[Gate]) -> None:
    if not listed:
        print(f"No gates in {CONFIG_MANAGED_NAMESPACE}/{ADMIN_GATES}: nothing to acknowledge.")
        return
    print(f"Gates in {CONFIG_MANAGED_NAMESPACE}/{ADMIN_GATES} (the cluster runs {version or 'an unknown version'}; "
          f"acknowledgements in {CONFIG_NAMESPACE}/{ADMIN_ACKS}):")
    width = max(len(g.key) for g in listed)
    print(f"  {'KEY':<{width}}  {'STATE':<13}  MESSAGE")
    for gate in listed:
        state = ("acknowledged" if gate.acknowledged and gate.risk is None else "BLOCKS" if gate.risk is not None
                 else "not for now")
        message = gate.risk.message if gate.risk is not None and gate.risk.message != gate.message else gate.message
        print(f"  {gate.key:<{width}}  {state:<13}  {message}")


def run(args: argparse.Namespace) -> int:
    keys: list[str] = list(dict.fromkeys(args.keys))
    if args.clear and not keys:
        raise UsageError("--clear needs the KEYs whose acknowledgement to remove")
    options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(options)
    result: dict[str, Any] = {}

    async def main() -> None:
        async with open_backend(options, clock, simulate_operators=False, create=False, say_where=True) as backend:
            cluster = backend.steady
            gate_keys = set(data(await cluster.get(ADMIN_GATES_REF)))
            unknown = [k for k in keys if k not in gate_keys and not is_gate_name(k)]
            if unknown and not args.clear:
                known = ", ".join(sorted(gate_keys)) or "none"
                raise UsageError(f"{', '.join(unknown)}: not a gate of {CONFIG_MANAGED_NAMESPACE}/{ADMIN_GATES} "
                                 f"(its gates: {known})")
            result["changed"] = await acknowledge(cluster, keys, args.clear) if keys else False
            cv = await cluster.get(cv_ref())
            version = ClusterVersion.read(cv).status.desired.version if cv is not None else ""
            result["version"] = version
            result["gates"] = gates(version, await cluster.get(ADMIN_GATES_REF), await cluster.get(ADMIN_ACKS_REF))
            result["absent"] = [k for k in keys if k not in gate_keys]

    run_loop(main)
    listed: list[Gate] = result["gates"]
    if is_structured(args.output):
        sys.stdout.write(dump({"version": result["version"], "gates": [gate_data(g) for g in listed]}, args.output))
        return EXIT_OK
    if keys:
        verb = "removed the acknowledgement of" if args.clear else "acknowledged"
        done = verb if result["changed"] else f"already {'not ' if args.clear else ''}acknowledged:"
        print(f"configmap {CONFIG_NAMESPACE}/{ADMIN_ACKS}: {done} {', '.join(keys)}")
        for key in result["absent"]:
            print(f"note: {key} is not a gate of {CONFIG_MANAGED_NAMESPACE}/{ADMIN_GATES} (yet)")
        return EXIT_OK
    print_gates(result["version"], listed)
    return EXIT_OK
