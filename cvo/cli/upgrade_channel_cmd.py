"""``cvo upgrade channel [CHANNEL] [--upstream URL] [--allow-explicit-channel]``: ``oc adm upgrade channel``.

openshift/oc pkg/cli/admin/upgrade/channel/channel.go ``Options.Run``: its messages, warnings and refusals,
word for word (a channel outside ``status.desired.channels`` needs ``--allow-explicit-channel``, and so does
clearing a channel that is one of them).  ``--upstream`` is cvo's: oc has the admin patch ``spec.upstream``.
Writes ``spec.channel`` and ``spec.upstream``; the controller fetches the graph of the new channel.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlsplit

from cvo.cli.backend import ClusterOptions, add_backend_flags, backend_clock, open_backend
from cvo.cli.common import EXIT_OK, CommandFailed, Refused, UsageError
from cvo.cluster.api import ApiError, ApiErrorKind, cv_ref
from cvo.cluster.persist import reread_on_conflict
from cvo.objects import ClusterVersion
from cvo.payload.gostrings import go_quote

HELP = "set or clear the update channel (and the update service), like 'oc adm upgrade channel'"
DESCRIPTION = (
    "Set or clear the update channel, which decides the updates recommended for the cluster. A channel that "
    "is not among the channels the current release lists (status.desired.channels) is refused unless "
    "--allow-explicit-channel is given; without CHANNEL the channel is cleared, and the cluster no longer asks "
    "for update recommendations. --upstream sets the update service the graph is fetched from (empty: the "
    "default one; file:// a graph file, cvo's extension)."
)
EXAMPLES = """\
Examples:
  # Follow the stable channel of the release's minor version
  cvo upgrade channel stable-4.16

  # A channel the release does not list (e.g. the next minor's), on purpose
  cvo upgrade channel stable-4.17 --allow-explicit-channel

  # A graph of your own, served by 'cvo graph serve' or kept in a file
  cvo upgrade channel stable-4.16 --upstream http://127.0.0.1:8080/api/upgrades_info/v1/graph

  # Clear the channel: no more update recommendations
  cvo upgrade channel --allow-explicit-channel
"""
NO_CLUSTER_VERSION = ("no cluster version information available - you must be connected to an OpenShift version 4 "
                      "server to fetch the current version")
UPSTREAM_SCHEMES = ("http", "https", "file")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("upgrade-channel", prog="cvo upgrade channel", help=HELP, description=DESCRIPTION,
                            epilog=EXAMPLES)
    parser.add_argument("channel", nargs="?", default="", metavar="CHANNEL",
                        help="the channel to follow (e.g. stable-4.16); none: clear it")
    parser.add_argument("--allow-explicit-channel", action="store_true",
                        help="change the channel, even if there is a list of acceptable channels and the desired "
                             "channel is not in that list")
    parser.add_argument("--upstream", default=None, metavar="URL",
                        help="the update service to fetch the graph from (spec.upstream): an http(s) URL, a file:// "
                             "graph (cvo's extension), or '' for the default")
    add_backend_flags(parser)
    parser.set_defaults(func=run)


def check_upstream(upstream: str) -> None:
    """``--upstream``: empty, or a URL the update-service client can use (the CVO's ``InvalidURI`` otherwise)."""
    if not upstream:
        return
    try:
        parts = urlsplit(upstream)
    except ValueError as err:
        raise UsageError(f"--upstream: {upstream!r} is not a URL: {err}") from None
    if parts.scheme not in UPSTREAM_SCHEMES or (parts.scheme != "file" and not parts.netloc) or (
            parts.scheme == "file" and not parts.path.startswith("/")) or any(c.isspace() for c in upstream):
        raise UsageError(f"--upstream: {upstream!r} is not an update service URL: give http(s)://HOST/PATH, or "
                         "file:///PATH for a graph file")


def decide(cv: ClusterVersion, channel: str, allow_explicit: bool) -> tuple[str, list[str]]:
    """oc's ``Run`` up to the patch: ``("info", [line])`` when the channel is already that, else ``("set",
    warnings)``; :class:`Refused` with oc's words."""
    current = cv.spec.channel
    if channel == current:
        if not current:
            return "info", ["info: Cluster channel is already clear (no change)"]
        return "info", [f"info: Cluster is already in {current} (no change)"]
    warnings: list[str] = []
    available = cv.status.desired.channels
    if available:
        found, known = channel in available, current in available
        listed = ", ".join(available)
        if not channel:
            if known and not allow_explicit:
                raise Refused(f"You are requesting to clear the update channel. The current channel "
                              f"{go_quote(current)} is one of the available channels, you must pass "
                              "--allow-explicit-channel to continue")
        elif not found:
            if not allow_explicit:
                raise Refused(f"the requested channel {go_quote(channel)} is not one of the available channels "
                              f"({listed}), you must pass --allow-explicit-channel to continue")
            warnings.append(f"warning: The requested channel {go_quote(channel)} is not one of the available channels "
                            f"({listed}). You have used --allow-explicit-channel to proceed anyway. Setting the "
                            f"update channel to {go_quote(channel)}.")
    elif channel:
        warnings.append(f"warning: No channels known to be compatible with the current version "
                        f"{go_quote(cv.status.desired.version)}; unable to validate {go_quote(channel)}. Setting the "
                        f"update channel to {go_quote(channel)} anyway.")
    if not channel:
        warnings.append(f"warning: Clearing channel {go_quote(current)}; cluster will no longer request available "
                        "update recommendations.")
    return "set", warnings


def run(args: argparse.Namespace) -> int:
    channel: str = args.channel
    upstream: str | None = args.upstream
    if upstream is not None:
        check_upstream(upstream)
    options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(options)

    async def main() -> None:
        async with open_backend(options, clock, simulate_operators=False, create=False, say_where=True) as backend:
            cluster = backend.steady
            decided: list[bool] = []

            async def write() -> None:
                found = await cluster.get(cv_ref())
                if found is None:
                    raise CommandFailed(NO_CLUSTER_VERSION)
                cv = ClusterVersion.read(found)
                if not decided:  # once: a Conflict re-applies the decision to what is read again
                    what, lines = decide(cv, channel, args.allow_explicit_channel)
                    decided.append(what == "set")
                    for line in lines:  # oc's info on stdout, its warnings on stderr, before the write
                        print(line, file=sys.stdout if line.startswith("info:") else sys.stderr)
                    if what == "info" and (upstream is None or upstream == cv.spec.upstream):
                        return
                spec: dict[str, Any] = dict(found.get("spec") or {})
                wanted = {"channel": channel, **({"upstream": upstream} if upstream is not None else {})}
                if all((spec.get(k) or "") == v for k, v in wanted.items()):
                    return  # already written (an earlier answer lost)
                for key, value in wanted.items():
                    if value:
                        spec[key] = value
                    else:
                        spec.pop(key, None)
                await cluster.update({**found, "spec": spec})

            try:
                await reread_on_conflict(write, backend.budget, "set the ClusterVersion's spec.channel")
            except ApiError as err:
                if err.kind is ApiErrorKind.NOT_FOUND:
                    raise CommandFailed(NO_CLUSTER_VERSION) from None
                raise CommandFailed(f"unable to set channel: {err}") from None

    run_loop(main)
    return EXIT_OK
