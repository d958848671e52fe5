"""Why an apply failed, as the CVO says it: ``reasonForPayloadSyncError`` (pkg/payload/task.go).

An error left after a task's retries becomes an :class:`~cvo.payload.errors.UpdateError` whose reason
comes from the API error's class, with the cause the CVO appends to ``Could not update <task>``.
"""

from __future__ import annotations

from cvo.cluster.api import ApiError, ApiErrorKind
from cvo.payload.errors import Effect, UpdateError

# Reason table for API errors (reasonForPayloadSyncError) with the cause text the CVO appends.
_API_REASONS: dict[ApiErrorKind, tuple[str, str]] = {
    ApiErrorKind.NOT_FOUND: ("UpdatePayloadResourceNotFound", "resource may have been deleted"),
    ApiErrorKind.ALREADY_EXISTS: ("UpdatePayloadResourceNotFound", "resource may have been deleted"),
    ApiErrorKind.CONFLICT: ("UpdatePayloadResourceConflict", ""),
    ApiErrorKind.TIMEOUT: ("UpdatePayloadClusterDown", ""),
    ApiErrorKind.INTERNAL: ("UpdatePayloadClusterError", ""),
    ApiErrorKind.INVALID: ("UpdatePayloadResourceInvalid", ""),
    ApiErrorKind.UNAUTHORIZED: ("UpdatePayloadClusterUnauthorized", ""),
    ApiErrorKind.FORBIDDEN: ("UpdatePayloadResourceForbidden", "the server has forbidden updates to this resource"),
    ApiErrorKind.SERVER_TIMEOUT: ("UpdatePayloadClusterOverloaded", ""),
    ApiErrorKind.NO_KIND_MATCH: (
        "UpdatePayloadResourceTypeMissing", "the server does not recognize this resource, check extension API servers"),
}


def wrap_apply_error(err: Exception, task: str, manifest: str = "") -> UpdateError:
    """An error left after the task's retries, as the CVO reports it: ``Could not update <task>: <cause>``."""
    if isinstance(err, UpdateError):
        return err
    reason, cause = "UpdatePayloadFailed", ""
    if isinstance(err, ApiError):
        reason, cause = _API_REASONS.get(err.kind, ("UpdatePayloadFailed", ""))
    message = f"Could not update {task}" + (f": {cause}" if cause else "")
    nested = str(err) + (f" ({manifest})" if manifest else "")
    return UpdateError(reason, message, Effect.FAIL, nested=nested, task=task)
