"""Deletions requested and not seen finished (pkg/risk/deletion/deletion.go): one risk for the major and
minor updates while any is in progress."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from cvo.cluster.api import Ref
from cvo.gates.risks.versions import ALWAYS_RULES, DOCS, major_and_minor_updates
from cvo.payload import semver
from cvo.updates.model import Risk
from cvo.updates.sources import SourcedRisks

DELETION = "ResourceDeletionInProgress"


def resource_name(ref: Ref) -> str:
    """lib/resourcedelete ``Resource.String``: ``Kind "namespace/name"``."""
    return f'{ref.kind} "{ref.namespace + "/" if ref.namespace else ""}{ref.name}"'


def deletion_risks(name: str, current_version: str, deletes: Sequence[Ref], versions: Sequence[str]) -> SourcedRisks:
    try:
        version = semver.parse(current_version)
    except semver.SemverError as err:
        return SourcedRisks((Risk(f"{name}Unknown", f"Failed to parse cluster version to check resource deletion: {err}",
                                  DOCS, ALWAYS_RULES),), error=str(err))
    if not deletes:
        return SourcedRisks()
    resources = ",".join(sorted(resource_name(r) for r in deletes))
    risk = Risk(name, "Cluster minor or major version upgrades are not allowed while resource deletions are in "
                      f"progress; resources={resources}",
                f"{DOCS}{version.major}.{version.minor}/html/updating_clusters/understanding-openshift-updates-1"
                "#update-manifest-application_how-updates-work", ALWAYS_RULES)
    updates = major_and_minor_updates(version, versions)
    return SourcedRisks((risk,), {risk.name: updates} if updates else {})


class Deletion:
    def __init__(self, current_version: Callable[[], Awaitable[str]],
                 deletes_in_progress: Callable[[], Sequence[Ref]], name: str = DELETION) -> None:
        self.name = name
        self.current_version = current_version
        self.deletes_in_progress = deletes_in_progress

    async def risks(self, versions: Sequence[str]) -> SourcedRisks:
        return deletion_risks(self.name, await self.current_version(), self.deletes_in_progress(), versions)
