"""A requested release the cluster has not accepted: ``ReleaseAccepted`` not True, and why.

The CVO reports it as ``oc adm upgrade`` prints it (openshift/oc pkg/cli/admin/upgrade/upgrade.go ``Options.Run``:
``ReleaseAccepted=False``, its reason and message): preconditions that block (``PreconditionChecks``), a release
image that cannot be retrieved or verified (``RetrievePayload`` …).  ``cvo status`` and ``cvo upgrade status``
show it too, so that an upgrade held back is visible to whoever looks, not only to the command that asked for it.
The requested release is ``spec.desiredUpdate`` when it names another release than the one running, else the
one the condition's message names (``version="V" image="I"``: a ``cvo upgrade`` holds its request in memory).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cvo.objects import ClusterVersion

RELEASE_ACCEPTED = "ReleaseAccepted"
_NAMED = re.compile(r'\bversion="([^"\n]*)" image="([^"\n]*)"')


@dataclass(frozen=True)
class PendingRelease:
    """The release asked for (``version`` or ``image`` may be "" when nothing names it) and the condition."""

    version: str
    image: str
    status: str  # False, or Unknown
    reason: str
    message: str

    @property
    def name(self) -> str:
        return self.version or self.image or "a requested release"


def pending_release(cv: ClusterVersion) -> PendingRelease | None:
    """The release ``cv`` was asked for and has not accepted; ``None`` when ReleaseAccepted is True or absent."""
    cond = cv.status.condition(RELEASE_ACCEPTED)
    if cond is None or cond.status == "True":
        return None
    version = image = ""
    wanted, running = cv.spec.desired_update, cv.status.desired
    if wanted is not None and (wanted.image or wanted.version) and not (
            wanted.image == running.image if wanted.image else wanted.version == running.version):
        version, image = wanted.version, wanted.image  # spec.desiredUpdate asks for another release
    elif (named := _NAMED.search(cond.message)) is not None:
        version, image = named.group(1), named.group(2)
    return PendingRelease(version, image, cond.status, cond.reason, cond.message)


def pending_text(pending: PendingRelease, width: int | None = None) -> str:
    """Two or more lines: what was requested and has not started, then the condition as oc prints it
    (its later lines indented); with ``width`` (a terminal's), every line wrapped to fit it."""
    import textwrap

    reason = f" ({pending.reason})" if pending.reason else ""
    head = f"{pending.name} requested, not started: {RELEASE_ACCEPTED}={pending.status}{reason}"
    lines = [head, *("  " + line for line in pending.message.split("\n") if line)]
    if width is not None:
        lines = [part for line in lines for part in
                 (textwrap.wrap(line, width=max(width, 8), subsequent_indent="    ", break_on_hyphens=False)
                  if len(line) > width else [line])]
    return "".join(line + "\n" for line in lines)


def pending_data(pending: PendingRelease | None) -> dict[str, str] | None:
    """The structured form (``-o json|yaml``): the release and the condition's fields."""
    if pending is None:
        return None
    return {"version": pending.version, "image": pending.image, "status": pending.status, "reason": pending.reason,
            "message": pending.message}
