"""One retrieval of the available updates: pkg/cvo/availableupdates.go ``calculateAvailableUpdatesStatus``.

The spec is checked in the CVO's order, each failure a ``RetrievedUpdates=False`` with its reason and
message: ``NoUpstream``, ``InvalidURI``, ``InvalidID``, ``NoArchitecture``, ``NoCurrentVersion``,
``NoChannel``, ``InvalidCurrentVersion``; then the graph is fetched (:mod:`cvo.updates.client`), parsed
(:mod:`cvo.updates.graph`) and selected from (:mod:`cvo.updates.select`), whose failures become
``Unable to retrieve available updates: …`` with their reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cvo.log import get_logger
from cvo.payload.gostrings import go_quote
from cvo.payload.semver import SemverError, Version
from cvo.updates.client import UpdateServiceOptions, UrlInvalid, fetch_graph, parse_url
from cvo.updates.errors import UpdateError
from cvo.updates.graph import GraphInvalid, parse_graph
from cvo.updates.model import ConditionalUpdate, Release, Retrieved
from cvo.updates.rules import ConditionRegistry
from cvo.updates.select import select_updates

log = get_logger("cvo.updates")

# The reasons of a failed exchange with the update service: after one of them a refetch from the same
# upstream and channel keeps the updates found before (syncAvailableUpdates' responseFailed).
RESPONSE_FAILED = frozenset({"RemoteFailed", "ResponseFailed", "ResponseInvalid"})


@dataclass(frozen=True)
class Calculated:
    current: Release | None = None
    updates: tuple[Release, ...] | None = None  # None: none (the status's availableUpdates: null)
    conditional: tuple[ConditionalUpdate, ...] = ()
    retrieved: Retrieved = field(default_factory=lambda: Retrieved("False"))


_HEX = frozenset("0123456789abcdefABCDEF")


def parse_uuid(text: str) -> str:
    """github.com/google/uuid ``Parse``: the canonical form, or ValueError with its message."""
    if len(text) == 36 + 9:
        if text[:9].lower() != "urn:uuid:":
            raise ValueError(f"invalid urn prefix: {go_quote(text[:9])}")
        text = text[9:]
    elif len(text) == 36 + 2:
        if not (text.startswith("{") and text.endswith("}")):
            raise ValueError("invalid UUID format")
        text = text[1:-1]
    elif len(text) == 32:
        if not set(text) <= _HEX:
            raise ValueError("invalid UUID format")
        return "-".join((text[:8], text[8:12], text[12:16], text[16:20], text[20:])).lower()
    elif len(text) != 36:
        raise ValueError(f"invalid UUID length: {len(text.encode())}")
    if any(text[i] != "-" for i in (8, 13, 18, 23)) or not set(text.replace("-", "")) <= _HEX \
            or len(text.replace("-", "")) != 32:
        raise ValueError("invalid UUID format")
    return text.lower()


def _false(reason: str, message: str) -> Calculated:
    return Calculated(retrieved=Retrieved("False", reason, message))


async def calculate(update_service: str, *, cluster_id: str, desired_arch: str, current_arch: str, channel: str,
                    version: str, registry: ConditionRegistry, options: UpdateServiceOptions) -> Calculated:
    """``calculateAvailableUpdatesStatus``: the current release, the updates and conditional updates (not yet
    evaluated), and ``RetrievedUpdates``."""
    if not update_service:
        return _false("NoUpstream", "No updateService server has been set to retrieve updates.")
    try:
        parse_url(update_service)
    except UrlInvalid as err:
        return _false("InvalidURI", f"failed to parse update service URL: {err}")
    try:
        cluster = parse_uuid(cluster_id)
    except ValueError as err:
        return _false("InvalidID", f"invalid cluster ID: {err}")
    if not desired_arch:
        return _false("NoArchitecture", "Architecture has not been configured.")
    if not version:
        return _false("NoCurrentVersion", "The cluster version does not have a semantic version assigned and "
                                          "cannot calculate valid upgrades.")
    if not channel:
        return _false("NoChannel", "The update channel has not been configured.")
    try:
        current_version = Version.parse(version)
    except SemverError as err:
        log.info("unable to parse the current semantic version", version=version, error=str(err))
        return _false("InvalidCurrentVersion", "The current cluster version is not a valid semantic version and "
                                               "cannot be used to calculate upgrades.")
    try:
        body = await fetch_graph(update_service, arch=desired_arch, channel=channel, cluster_id=cluster,
                                 version=str(current_version), options=options)
        try:
            graph = parse_graph(body)
        except GraphInvalid as err:
            raise UpdateError("ResponseInvalid", str(err)) from None
        selection = select_updates(graph, str(current_version), desired_arch, registry,
                                   current_arch=current_arch, channel=channel)
    except UpdateError as err:
        log.info("the update service could not return available updates", upstream=update_service,
                 reason=err.reason, message=err.message)
        return _false(err.reason, f"Unable to retrieve available updates: {err.message}")
    return Calculated(selection.current, selection.updates or None, selection.conditional, Retrieved("True"))
