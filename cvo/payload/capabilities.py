"""Capabilities that cannot be disabled: what an upgrade or a narrower setting implicitly keeps enabled.

The CVO does not uninstall a capability (pkg/payload/capability/capability.go, lib/manifest/manifest.go):

* a capability once enabled stays enabled; dropped from the configured set, it is *implicitly*
  enabled (``SetCapabilities``: "each capability in others is still enabled: if not enabled then
  enabled implicitly");
* an update whose release moves a manifest the cluster runs today under a capability that is not
  enabled would stop managing a resource the cluster has: that capability is implicitly enabled
  too (``GetImplicitlyEnabledCapabilities``).

The ClusterVersion says so in its ``ImplicitlyEnabledCapabilities`` condition and lists every
enabled capability, implicit ones included, in ``status.capabilities``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cvo.payload.filters import ApplyFilter, apply_exclusion, capabilities_of
from cvo.payload.manifest import Manifest


@dataclass(frozen=True)
class Capabilities:
    """What a sweep applies with: the configured capabilities and those implicitly kept enabled."""

    configured: frozenset[str]
    implicit: frozenset[str]
    known: frozenset[str]

    @property
    def enabled(self) -> frozenset[str]:
        return self.configured | self.implicit


def still_enabled(configured: frozenset[str], known: frozenset[str], previously_enabled: Iterable[str],
                  implicit: Iterable[str] = ()) -> Capabilities:
    """``SetCapabilities``: what the cluster had enabled and the configuration no longer names stays enabled."""
    kept = frozenset(c for c in previously_enabled if c in known) - configured
    return Capabilities(configured, (kept | frozenset(implicit)) - configured, known)


def implicitly_enabled_by_update(update: Sequence[Manifest], current: Sequence[Manifest], apply_filter: ApplyFilter,
                                 implicit: frozenset[str]) -> frozenset[str]:
    """``GetImplicitlyEnabledCapabilities`` (lib/manifest/manifest.go): ``implicit`` plus the capabilities an
    update would otherwise disable under a resource the current release applies.

    For each manifest of the update that the cluster's settings leave out, the same resource (group,
    kind, namespace, name: library-go's ``SameResourceID``) in the current release, if the settings
    include it there, makes the update's capabilities it did not have (and that are not enabled)
    implicitly enabled.  Unknown capability names are allowed on both sides, as upstream does.
    """
    allow = dataclasses.replace(apply_filter, allow_unknown_capabilities=True)
    by_id: dict[tuple[str, str, str, str], list[Manifest]] = defaultdict(list)
    for m in current:
        by_id[(m.group, m.kind, m.namespace, m.name)].append(m)
    out = set(implicit)
    for um in update:
        if apply_exclusion(um, allow) is None:
            continue
        for cm in by_id.get((um.group, um.kind, um.namespace, um.name), ()):
            if apply_exclusion(cm, allow) is not None:
                continue
            out |= set(capabilities_of(um)) - set(capabilities_of(cm)) - implicit - apply_filter.enabled_capabilities
    return frozenset(out)
