"""Admin-ack gates (pkg/risk/adminack/adminack.go): each key of the ``admin-gates`` ConfigMap in
``openshift-config-managed`` named ``ack-4.Y-…`` for the cluster's 4.Y is a risk until the admin sets the
same key to ``"true"`` in ``admin-acks`` in ``openshift-config``; the value is the risk's message, its
first ``https://`` link the risk's URL.  The risks apply to the major and minor updates.

cvo's difference: a ConfigMap that does not exist holds no gates or acknowledgements.  The CVO ships both
in its own manifests, so there a missing one is a failure (``AdminAckUnknown``); cvo's payloads need not
carry them.  A read that fails is ``AdminAckUnknown``, as in the CVO.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cvo.cluster.api import Ref
from cvo.gates.risks.reads import Failed, Read
from cvo.gates.risks.versions import ALWAYS_RULES, DOCS, for_major_and_minor
from cvo.payload import semver
from cvo.payload.fields import dig
from cvo.payload.gostrings import go_quote
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

ADMIN_ACK = "AdminAck"
CONFIG_NAMESPACE = "openshift-config"
CONFIG_MANAGED_NAMESPACE = "openshift-config-managed"
ADMIN_GATES = "admin-gates"
ADMIN_ACKS = "admin-acks"
GATE_FORMAT = "^ack-([4-5][.][0-9]{1,})-[^-]"
ADMIN_GATES_REF = Ref("", "ConfigMap", CONFIG_MANAGED_NAMESPACE, ADMIN_GATES)
ADMIN_ACKS_REF = Ref("", "ConfigMap", CONFIG_NAMESPACE, ADMIN_ACKS)
_GATE = re.compile(GATE_FORMAT)
_URI = re.compile(r"https://[^\t\n\v\f\r ]*")


def data(cm: Mapping[str, Any] | None) -> dict[str, str]:
    """A ConfigMap's ``data`` (string values only)."""
    found = dig(cm, "data") if cm is not None else None
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(found, Mapping) else {}


def gate_version(gate: str) -> semver.Version:
    """The 4.Y a gate is for; ``ValueError`` with the CVO's message when the name is not a gate's."""
    match = _GATE.match(gate)
    if match is None:
        raise ValueError(f"{ADMIN_GATES} configmap gate name {gate} has invalid format; must comply with "
                         f"{go_quote(GATE_FORMAT)}")
    try:
        return semver.parse(f"{match.group(1)}.0")
    except semver.SemverError as err:
        raise ValueError(f"failed to parse SemVer ack version from admin-gate {go_quote(gate)}: {err}") from None


def gate_applies(gate: str, current: semver.Version) -> bool:
    """``gateApplicableToCurrentVersion`` (``ValueError`` for a malformed name)."""
    version = gate_version(gate)
    return (version.major, version.minor) == (current.major, current.minor)


def gate_url(value: str) -> str:
    found = _URI.search(value)
    return found.group(0) if found else DOCS


def check_gate(gate: str, value: str, prefix: str, current: semver.Version, acks: Mapping[str, str]) -> Risk | None:
    """``checkAdminGate``: the gate's risk, or ``None`` when it is for another version or acknowledged."""
    name = f"{prefix}{gate}"
    try:
        if not gate_applies(gate, current):
            return None
    except ValueError as err:
        return Risk(name, f"{ADMIN_GATES} configmap gate {go_quote(gate)} is invalid: {err}", DOCS, ALWAYS_RULES)
    if value == "":
        return Risk(name, f"{ADMIN_GATES} configmap gate {gate} must contain a non-empty value.", DOCS, ALWAYS_RULES)
    if acks.get(gate) == "true":
        return None
    return Risk(name, value, gate_url(value), ALWAYS_RULES)


@dataclass(frozen=True)
class Gate:
    """One gate as ``cvo upgrade ack`` lists it."""

    key: str
    message: str
    applies: bool  # to the cluster's version (a malformed name applies: it is a risk of its own)
    acknowledged: bool
    risk: Risk | None  # what it makes of the cluster now


def gates(current_version: str, admin_gates: Mapping[str, Any] | None, admin_acks: Mapping[str, Any] | None,
          name: str = ADMIN_ACK) -> list[Gate]:
    """Every key of ``admin-gates``, sorted, with what it does to a cluster at ``current_version``."""
    try:
        current: semver.Version | None = semver.parse(current_version)
    except semver.SemverError:
        current = None
    acks = data(admin_acks)
    out = []
    for key, value in sorted(data(admin_gates).items()):
        try:
            applies = current is not None and gate_applies(key, current)
        except ValueError:
            applies = True
        risk = check_gate(key, value, f"{name}-", current, acks) if current is not None else None
        out.append(Gate(key, value, applies, acks.get(key) == "true", risk))
    return out


def is_gate_name(key: str) -> bool:
    """Whether ``key`` has a gate's form (``ack-4.Y-…``)."""
    return _GATE.match(key) is not None


def with_acks(admin_acks: Mapping[str, Any] | None, keys: Sequence[str], clear: bool = False) -> dict[str, Any] | None:
    """The ``admin-acks`` ConfigMap with ``keys`` set to ``"true"`` (``clear``: removed), created when missing;
    ``None`` when it already says so."""
    cm = dict(admin_acks) if admin_acks is not None else {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ADMIN_ACKS, "namespace": CONFIG_NAMESPACE}}
    found = cm.get("data")
    current: dict[str, Any] = dict(found) if isinstance(found, Mapping) else {}
    wanted = {k: v for k, v in current.items() if not (clear and k in keys)}
    if not clear:
        wanted.update(dict.fromkeys(keys, "true"))
    if admin_acks is not None and wanted == current:
        return None
    return {**cm, "data": wanted}


def _unknown(name: str, message: str, err: str) -> SourcedRisks:
    return SourcedRisks((Risk(f"{name}Unknown", message, DOCS, ALWAYS_RULES),), error=err)


def _found(name: str, current: semver.Version, admin_gates: Read, admin_acks: Read) -> SourcedRisks:
    if isinstance(admin_gates, Failed):
        return _unknown(name, f"Failed to retrieve ConfigMap {ADMIN_GATES} from namespace {CONFIG_MANAGED_NAMESPACE}: "
                              f"{admin_gates.message}", admin_gates.message)
    if isinstance(admin_acks, Failed):
        return _unknown(name, f"Failed to retrieve ConfigMap {ADMIN_ACKS} from namespace {CONFIG_NAMESPACE}: "
                              f"{admin_acks.message}", admin_acks.message)
    acks = data(admin_acks)
    risks = [r for key, value in data(admin_gates).items()
             if (r := check_gate(key, value, f"{name}-", current, acks)) is not None]
    return SourcedRisks(tuple(sorted(risks, key=lambda r: r.name)))


def admin_ack_risks(name: str, current_version: str, admin_gates: Read, admin_acks: Read,
                    versions: Sequence[str]) -> SourcedRisks:
    """``adminAck.Risks``: the unacknowledged gates for the cluster's minor version."""
    try:
        current = semver.parse(current_version)
    except semver.SemverError as err:
        return for_major_and_minor(semver.Version(0, 0, 0), _unknown(
            name, f"Failed to parse cluster version to check admin-acks: {err}", str(err)), versions)
    return for_major_and_minor(current, _found(name, current, admin_gates, admin_acks), versions)


class AdminAck:
    def __init__(self, current_version: Callable[[], Awaitable[str]], admin_gates: Callable[[], Awaitable[Read]],
                 admin_acks: Callable[[], Awaitable[Read]], name: str = ADMIN_ACK) -> None:
        self.name = name
        self.current_version = current_version
        self.admin_gates = admin_gates
        self.admin_acks = admin_acks

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return admin_ack_risks(self.name, await self.current_version(), await self.admin_gates(),
                               await self.admin_acks(), versions)
