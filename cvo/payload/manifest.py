"""One Kubernetes object from a payload file, and the parsing of a file into such objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from cvo.payload.limits import MAX_DOCUMENT_BYTES, InputError, printable, size_text

MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")

# Annotations the loader and the runner act on.
DELETE_ANNOTATION = "release.openshift.io/delete"
CREATE_ONLY_ANNOTATION = "release.openshift.io/create-only"
CAPABILITY_ANNOTATION = "capability.openshift.io/name"
FEATURE_SET_ANNOTATION = "release.openshift.io/feature-set"
FEATURE_GATE_ANNOTATION = "release.openshift.io/feature-gate"
MAJOR_VERSION_ANNOTATION = "release.openshift.io/major-version"
PROFILE_ANNOTATION_PREFIX = "include.release.openshift.io/"
EXCLUDE_ANNOTATION_PREFIX = "exclude.release.openshift.io/"


class ManifestError(InputError):
    """A file or document that cannot be loaded; ``str()`` is the one-line message for users."""


@dataclass(slots=True, eq=False)
class Manifest:
    """One object of the payload.

    ``raw`` is the object's JSON exactly as the CVO holds it in ``Manifest.Raw``: a JSON document's own
    bytes, a YAML document in Go's JSON (keys sorted, compact); the payload's manifest hash is taken over
    it.  The full object is decoded from it only when somebody asks for :attr:`obj` (planning needs just
    the header).
    """

    file: str  # the file's base name: run level and component come from it
    path: str  # the file's path relative to the release directory, for messages
    document: int  # 1-based index of the document in its file
    api_version: str
    kind: str
    name: str
    namespace: str
    annotations: dict[str, str]
    raw: bytes
    _obj: dict[str, Any] | None = field(default=None, repr=False)
    # cvo.payload.shapes' verdict on the object, once known (``None`` before): a sweep checks every
    # manifest on every attempt, and keeping the decoded object for that would hold a release twice.
    _shape: object = field(default=None, repr=False)

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def obj(self) -> dict[str, Any]:
        """The whole object; a fresh decode the first time, shared afterwards (treat as read-only)."""
        if self._obj is None:
            self._obj = orjson.loads(self.raw)
        return self._obj

    def copy_obj(self) -> dict[str, Any]:
        """A private, mutable copy of the object."""
        obj: dict[str, Any] = orjson.loads(self.raw)  # a manifest's document is a mapping (checked when read)
        return obj

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(group, kind, namespace, name): what identifies the object in a cluster."""
        return (self.group, self.kind, self.namespace, self.name)

    @property
    def is_job(self) -> bool:
        return self.kind == "Job" and self.api_version == "batch/v1"

    @property
    def resource_id(self) -> str:
        """``kind "ns/name"`` as the CVO names a task, lower-cased kind."""
        name = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f'{self.kind.lower()} "{name}"'

    def describe(self) -> str:
        return f"{self.path} (document {self.document}, {self.kind} {self.namespace + '/' if self.namespace else ''}{self.name})"


# A parsed document in a form cheap to cache and to send between processes.
Header = tuple[int, str, str, str, str, dict[str, str], bytes]


def unmarshal_problem(doc: Any) -> str | None:
    """Why library-go's ``Manifest.UnmarshalJSON`` would refuse a decoded document, or ``None``.

    It keeps ``null``; anything else must be an object with a ``kind`` and a name (``validateResourceId``).
    """
    if doc is None:
        return None
    if not isinstance(doc, dict):
        return f"document is a {type(doc).__name__}, not an object"
    kind = doc.get("kind")
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    missing = [f for f, v in (("kind", kind), ("metadata.name", name)) if not isinstance(v, str) or not v]
    if missing:
        return f"must contain kubernetes required fields kind and name (missing {', '.join(missing)})"
    return None


def _header(doc: dict[str, Any], raw: bytes | None, floats: bool, path: str, number: int) -> Header:
    """The header of an accepted document; ``raw`` is a JSON document's own bytes, else Go's JSON is made."""
    metadata = doc["metadata"]
    api_version = doc.get("apiVersion", "")
    if not isinstance(api_version, str):
        raise ManifestError(path, "apiVersion must be a string", number)
    namespace = metadata.get("namespace") or ""
    if not isinstance(namespace, str):
        raise ManifestError(path, "metadata.namespace must be a string", number)
    annotations = metadata.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ManifestError(path, "metadata.annotations must be a map of strings", number)
    bad = [k for k, v in annotations.items() if not isinstance(v, str)]
    if bad:
        raise ManifestError(path, f"annotation {bad[0]!r} must be a string (quote the value)", number)
    if raw is None:
        from cvo.payload.gojson import UnsupportedValue, go_json

        try:
            raw = go_json(doc, exact=floats)
        except (orjson.JSONEncodeError, UnsupportedValue) as err:  # a string that is not valid Unicode, a NaN
            raise ManifestError(path, f"cannot be converted to JSON: {err}", number) from None
    if len(raw) > MAX_DOCUMENT_BYTES and (size := len(orjson.dumps(doc))) > MAX_DOCUMENT_BYTES:
        raise ManifestError(path, f"document is {size_text(size)} as JSON, over cvo's limit of "
                                  f"{size_text(MAX_DOCUMENT_BYTES)} (see docs/loading.md)", number)
    return (number, api_version, doc["kind"], metadata["name"], namespace, annotations, raw)


def parse_headers(data: bytes, path: str) -> list[Header]:
    """Decode a file's documents as library-go's ``ParseManifests`` does, with cvo's checks.

    Empty and ``null`` documents are dropped; every other document needs ``kind`` and a name, and the
    same resource twice in one file is an error.  Each header keeps the document's bytes as
    library-go's ``Manifest.Raw`` (:mod:`cvo.payload.yamlorjson`).  Raises :class:`ManifestError`
    with the file, the document number and the problem.
    """
    # only on a cache miss
    from cvo.payload.yamlorjson import Rejected, decode
    from cvo.payload.yamlparse import DocumentError, LimitExceeded

    try:
        documents = decode(data, unmarshal_problem)
    except (LimitExceeded, Rejected) as err:
        where = f"line {err.line}: " if err.line and isinstance(err, LimitExceeded) else ""
        raise ManifestError(path, f"{where}{err}", err.document) from None
    except DocumentError as err:
        where = f", line {err.line}" if err.line else ""
        raise ManifestError(path, f"invalid YAML/JSON{where}: {err}", err.document) from None
    except UnicodeDecodeError as err:
        raise ManifestError(path, f"not UTF-8 text: {err.reason}") from None
    headers: list[Header] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for number, (doc, raw, floats) in enumerate(documents, start=1):
        if doc is None:
            continue
        if problem := unmarshal_problem(doc):
            raise ManifestError(path, problem, number)
        header = _header(doc, raw, floats, path, number)
        group = header[1].rpartition("/")[0] if "/" in header[1] else ""
        key = (group, header[2], header[4], header[3])
        if key in seen:
            what = f"{header[2]} {header[4] + '/' if header[4] else ''}{header[3]}"
            raise ManifestError(path, f"duplicate resource {printable(what, 200)} (also document {seen[key]})", number)
        seen[key] = number
        headers.append(header)
    return headers


def manifests_from_headers(headers: list[Header], file: str, path: str) -> list[Manifest]:
    return [Manifest(file, path, h[0], h[1], h[2], h[3], h[4], h[5], h[6]) for h in headers]
