"""``cvo override NAME Upgradeable=True|False``: an admin's word on an operator's OperatorCondition.

Writes ``spec.overrides`` of the OperatorCondition of ClusterOperator NAME (OLM's admin override),
which takes precedence over what the operator reports: True lets minor upgrades through, False
blocks them.  ``--clear`` removes the override.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, CommandFailed, UsageError
from cvo.cli.output import NAME, STRUCTURED, TEXT, add_output_flag, dump, is_structured, kubectl_name
from cvo.cluster.api import Ref
from cvo.gates.olm import OC_API_VERSION, OC_GROUP, OC_KIND, SUPPORTED_TYPES
from cvo.objects import OperatorCondition
from cvo.runner.overrides import Override, OverrideFailed, set_override

HELP = "let an operator's minor updates through, or hold them back: an admin override"
DESCRIPTION = (
    "Override what an operator says about minor updates, as an admin does with OLM: Upgradeable=True lets "
    "them through, Upgradeable=False holds them back. It is written in spec.overrides of the "
    "OperatorCondition of ClusterOperator NAME and wins over the operator's own word until it is removed "
    "with --clear. A 'cvo upgrade' waiting on the operator sees it and goes ahead by itself."
)
EXAMPLES = """\
Examples:
  # etcd holds back the minor update while it migrates its storage; the admin has checked it is safe
  cvo override etcd Upgradeable=True --reason MigrationVerified --message "storage migration checked"

  # Hold back minor updates until further notice
  cvo override etcd Upgradeable=False --reason MaintenanceWindow --message "not before Monday"

  # Remove the override: the operator's own word counts again
  cvo override etcd --clear
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("override", help=HELP, description=DESCRIPTION, epilog=EXAMPLES)
    name = parser.add_argument("name", metavar="NAME", help="the ClusterOperator whose OperatorCondition to override")
    name.completer = complete_names  # argcomplete reads this attribute
    parser.add_argument("condition", metavar="TYPE=STATUS", nargs="?",
                        help="e.g. Upgradeable=True (let upgrades through) or Upgradeable=False (block them)")
    parser.add_argument("--reason", default="AdminOverride", help="CamelCase reason (default AdminOverride)")
    parser.add_argument("--message", default="", help="why the admin overrides it")
    parser.add_argument("--clear", action="store_true", help="remove the override instead")
    add_output_flag(parser, (TEXT, *STRUCTURED, NAME),
                    "cvo override etcd Upgradeable=True --reason Checked -o yaml",
                    what="the OperatorCondition as written (json, yaml: the object, as 'kubectl patch -o' "
                         "prints it)")
    add_backend_flags(parser, runs_the_clock=False)
    parser.set_defaults(func=run)


# metav1.Condition's rules (apimachinery's types.go): a reason is CamelCase, at most 1024 characters; a
# message at most 32768.
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
MAX_REASON = 1024
MAX_MESSAGE = 32768


def _check_reason_and_message(reason: str, message: str) -> None:
    if not REASON.fullmatch(reason) or len(reason) > MAX_REASON:
        raise UsageError(f"--reason: {reason!r} is not a condition reason: CamelCase, a letter first, then letters, "
                         f"digits, '_', ',' or ':' (at most {MAX_REASON} characters), e.g. MigrationVerified")
    if len(message) > MAX_MESSAGE:
        raise UsageError(f"--message: {len(message)} characters; a condition message holds at most {MAX_MESSAGE}")


def _parse(args: argparse.Namespace) -> tuple[str, str]:
    _check_reason_and_message(args.reason, args.message)
    if args.clear:
        type_ = (args.condition or "Upgradeable").split("=", 1)[0]
        return type_, ""
    if not args.condition or "=" not in args.condition:
        raise UsageError("give the override as TYPE=STATUS, e.g. Upgradeable=True (or use --clear)")
    type_, status = args.condition.split("=", 1)
    if type_ not in SUPPORTED_TYPES:
        raise UsageError(f"{type_!r} is not a condition OLM acts on; supported: {', '.join(sorted(SUPPORTED_TYPES))}")
    if status not in ("True", "False"):
        raise UsageError(f"status must be True or False, not {status!r}")
    return type_, status


def complete_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """Shell completion of NAME: the cluster's OperatorConditions (the embedded one of ``--state``, or the
    kubeconfig's); nothing when it cannot be read (completion never prints an error)."""
    names: list[str] = []
    try:
        backend_options = ClusterOptions.from_args(parsed_args)
        clock, run_loop = backend_clock(backend_options)

        async def main() -> None:
            async with open_backend(backend_options, clock, simulate_operators=False, create=False) as backend:
                if await backend.cluster.serves(OC_API_VERSION, OC_KIND):
                    names.extend(str(o.get("metadata", {}).get("name", ""))
                                 for o in await backend.cluster.list(OC_GROUP, OC_KIND))

        run_loop(main)
    except Exception:  # a completion that cannot read the cluster offers nothing
        return []
    return sorted({n for n in names if n.startswith(prefix)})


def no_such_name(name: str, names: list[str]) -> str:
    """The error for an OperatorCondition that does not exist: the closest names (a typo), else those there are."""
    import difflib

    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return f"no OperatorCondition named {name!r}; did you mean {' or '.join(repr(c) for c in close)}?"
    if not names:
        return (f"no OperatorCondition named {name!r}, and none at all: cvo creates one when it applies an "
                "operator's Deployment (cvo install / upgrade)")
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    return f"no OperatorCondition named {name!r}; the cluster has {shown}"


def run(args: argparse.Namespace) -> int:
    type_, status = _parse(args)
    backend_options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(backend_options)
    done: dict[str, Any] = {}

    async def main() -> None:
        async with open_backend(backend_options, clock, simulate_operators=False, create=False,
                                say_where=True) as backend:
            cluster = backend.cluster
            if not await cluster.serves(OC_API_VERSION, OC_KIND):
                raise UsageError("the cluster does not serve OperatorConditions (operators.coreos.com)")
            ocs = [OperatorCondition.read(o) for o in await cluster.list(OC_GROUP, OC_KIND)]
            matches = [oc for oc in ocs if oc.name == args.name]
            if not matches:
                raise UsageError(no_such_name(args.name, sorted({oc.name for oc in ocs})))
            if len(matches) > 1:
                where = ", ".join(oc.namespace for oc in matches)
                raise UsageError(f"several OperatorConditions named {args.name!r} (namespaces {where})")
            ref = Ref(OC_GROUP, OC_KIND, matches[0].namespace, matches[0].name)
            done["where"] = f"{ref.namespace}/{args.name}"
            wanted = Override(type_, status, args.reason, args.message, clear=args.clear)
            try:
                result = await set_override(cluster, ref, wanted, clock.now())
            except OverrideFailed as err:
                raise CommandFailed(str(err)) from None
            done["noop"] = not result.changed
            if is_structured(args.output):  # as written, with the status OLM's sync brought up to date
                done["object"] = await cluster.get(ref) or result.object

    run_loop(main)
    if is_structured(args.output):
        sys.stdout.write(dump(done["object"], args.output))
        return EXIT_OK
    if args.output == NAME:
        print(kubectl_name(OC_GROUP, OC_KIND, args.name))
        return EXIT_OK
    if done.get("noop"):
        change = f"no {type_} override to remove"
    else:
        change = f"removed the {type_} override" if args.clear else f"spec.overrides {type_}={status} ({args.reason})"
    print(f"operatorcondition {done['where']}: {change}", file=sys.stdout)
    return EXIT_OK
