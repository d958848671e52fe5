"""The CVO's own check of the ClusterVersion's spec: lib/validation/validation.go ``ValidateClusterVersion`` and
``ClearInvalidFields``, and the ``Invalid`` condition's message (pkg/cvo/status.go ``updateClusterVersionStatus``).

    spec.upstream        Go's url.Parse refuses it        → Invalid value, and it is cleared (default service)
    spec.clusterID       no RFC 4122 version-4 UUID       → Invalid value, and it is cleared
    spec.desiredUpdate   acceptRisks without the gate     → Forbidden, and the whole desiredUpdate is cleared
                         names nothing (gate: nor risks)  → Required value (an update of nothing: none is made)
                         version no semantic version      → Invalid value, and the whole desiredUpdate is cleared

The CVO's last rule (a version without an image must be an available update, or in the history) is not checked:
cvo also finds a version in its ``--releases`` catalogue (cvo.runner.releases).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cvo.payload.gostrings import go_quote
from cvo.payload.semver import SemverError, Version

INVALID = "Invalid"  # pkg/internal/constants.go ClusterVersionInvalid
INVALID_REASON = "InvalidClusterVersion"


class FieldError(NamedTuple):
    """apimachinery's ``field.Error``: ``str()`` is its ``Error()``."""

    field: str
    kind: str  # "Invalid value", "Forbidden", "Required value"
    detail: str
    value: str | None = None  # the bad value of an "Invalid value"

    def __str__(self) -> str:
        body = self.kind if self.value is None else f"{self.kind}: {go_quote(self.value)}"
        return f"{self.field}: {body}: {self.detail}" if self.detail else f"{self.field}: {body}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _uuid_problem(text: str) -> str:
    """``uuid.Parse`` (its error ignored: the zero UUID), then the variant and version checks."""
    from cvo.updates.retrieve import parse_uuid  # here: the status writer imports this module, not the client

    try:
        raw = bytes.fromhex(parse_uuid(text).replace("-", ""))
    except ValueError:
        raw = bytes(16)
    if raw[8] & 0xC0 != 0x80:
        return "must be an RFC4122-variant UUID"
    if raw[6] >> 4 != 4:
        return "must be a version-4 UUID"
    return ""


def validate_cluster_version(cv: Mapping[str, Any], gated: bool) -> list[FieldError]:
    """``ValidateClusterVersion`` (the object's name aside); ``gated``: the ClusterUpdateAcceptRisks gate
    (``shouldReconcileAcceptRisks``)."""
    spec = cv.get("spec") if isinstance(cv.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    errors: list[FieldError] = []
    upstream = _text(spec.get("upstream"))
    if upstream:
        from cvo.updates.client import UrlInvalid, parse_url  # here: the status writer imports this module

        try:
            parse_url(upstream)
        except UrlInvalid:
            errors.append(FieldError("spec.upstream", "Invalid value", "must be a valid URL or empty", upstream))
    cluster_id = _text(spec.get("clusterID"))
    if cluster_id and (problem := _uuid_problem(cluster_id)):
        errors.append(FieldError("spec.clusterID", "Invalid value", problem, cluster_id))
    update = spec.get("desiredUpdate")
    if isinstance(update, Mapping):
        accept = update.get("acceptRisks")
        accepts = isinstance(accept, list) and bool(accept)
        version = _text(update.get("version"))
        target = bool(_text(update.get("architecture")) or version or _text(update.get("image")))
        if not gated and accepts:
            errors.append(FieldError("spec.desiredUpdate.acceptRisks", "Forbidden", "acceptRisks must not be specified"))
        elif not target and not gated:
            errors.append(FieldError("spec.desiredUpdate", "Required value",
                                     "must specify architecture, version, or image"))
        elif not target and not accepts and gated:
            errors.append(FieldError("spec.desiredUpdate", "Required value",
                                     "must specify architecture, version, image, or acceptRisks"))
        elif version:
            try:
                Version.parse(version)
            except SemverError:
                errors.append(FieldError("spec.desiredUpdate.version", "Invalid value",
                                         "must be a semantic version (1.2.3[-...])", version))
    return errors


def clear_invalid_fields(cv: Mapping[str, Any], errors: list[FieldError]) -> dict[str, Any]:
    """``ClearInvalidFields``: the ClusterVersion with the fields in error cleared (a desiredUpdate with any of its
    fields in error is dropped whole); ``cv`` itself is not modified."""
    out = dict(cv)
    if not errors:
        return out
    given = cv.get("spec")
    spec = dict(given) if isinstance(given, Mapping) else {}
    for error in errors:
        if error.field.startswith("spec.desiredUpdate."):
            spec.pop("desiredUpdate", None)
        elif error.field == "spec.upstream":
            spec["upstream"] = ""
        elif error.field == "spec.clusterID":
            spec["clusterID"] = ""
    out["spec"] = spec
    return out


def invalid_message(errors: list[FieldError]) -> str:
    """The ``Invalid`` condition's message (``updateClusterVersionStatus``)."""
    if len(errors) == 1:
        return f"The cluster version is invalid: {errors[0]}"
    return "The cluster version is invalid:\n" + "".join(f"* {e}\n" for e in errors)
