"""Which updates a risk about the cluster's own state applies to (pkg/risk/upgradeable/util.go
``MajorAndMinorUpdates``, pkg/internal/constants.go ``UpdateType``), and the documentation links
the sources name."""

from __future__ import annotations

from collections.abc import Sequence

from cvo.payload import semver
from cvo.updates.model import ALWAYS, MatchingRule
from cvo.updates.sources import SourcedRisks

MAJOR = "Major"
MINOR = "Minor"
PATCH = "Patch"
UNKNOWN = "Unknown"

ALWAYS_RULES = (MatchingRule(ALWAYS),)
DOCS = "https://docs.redhat.com/en/documentation/openshift_container_platform/"


def update_type(source: semver.Version, target: semver.Version) -> str:
    """``internal.UpdateType``: Major, Minor, Patch or Unknown (not forward)."""
    if source.major < target.major:
        return MAJOR
    if source.major == target.major and source.minor < target.minor:
        return MINOR
    if source < target:
        return PATCH
    return UNKNOWN


def major_and_minor_updates(current: semver.Version, versions: Sequence[str]) -> tuple[str, ...]:
    """The versions a major or minor version beyond ``current``; versions that do not parse count too."""
    out: list[str] = []
    for text in versions:
        try:
            version = semver.parse(text)
        except semver.SemverError:
            out.append(text)
            continue
        if update_type(current, version) in (MAJOR, MINOR):
            out.append(text)
    return tuple(out)


def updating_docs(version: semver.Version) -> str:
    """The "understanding ClusterOperator condition types" page of ``version``'s documentation."""
    return (f"{DOCS}{version.major}.{version.minor}/html/updating_clusters/understanding-openshift-updates-1"
            "#understanding_clusteroperator_conditiontypes_understanding-openshift-updates")


def for_major_and_minor(current: semver.Version, found: SourcedRisks, versions: Sequence[str]) -> SourcedRisks:
    """``found`` with each risk applied to the major and minor updates among ``versions`` (none: no map)."""
    if not found.risks:
        return found
    updates = major_and_minor_updates(current, versions)
    return SourcedRisks(found.risks, {r.name: updates for r in found.risks} if updates else {}, found.error)
