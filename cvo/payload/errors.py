"""The CVO's ``payload.UpdateError`` (pkg/payload/task.go): reasons, effects and how errors are summarised (pkg/cvo/sync_worker.go `summarizeTaskGraphErrors`)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field


class Effect(enum.IntEnum):
    """How an error affects progress; higher wins when errors are condensed."""

    REPORT = 0  # the task counts as done; surfaced after the graph completes (Degraded at install)
    NONE = 1  # not a failure: "waiting on" (a ClusterOperator updating versions)
    FAIL_AFTER_INTERVAL = 2  # tolerated for 40 minutes, then a failure (Degraded)
    FAIL = 3  # a failure now (NotAvailable, NoVersions, apply errors)


@dataclass
class UpdateError(Exception):
    reason: str
    message: str
    effect: Effect = Effect.FAIL
    plural_reason: str = ""
    plural_message_format: str = ""  # "%s" is replaced with the joined names
    name: str = ""  # the ClusterOperator name, or "a, b" once condensed
    names: list[str] = field(default_factory=list)
    nested: str = ""  # the detailed message (the CVO's wrapped error)
    task: str = ""  # the task string, for apply errors

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


_SUMMARIES = {
    "ClusterOperatorNotAvailable": "the cluster operator {name} is not available",
    "ClusterOperatorsNotAvailable": "the cluster operators {name} are not available",
    "ClusterOperatorDegraded": "the cluster operator {name} is degraded",
    "ClusterOperatorsDegraded": "the cluster operators {name} are degraded",
    "ClusterOperatorUpdating": "the cluster operator {name} is updating versions",
    "ClusterOperatorsUpdating": "the cluster operators {name} are updating versions",
    "ClusterOperatorNoVersions": "the cluster operator {name} does not declare expected versions",
    "UpdatePayloadIntegrity": "the contents of the update are invalid",
    "ImageVerificationFailed": "the image may not be safe to use",
    "UpgradePreconditionCheckFailed": "it may not be safe to apply this update",
}


def summary_for_reason(reason: str, name: str) -> str:
    """``SummaryForReason``: the short text after "Unable to apply V: "."""
    if reason in _SUMMARIES:
        return _SUMMARIES[reason].format(name=name)
    if reason.startswith("UpdatePayload"):
        return "the update could not be applied"
    if reason == "":
        return "an unknown error has occurred"
    return f"an unknown error has occurred: {reason}"


def condense_cluster_operators(errors: Sequence[UpdateError]) -> list[UpdateError]:
    """Group ClusterOperator errors by reason: non-CO errors first, then groups by reason, A to Z."""
    others: list[UpdateError] = []
    groups: dict[str, list[UpdateError]] = {}
    for err in errors:
        if err.plural_reason:
            groups.setdefault(err.reason, []).append(err)
        else:
            others.append(err)
    out = list(others)
    for reason in sorted(groups):
        group = groups[reason]
        if len(group) == 1:
            out.append(group[0])
            continue
        names = sorted(e.name for e in group)
        joined = ", ".join(names)
        first = group[0]
        out.append(UpdateError(
            reason=first.plural_reason,
            message=first.plural_message_format.replace("%s", joined),
            effect=max(e.effect for e in group),
            plural_reason=first.plural_reason,
            plural_message_format=first.plural_message_format,
            name=joined,
            names=names,
            nested="\n".join(e.nested for e in group if e.nested),
        ))
    return out


def summarize(errors: Sequence[UpdateError]) -> UpdateError | None:
    """``summarizeTaskGraphErrors``: one error, condensed; ``MultipleErrors`` when several remain."""
    if not errors:
        return None
    condensed = condense_cluster_operators(errors)
    if len(condensed) == 1:
        return condensed[0]
    messages = sorted({e.message for e in condensed})
    return UpdateError(
        reason="MultipleErrors",
        message="Multiple errors are preventing progress:\n* " + "\n* ".join(messages),
        effect=max(e.effect for e in condensed),
        nested="\n".join(e.nested for e in condensed if e.nested),
        names=[n for e in condensed for n in (e.names or ([e.name] if e.name else []))],
    )


def cluster_operator_not_available(name: str, nested: str) -> UpdateError:
    return UpdateError("ClusterOperatorNotAvailable", f"Cluster operator {name} is not available", Effect.FAIL,
                       "ClusterOperatorsNotAvailable", "Cluster operators %s are not available", name, [name], nested)


def cluster_operator_degraded(name: str, nested: str, install: bool) -> UpdateError:
    effect = Effect.REPORT if install else Effect.FAIL_AFTER_INTERVAL
    return UpdateError("ClusterOperatorDegraded", f"Cluster operator {name} is degraded", effect,
                       "ClusterOperatorsDegraded", "Cluster operators %s are degraded", name, [name], nested)


def cluster_operator_updating(name: str, nested: str) -> UpdateError:
    return UpdateError("ClusterOperatorUpdating", f"Cluster operator {name} is updating versions", Effect.NONE,
                       "ClusterOperatorsUpdating", "Cluster operators %s are updating versions", name, [name], nested)


def cluster_operator_no_versions(name: str) -> UpdateError:
    return UpdateError("ClusterOperatorNoVersions", f"Cluster operator {name} does not declare expected versions",
                       Effect.FAIL, name=name, names=[name])
