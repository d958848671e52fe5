"""``oc adm upgrade recommend``: the update precheck, from the ClusterVersion's status and the firing alerts.

A port of oc's ``pkg/cli/admin/upgrade/recommend``: ``recommend.go`` ``options.Run`` (the Failing and
Progressing notes, the precheck's conditions, the updates per minor version, ``--version``, ``--accept``),
``precheck.go`` (:class:`AcceptableCondition`) and ``alerts.go`` ``options.alerts`` (:func:`alert_conditions`:
the firing alerts grouped as oc groups them).  The text is oc's byte for byte; what oc writes to its error
stream is :attr:`Result.err`, and the error oc returns (``error: …``, exit 1) is :attr:`Result.error`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cvo.monitoring.answers import Alert
from cvo.objects import ClusterVersion
from cvo.objects.clusterversion import ConditionalUpdate, ConditionalUpdateRisk, MatchingRule
from cvo.objects.condition import Condition, MetaCondition, find
from cvo.payload import semver
from cvo.payload.gostrings import go_quote
from cvo.status.gosort import go_sort_slice
from cvo.status.tabwriter import TabWriter

FAILING = "Failing"
PROGRESSING = "Progressing"
CONDITIONAL_UPDATE_RISK = "ConditionalUpdateRisk"  # the --accept name of a --version target's risks
NO_CLUSTER_VERSION = ("No cluster version information available - you must be connected to an OpenShift "
                      "version 4 server to fetch the current version")
# Go's unicode.IsSpace, for strings.TrimSpace (Python's str.strip would also take \x1c-\x1f)
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


@dataclass(frozen=True)
class AcceptableCondition:
    """precheck.go ``acceptableCondition``: True for happy signals, False for sad ones, Unknown when the check
    has not enough information; ``acceptance_name`` is what ``--accept`` takes for a condition not True."""

    type: str
    status: str
    reason: str
    message: str
    acceptance_name: str = ""


@dataclass(frozen=True)
class Options:
    """The command's flags, as oc's ``options.Complete`` leaves them (:func:`complete`)."""

    version: semver.Version | None = None  # --version, parsed
    accept: frozenset[str] = frozenset()  # --accept
    quiet: bool = False  # --quiet (only with --version)
    show_outdated_releases: bool = False  # --show-outdated-releases (not with --version)


@dataclass(frozen=True)
class Result:
    """What oc writes, in order: ``(True, text)`` to its error stream (warnings), ``(False, text)`` to its
    standard output; and the error it returns (``error: …``, exit 1), if any."""

    writes: tuple[tuple[bool, str], ...]
    error: str | None = None

    @property
    def out(self) -> str:
        return "".join(text for to_err, text in self.writes if not to_err)

    @property
    def err(self) -> str:
        return "".join(text for to_err, text in self.writes if to_err)


class _Streams:
    """oc's ``o.Out`` and ``o.ErrOut``, written in order."""

    def __init__(self) -> None:
        self.writes: list[tuple[bool, str]] = []

    def out(self, text: str) -> None:
        if text:
            self.writes.append((False, text))

    def err(self, text: str) -> None:
        if text:
            self.writes.append((True, text))

    def result(self, error: str | None = None) -> Result:
        return Result(tuple(self.writes), error)


class OptionsError(ValueError):
    """A combination of flags oc's ``options.Complete`` refuses (oc exits 1 with it)."""


def complete(raw_version: str, *, quiet: bool, show_outdated_releases: bool,
             accept: Sequence[str] = ()) -> Options:
    """recommend.go ``options.Complete``: the flags' checks, in oc's order, with oc's messages."""
    version = None
    if raw_version == "":
        if quiet:
            raise OptionsError("--quiet can only be set when --version is set")
    else:
        if show_outdated_releases:
            raise OptionsError("when --version is set, --show-outdated-releases is unnecessary")
        try:
            version = semver.parse(raw_version)
        except semver.SemverError as err:
            raise OptionsError(f"cannot parse SemVer target {go_quote(raw_version)}: {err}") from None
    return Options(version, frozenset(accept), quiet, show_outdated_releases)


# --- alerts.go ------------------------------------------------------------------------------------

def no_test_data(alerts_path: str) -> AcceptableCondition:
    """alerts.go: oc's ``--mock-clusterversion`` run whose ``-alerts.json`` file does not exist."""
    return AcceptableCondition("recommended/Alert", "Unknown", "NoTestData",
                               f"This --mock-clusterversion run did not have alert data available at {alerts_path}",
                               "AlertNoTestData")


def no_alert_data(why: str) -> AcceptableCondition:
    """cvo's: no alert data at all (no ``--alerts-file``, no Prometheus, or one that did not answer)."""
    return AcceptableCondition("recommended/Alert", "Unknown", "NoAlertData", f"No alert data: {why}",
                               "AlertNoData")


_NODE_ALERTS = ("KubeletHealthState", "KubeNodeNotReady", "KubeNodeReadinessFlapping", "KubeNodeUnreachable")
_VIRT_ALERTS = ("VirtHandlerDaemonSetRolloutFailing", "VMCannotBeEvicted")


def _details(alert: Alert, name: str) -> str:
    annotations = alert.annotations
    summary = annotations.get("summary", "") or name
    if not summary.endswith("."):
        summary += "."
    description, message = annotations.get("description", ""), annotations.get("message", "")
    if message and description:
        said = " The alert description is: " + description + " | " + message
    elif description:
        said = " The alert description is: " + description
    elif message:
        said = " The alert description is: " + message
    else:
        said = " The alert has no description."
    runbook = annotations.get("runbook_url", "") or "<alert does not have a runbook_url annotation>"
    return f"{summary}{said} {runbook}"


def alert_conditions(alerts: Sequence[Alert]) -> list[AcceptableCondition]:
    """alerts.go ``options.alerts``: a False condition per firing alert of the kinds oc looks at, numbered in
    order, and a True one for each kind with none firing."""
    conditions: list[AcceptableCondition] = []
    have: set[str] = set()
    for alert in alerts:
        labels = alert.labels
        name = labels.get("alertname", "")
        if name == "" or alert.state == "pending":
            continue
        severity, state = labels.get("severity", ""), alert.state
        details = _details(alert, name)
        pdb = f"Namespace={labels.get('namespace', '')}, PodDisruptionBudget={labels.get('poddisruptionbudget', '')}. "
        if severity == "critical":
            group, why = "CriticalAlerts", "suggesting significant cluster issues worth investigating"
            if name == "PodDisruptionBudgetLimit":
                have.add("PodDisruptionBudgetAlerts")
                details = pdb + details
        elif name == "PodDisruptionBudgetAtLimit":
            group, why = "PodDisruptionBudgetAlerts", "which might slow node drains"
            details = pdb + details
        elif name == "KubeContainerWaiting":
            group, why = "PodImagePullAlerts", "which may slow workload redistribution during rolling node updates"
        elif name in _NODE_ALERTS:
            group, why = "NodeAlerts", "which may slow workload redistribution during rolling node updates"
        elif labels.get("openShiftUpdatePrecheck", "") == "true":
            group, why = "UpdatePrecheckAlerts", "suggesting issues worth investigating before updating the cluster"
        elif name in _VIRT_ALERTS:
            group, why = "VirtAlerts", "which may slow workload redistribution during rolling node updates"
        else:
            continue
        have.add(group)
        conditions.append(AcceptableCondition(
            f"recommended/{group}/{name}/{len(conditions)}", "False", f"Alert:{state}",
            f"{severity} alert {name} {state}, {why}. {details}", name))
    for group, message in (("CriticalAlerts", "No critical alerts firing."),
                           ("PodDisruptionBudgetAlerts", "No PodDisruptionBudget alerts firing."),
                           ("PodImagePullAlerts", "No Pod container image pull alerts firing."),
                           ("NodeAlerts", "No Node alerts firing."),
                           ("UpdatePrecheckAlerts", "No alerts with the openShiftUpdatePrecheck label true are firing.")):
        if group not in have:
            conditions.append(AcceptableCondition(f"recommended/{group}", "True", "AsExpected", message))
    return conditions


# --- recommend.go ---------------------------------------------------------------------------------

def _indent(message: str) -> str:
    return message.replace("\n", "\n  ")


def not_recommended_condition(update: ConditionalUpdate) -> MetaCondition | None:
    """recommend.go ``notRecommendedCondition``: the update's Recommended condition unless it is True; with
    risks but no condition, oc's ``NoConditions`` (its risk list keeps the empty names Go's ``make`` put first)."""
    if not update.risks:
        return None
    c = find(update.conditions, "Recommended")
    if c is not None:
        return None if c.status == "True" else c
    risks = sorted([""] * len(update.risks) + [risk.name for risk in update.risks])
    return MetaCondition(type="Recommended", status="Unknown", reason="NoConditions",
                         message=f"Conditional update to {update.release.version} has risks ({', '.join(risks)}), "
                                 "but no conditions.")


def sort_by_semantic_versions(updates: list[ConditionalUpdate]) -> None:
    """recommend.go ``sortConditionalUpdatesBySemanticVersions``: newest first, versions that do not parse last
    (by their text, descending), through Go's unstable ``sort.Slice`` (equal versions end in Go's order)."""
    parsed: dict[str, semver.Version | None] = {}

    def version(update: ConditionalUpdate) -> semver.Version | None:
        text = update.release.version
        if text not in parsed:
            try:
                parsed[text] = semver.parse(text)
            except semver.SemverError:
                parsed[text] = None
        return parsed[text]

    def less(x: ConditionalUpdate, y: ConditionalUpdate) -> bool:
        a, b = version(x), version(y)
        if a is None or b is None:
            return b is None and (a is not None or x.release.version > y.release.version)
        return a > b

    go_sort_slice(updates, less)


def _upgradeable_risk(target: ConditionalUpdate, condition: Condition, uri: str) -> ConditionalUpdate:
    """recommend.go ``ensureUpgradeableRisk``: Upgradeable=False as one more risk of a minor-version target."""
    if any(condition.message in risk.message for risk in target.risks):  # hasUpgradeableRisk
        return target
    risks = (*target.risks, ConditionalUpdateRisk(url=uri, name="UpgradeableFalse", message=condition.message,
                                                  matching_rules=(MatchingRule(type="Always"),)))
    conditions = list(target.conditions)
    for i, c in enumerate(conditions):
        if c.type == "Recommended":
            if c.status == "True":
                conditions[i] = replace(c, status="False", reason=condition.reason, message=condition.message)
            else:
                conditions[i] = replace(c, status="False", reason="MultipleReasons",
                                        message=f"{condition.message}\n\n{c.message}")
            return replace(target, risks=risks, conditions=tuple(conditions))
    conditions.append(MetaCondition(type="Recommended", status="False", reason=condition.reason,
                                    message=condition.message))
    return replace(target, risks=risks, conditions=tuple(conditions))


Buckets = dict[int, dict[int, list[ConditionalUpdate]]]


def _inject_upgradeable(version: str, condition: Condition, buckets: Buckets) -> str | None:
    """recommend.go ``injectUpgradeableAsCondition``: the error, if the current version does not parse."""
    try:
        current = semver.parse(version)
    except semver.SemverError as err:
        return f"cannot parse SemVer version {go_quote(version)}: {err}"
    uri = (f"https://docs.openshift.com/container-platform/{current.major}.{current.minor}/updating/"
           "preparing_for_updates/updating-cluster-prepare.html#cluster-upgradeable_updating-cluster-prepare")
    if current.minor <= 13:
        uri = (f"https://docs.openshift.com/container-platform/{current.major}.{current.minor}/updating/"
               "index.html#understanding_clusteroperator_conditiontypes_updating-clusters-overview")
    for major, minors in buckets.items():
        if major < current.major:
            continue
        for minor, targets in minors.items():
            if major == current.major and minor <= current.minor:
                continue
            targets[:] = [_upgradeable_risk(t, condition, uri) for t in targets]
    return None


def _buckets(cv: ClusterVersion, quiet: bool, o: _Streams) -> Buckets:
    """The conditional updates, then the available updates that are not conditional, by major and minor."""
    buckets: Buckets = {}
    status = cv.status
    conditional_images = {u.release.image for u in status.conditional_updates}
    targets = [*status.conditional_updates,
               *(ConditionalUpdate(release=r) for r in status.available_updates if r.image not in conditional_images)]
    for update in targets:
        try:
            version = semver.parse(update.release.version)
        except semver.SemverError as problem:
            if not quiet:  # oc ends this warning without a newline
                o.err(f"warning: Cannot parse SemVer available update {go_quote(update.release.version)}: "
                           f"{problem}")
            continue
        buckets.setdefault(version.major, {}).setdefault(version.minor, []).append(update)
    return buckets


def recommend(cv: ClusterVersion | None, conditions: Sequence[AcceptableCondition], options: Options) -> Result:
    """recommend.go ``options.Run`` over the ClusterVersion (``None``: there is none) and the precheck's
    conditions (:func:`alert_conditions`, :func:`no_alert_data`)."""
    if cv is None:
        return Result((), NO_CLUSTER_VERSION)
    o = _Streams()
    issues: set[str] = set()
    accept, quiet = options.accept, options.quiet
    status = cv.status

    failing = find(status.conditions, FAILING)
    accepted = "accepted " if FAILING in accept else ""
    if failing is None:
        if not quiet:
            o.err(f"{accepted}warning: No current {FAILING} info, see `oc describe clusterversion` for more "
                       "details.\n")
        issues.add(FAILING)
    elif failing.status != "False":
        if not quiet:
            o.out(f"{accepted}{failing.type}={failing.status}:\n\n  Reason: {failing.reason}\n"
                       f"  Message: {_indent(failing.message)}\n\n")
        issues.add(FAILING)

    progressing = find(status.conditions, PROGRESSING)
    if progressing is not None and progressing.status == "True" and progressing.message:
        accepted = "accepted " if PROGRESSING in accept else ""
        if not quiet:
            o.out(f"{accepted}info: An update is in progress.  You may wish to let this update complete before "
                       f"requesting a new update.\n  {_indent(progressing.message)}\n\n")
        issues.add(PROGRESSING)

    happy: list[str] = []
    accepted_types: list[str] = []
    unhappy: list[str] = []
    for condition in conditions:
        if condition.status == "True":
            happy.append(f"{condition.type} ({condition.reason})")
        else:
            issues.add(condition.acceptance_name)
            (accepted_types if condition.acceptance_name in accept else unhappy).append(condition.type)
    if not quiet:
        if happy:
            o.out("The following conditions found no cause for concern in updating this cluster to later "
                       f"releases: {', '.join(sorted(happy))}\n\n")
        if accepted_types:
            o.out("The following conditions found cause for concern in updating this cluster to later releases, "
                       f"but were explicitly accepted via --accept: {', '.join(sorted(accepted_types))}\n\n")
        if unhappy:
            o.out("The following conditions found cause for concern in updating this cluster to later releases: "
                       f"{', '.join(sorted(unhappy))}\n\n")
            for c in conditions:
                if c.status != "True":
                    o.out(f"{c.type}={c.status}:\n\n  Reason: {c.reason}\n  Message: {_indent(c.message)}\n\n")

    retrieved = find(status.conditions, "RetrievedUpdates")
    if retrieved is not None and retrieved.status != "True":
        if not quiet:
            o.err(f"warning: Cannot refresh available updates:\n  Reason: {retrieved.reason}\n"
                       f"  Message: {_indent(retrieved.message)}\n\n")
        issues.add("CannotRetrieveUpdates")

    if not quiet and cv.spec.channel:
        if not cv.spec.upstream:
            o.out("Upstream update service is unset, so the cluster will use an appropriate default.\n")
        else:
            o.out(f"Upstream update service: {cv.spec.upstream}\n")
        if status.desired.channels:
            o.out(f"Channel: {cv.spec.channel} (available channels: {', '.join(status.desired.channels)})\n")
        else:
            o.out(f"Channel: {cv.spec.channel}\n")

    buckets = _buckets(cv, quiet, o)
    upgradeable = find(status.conditions, "Upgradeable")
    if upgradeable is not None and upgradeable.status == "False":
        problem = _inject_upgradeable(status.desired.version, upgradeable, buckets)
        if problem is not None and not quiet:
            o.err(f"warning: Cannot inject {upgradeable.type}={upgradeable.status} as a conditional update risk: "
                       f"{problem}\n\nReason: {upgradeable.reason}\n  Message: {_indent(upgradeable.message)}\n\n")

    if options.version is not None:
        return o.result(_one_version(options.version, buckets, issues, options, o))
    if not buckets:
        o.out("No updates available. You may still upgrade to a specific release image with --to-image or wait "
                   "for new updates to be available.\n")
        return o.result()
    for major in sorted(buckets, reverse=True):
        for minor in sorted(buckets[major], reverse=True):
            _minor_table(major, minor, buckets[major][minor], options.show_outdated_releases, o)
    return o.result()


def _one_version(version: semver.Version, buckets: Buckets, issues: set[str], options: Options,
                 o: _Streams) -> str | None:
    """``--version``: the target's context and whether every issue was accepted (the error if not)."""
    if not buckets:
        return f"no updates available, so cannot display context for the requested release {version}"
    if version.major not in buckets:
        return (f"no updates to {version.major} available, so cannot display context for the requested release "
                f"{version}")
    if version.minor not in buckets[version.major]:
        return (f"no updates to {version.major}.{version.minor} available, so cannot display context for the "
                f"requested release {version}")
    quiet, accept = options.quiet, options.accept
    for update in buckets[version.major][version.minor]:
        release = update.release
        if release.version != str(version):
            continue
        if not quiet:
            o.out("\n")
        c = not_recommended_condition(update)
        if c is None:
            if not quiet:
                o.out(f"Update to {release.version} has no known issues relevant to this cluster.\n"
                           f"Image: {release.image}\nRelease URL: {release.url}\n")
        else:
            if not quiet:
                reason = c.reason
                if CONDITIONAL_UPDATE_RISK in accept:
                    reason = f"accepted {c.reason} via {CONDITIONAL_UPDATE_RISK}"
                o.out(f"Update to {release.version} {c.type}={c.status}:\nImage: {release.image}\n"
                           f"Release URL: {release.url}\nReason: {reason}\nMessage: {_indent(c.message)}\n")
            issues.add(CONDITIONAL_UPDATE_RISK)
        unaccepted = issues - accept
        if unaccepted:
            return f"issues that apply to this cluster but which were not included in --accept: {','.join(sorted(unaccepted))}"
        if issues and not quiet:
            o.out(f"Update to {release.version} has no known issues relevant to this cluster other than the "
                       f"accepted {','.join(sorted(issues))}.\n")
        return None
    return f"no update to {version} available, so cannot display context for the requested release"


def _minor_table(major: int, minor: int, updates: list[ConditionalUpdate], show_outdated: bool,
                 o: _Streams) -> None:
    """One ``Updates to X.Y:`` section: the table (through Go's tabwriter, flushed as oc flushes it), and without
    ``--show-outdated-releases`` the not-recommended updates in long form and at most two updates."""
    o.out(f"\nUpdates to {major}.{minor}:\n")
    last_was_long = False
    header_queued = True
    # oc: "set the minimal cell width to 14 to have a larger space between the columns for shorter versions"
    w = TabWriter(14, 1, discard_empty_columns=True)
    o.out(w.write("  VERSION\tISSUES\n"))
    sort_by_semantic_versions(updates)
    for i, update in enumerate(updates):
        c = not_recommended_condition(update)
        if last_was_long or (c is not None and not show_outdated):
            o.out("\n")
            if c is None and not header_queued:
                o.out(w.write("  VERSION\tISSUES\n"))
                header_queued = True
            last_was_long = False
        if i == 2 and not show_outdated:
            o.out(f"And {len(updates) - 2} older {major}.{minor} updates you can see with "
                       "'--show-outdated-releases' or '--version VERSION'.\n")
            break
        version = update.release.version
        if c is None:
            o.out(w.write(f"  {version}\tno known issues relevant to this cluster\n"))
            if not show_outdated:
                header_queued = False
                o.out(w.flush())
        elif show_outdated:
            o.out(w.write(f"  {version}\t{c.reason}\n"))
        else:
            o.out(f"  Version: {version}\n  Image: {update.release.image}\n")
            o.out(f"  Reason: {c.reason}\n  Message: {_indent(c.message.strip(_GO_SPACE))}\n")
            last_was_long = True
    if show_outdated:
        o.out(w.flush())
