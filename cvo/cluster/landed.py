"""Whether a write whose answer was lost landed anyway: the live object already holds what was sent.

A write whose connection broke after the request went out (a reset, a timeout, a 5xx from a proxy
in front of the API server) may have been processed.  Sending it again then fails: a create with
``AlreadyExists``, an update with ``Conflict`` (the resourceVersion it sends is the one the landed
write replaced).  The write's intent is done when the live object contains what was sent, and cvo
then takes the live object as the write's result instead of failing (or writing a second time).

"Contains" is the apply code's rule (:func:`cvo.runner.apply.contains`, repeated here so that the
backends need not import the runner): every field the write sets has that value in the live
object; fields the server added or defaulted do not matter, and neither do empty values the server
drops.  Of the metadata only what a client sets counts (labels, annotations, owner references,
finalizers); on kinds with a status subresource, a create or an update is compared without
``status`` and a status write by ``status`` alone, as the API server applies them.

A write that removed something (a label, a list entry) is not recognised as landed: the live
object still "contains" the old value only when nothing else changed it.  That costs the caller
one more read and write, never a wrong result.
"""

from __future__ import annotations

from typing import Any

from cvo.cluster.api import ApiErrorKind, Object

# What the retry of a write that landed gets: a create AlreadyExists, an update a Conflict.
LANDED_KINDS = frozenset({ApiErrorKind.ALREADY_EXISTS, ApiErrorKind.CONFLICT})
CLIENT_METADATA = ("name", "namespace", "labels", "annotations", "ownerReferences", "finalizers")
WRITE_VERBS = ("create", "update", "update_status")


def _empty(value: Any) -> bool:
    return value is None or value is False or value == "" or value == {} or value == []


def contains(sent: Any, live: Any) -> bool:
    """Every field ``sent`` sets has the same value in ``live`` (extra live fields are fine)."""
    if _empty(sent) and _empty(live):
        return True
    if isinstance(sent, dict):
        if not isinstance(live, dict):
            return False
        return all((contains(v, live[k]) if k in live else _empty(v)) for k, v in sent.items())
    if isinstance(sent, list):
        if not isinstance(live, list) or len(sent) != len(live):
            return False
        return all(contains(s, lv) for s, lv in zip(sent, live, strict=True))
    if isinstance(sent, bool) or isinstance(live, bool):
        return sent is live
    return bool(sent == live)


def intent_landed(verb: str, sent: Object, live: Object | None, status_subresource: bool = True) -> bool:
    """Whether ``live`` already holds what the write ``verb`` (create, update, update_status) of ``sent`` asked for."""
    if verb not in WRITE_VERBS:
        raise ValueError(f"not a write: {verb}")
    if live is None:
        return False
    if verb == "update_status" and status_subresource:
        return contains(sent.get("status") or {}, live.get("status") or {})
    meta = sent.get("metadata") or {}
    wanted_meta = {k: meta[k] for k in CLIENT_METADATA if k in meta}
    if not contains(wanted_meta, live.get("metadata") or {}):
        return False
    skipped = {"apiVersion", "kind", "metadata"} | ({"status"} if status_subresource else set())
    return contains({k: v for k, v in sent.items() if k not in skipped}, live)
