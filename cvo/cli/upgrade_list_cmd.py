"""``cvo upgrade`` without a target (``oc adm upgrade``), and the targets it resolves through the graph.

The listing reads the ClusterVersion and prints :func:`cvo.status.upgrade_list.render_list` (oc's text, its
warnings on stderr) or, with ``-o json|yaml``, :func:`~cvo.status.upgrade_list.list_data`.  ``--to VERSION``
and ``--to-latest`` pick their release from the same status (:func:`cvo.status.upgrade_target.resolve`) and
hand ``cvo upgrade`` a directory (an update whose image is ``file://DIR``, cvo's own releases) or a pull spec.
With no controller leading the cluster, both first refresh the graph as the controller would
(:func:`refresh_available_updates`); saved objects (``--from-file``) are shown as saved.  ``--clear``
withdraws a requested update (:func:`run_clear`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cvo.cli.backend import Backend, ClusterOptions, Reader, backend_clock, open_reader, state_path
from cvo.cli.common import EXIT_OK, CommandFailed, OutputOptions, Refused, UsageError
from cvo.cli.output import dump, is_structured
from cvo.cluster.api import cv_ref
from cvo.objects import ClusterVersion

if TYPE_CHECKING:
    from cvo.monitoring.client import MonitoringOptions
    from cvo.status.upgrade_target import Request, Target

NO_CLUSTER_VERSION = ("No cluster version information available - you must be connected to an OpenShift version 4 "
                      "server to fetch the current version")  # oc's upgrade.go Run


def is_version(text: str | None) -> bool:
    """``--to TEXT`` names a version of the graph: a semantic version that is not an existing path (a
    directory named like a version stays a directory)."""
    from cvo.payload import semver

    return bool(text) and semver.is_valid(str(text)) and not Path(str(text)).exists()


def check_to(text: str | None) -> None:
    """``--to TEXT`` that is neither a version nor a path nor an image (``4.16``, ``latest``): oc's error for a
    ``--to`` that is not a semantic version (upgrade.go ``Complete``), naming cvo's other two forms."""
    if not text or "/" in text or text.startswith((".", "~")) or Path(text).exists():
        return
    from cvo.cli.images import is_image
    from cvo.payload import semver

    if is_image(text):
        return
    try:
        semver.parse(text)
    except semver.SemverError as err:
        raise UsageError(f"--to must be a semantic version (e.g. 4.0.1 or 4.1.0-nightly-20181104): {err}; nor is "
                         f"{text!r} a release directory or image") from None


def _controller_leads_embedded(options: ClusterOptions) -> bool:
    """Whether a ``cvo run`` holds the embedded cluster's sweep lock (its record, left by a live process)."""
    from cvo.cluster.embedded.sweep_lock import CONTROLLER, lock_path

    path = state_path(options)
    if path is None:
        return False
    try:
        raw = lock_path(path).read_bytes()[:4096]
        record = orjson.loads(raw) if raw else None
    except (OSError, orjson.JSONDecodeError):
        return False
    if not isinstance(record, dict) or not str(record.get("what", "")).startswith(CONTROLLER):
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # PermissionError: alive, another user's
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


async def controller_leads(options: ClusterOptions, reader: Reader) -> bool:
    """Whether a controller keeps this cluster's graph fresh itself (then the command only reads)."""
    if options.saved or not isinstance(reader, Backend):
        return False
    if options.real:
        import time

        from cvo.controller.client import lease_holder

        return bool(await lease_holder(reader.steady, time.time()))
    return _controller_leads_embedded(options)


async def refresh_available_updates(options: ClusterOptions, reader: Reader,
                                    monitoring: MonitoringOptions | None = None) -> None:
    """Fetch the graph and write ``availableUpdates``, ``conditionalUpdates`` and ``RetrievedUpdates`` as the
    controller's ``syncAvailableUpdates`` would (pkg/cvo/availableupdates.go), when no controller does it.

    The one place where the commands that need the graph without a controller (the listing, ``--to VERSION``,
    ``--to-latest``, ``--to-image``, ``recommend``) retrieve it: one retrieval as the controller's first
    (:func:`cvo.runner.available_updates.refresh_once`), from ``spec.upstream`` (the CVO's default service on a
    real cluster, none on the embedded one), its conditional updates evaluated with the cluster's risk sources
    and PromQL risks against ``monitoring``'s Prometheus (none: EvaluationFailed, as a controller without
    ``--metrics-url``).  Saved objects are shown as saved; a controller that leads the cluster keeps its own
    polling.
    """
    if options.saved or not isinstance(reader, Backend) or await controller_leads(options, reader):
        return
    from cvo.runner.available_updates import RefreshOptions, refresh_once
    from cvo.runner.blockers import risk_sources
    from cvo.runner.feature_gates import read_gates
    from cvo.updates.conditions import Registry
    from cvo.updates.poll import DEFAULT_UPDATE_SERVICE

    prometheus = None
    if monitoring is not None:
        from cvo.monitoring.client import Prometheus

        prometheus = Prometheus(monitoring)
    refresh = RefreshOptions(default_update_service=DEFAULT_UPDATE_SERVICE if options.real else "")
    gates, _ = await read_gates(reader.steady, "")
    await refresh_once(reader.cluster, reader.clock, refresh, Registry(prometheus, reader.clock),
                       risk_sources(reader.steady), gates.accept_risks)


async def read_cluster_version(options: ClusterOptions, reader: Reader) -> ClusterVersion:
    """The ClusterVersion, after :func:`refresh_available_updates`; oc's error when there is none."""
    await refresh_available_updates(options, reader)
    found = await reader.steady.get(cv_ref())
    if found is None:
        raise CommandFailed(NO_CLUSTER_VERSION)
    from cvo.objects.base import Refused as Unreadable

    try:
        return ClusterVersion.read(found, source=reader.where)
    except Unreadable as err:
        raise CommandFailed(str(err)) from None


def _read(options: ClusterOptions) -> ClusterVersion:
    clock, run_loop = backend_clock(options)
    read: list[ClusterVersion] = []

    async def main() -> None:
        async with open_reader(options, clock) as reader:
            read.append(await read_cluster_version(options, reader))

    run_loop(main)
    return read[0]


def run_list(args: argparse.Namespace) -> int:
    """``cvo upgrade`` (``oc adm upgrade``): the update state, the recommended updates, the warnings."""
    from cvo.status.upgrade_list import list_data, render_list

    for flag, value in (("--allow-not-recommended", args.allow_not_recommended),
                        ("--allow-explicit-upgrade", args.allow_explicit_upgrade),
                        ("--allow-upgrade-with-warnings", args.allow_upgrade_with_warnings),
                        ("--force", args.force), ("--no-wait", args.no_wait), ("--dry-run", args.dry_run)):
        if value:
            raise UsageError(f"{flag} needs a target: --to VERSION|RELEASE, --to-image IMAGE or --to-latest "
                             "(without one, 'cvo upgrade' lists the updates)")
    options = ClusterOptions.from_args(args)
    output = OutputOptions.from_args(args)
    cv = _read(options)
    if is_structured(output.format):
        sys.stdout.write(dump(list_data(cv, args.include_not_recommended), output.format))
        return EXIT_OK
    printed = render_list(cv, args.include_not_recommended, headers=output.headers)
    sys.stdout.write(printed.out)
    sys.stdout.flush()
    sys.stderr.write(printed.err)
    return EXIT_OK


def request_of(args: argparse.Namespace, *, to: str = "", to_image: str = "", pulled: str = "") -> Request:
    from cvo.status.upgrade_target import Request

    return Request(to=to, to_image=to_image, to_latest=bool(args.to_latest),
                   allow_not_recommended=bool(args.allow_not_recommended),
                   allow_explicit=bool(args.allow_explicit_upgrade),
                   allow_with_warnings=bool(args.allow_upgrade_with_warnings), force=bool(args.force),
                   pulled=pulled)


def checked_target(cv: ClusterVersion | dict[str, Any] | None, request: Request) -> Target:
    """:func:`resolve` on the ClusterVersion ``cv``, its warnings said on stderr; a refusal is a
    :class:`Refused` with oc's words."""
    from cvo.status.upgrade_target import TargetRefused, resolve

    if cv is None:
        raise CommandFailed(NO_CLUSTER_VERSION)
    try:
        target = resolve(ClusterVersion.of(cv), request)
    except TargetRefused as err:
        raise Refused(str(err).rstrip("\n")) from None
    for warning in target.warnings:
        print(warning, file=sys.stderr)
    return target


def resolve_through_graph(args: argparse.Namespace) -> Target:
    """``--to VERSION`` or ``--to-latest``: the release the graph offers (after a refresh), as oc picks it."""
    options = ClusterOptions.from_args(args)
    cv = _read(options)
    request = request_of(args, to=args.release_dir or "")
    target = checked_target(cv, request)
    if not target.info and not target.image:
        raise CommandFailed(f"the ClusterVersion's update {target.version or '(without a version)'} names no image: "
                            "nothing to upgrade to")
    return target


def target_source(target: Target) -> str:
    """What ``cvo upgrade`` reads for ``target``: the directory of a ``file://`` image, else the pull spec."""
    if target.image.startswith("file://"):
        return target.image.removeprefix("file://")
    return target.image


def say_info(target: Target, output: OutputOptions) -> int:
    """Nothing to do (already there): oc's ``info:`` line on stdout, or the document of a command that swept
    nothing with ``-o json|yaml``."""
    if is_structured(output.format):
        sys.stdout.write(dump({"ok": True, "completed": True, "swept": False, "message": target.info}, output.format))
    else:
        print(target.info)
    return EXIT_OK


def _version_string(version: object, image: object) -> str:
    """oc's ``updateVersionString`` / ``releaseVersionString``: the version, else the image, else ``<unknown>``."""
    return str(version or "") or str(image or "") or "<unknown>"


def run_clear(args: argparse.Namespace) -> int:
    """``oc adm upgrade --clear``: withdraw ``spec.desiredUpdate`` (its ``acceptRisks`` kept), and say whether that
    cancelled a requested update or the cluster was already there (upgrade.go ``Run``, the ``o.Clear`` case)."""
    from cvo.cli.backend import open_backend
    from cvo.cluster.persist import reread_on_conflict

    if args.release_dir or args.to_image or args.to_latest:
        raise UsageError("--clear may not be specified with any other flags")
    options = ClusterOptions.from_args(args)
    clock, run_loop = backend_clock(options)
    said: list[str] = []

    async def main() -> None:
        async with open_backend(options, clock, simulate_operators=False, create=False, say_where=True) as backend:
            cluster = backend.steady
            original: list[dict[str, Any]] = []

            async def write() -> None:
                found = await cluster.get(cv_ref())
                if found is None:
                    raise CommandFailed(NO_CLUSTER_VERSION)
                spec = dict(found.get("spec") or {})
                desired = spec.get("desiredUpdate")
                if not original:
                    if not isinstance(desired, dict):
                        said.append("info: No update in progress")
                        return
                    original.append(desired)
                kept = {"acceptRisks": original[0]["acceptRisks"]} if original[0].get("acceptRisks") else None
                if desired == kept or (desired is None and kept is None):
                    return  # written already (an earlier answer lost)
                if kept is None:
                    spec.pop("desiredUpdate", None)
                else:
                    spec["desiredUpdate"] = kept
                await cluster.update({**found, "spec": spec})

            await reread_on_conflict(write, backend.budget, "clear the ClusterVersion's spec.desiredUpdate")
            if not original:
                return
            from cvo.payload.fields import dig

            found = dig(await cluster.get(cv_ref()) or {}, "status", "desired")
            running: dict[str, Any] = found if isinstance(found, dict) else {}
            asked = original[0]
            if _equivalent(asked, running):
                still = _version_string(running.get("version"), running.get("image"))
                said.append(f"Cleared the update field, still at {still}")
            else:
                said.append(f"Cancelled requested upgrade to {_version_string(asked.get('version'), asked.get('image'))}")

    run_loop(main)
    for line in said:
        print(line)
    return EXIT_OK


def _equivalent(update: dict[str, Any], release: dict[str, Any]) -> bool:
    """oc's ``updateIsEquivalent``: the same image when both have one, else the same version."""
    if update.get("image") and release.get("image"):
        return bool(update["image"] == release["image"])
    if update.get("version") and release.get("version"):
        return bool(update["version"] == release["version"])
    return False
