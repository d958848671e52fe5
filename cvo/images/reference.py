"""Pull specs: ``REGISTRY/REPO[:TAG][@sha256:HEX]`` (``docker://`` optional) and ``oci:DIR[:TAG]``.

The grammar is distribution's ``reference/regexp.go`` (``ReferenceRegexp``); the domain rule is
``reference/normalize.go`` ``splitDockerDomain``: the first component is a registry when it holds a
``.`` or a ``:`` or is ``localhost``.  Release pull specs always name their registry, so a name without
one is not taken for ``docker.io/library/…`` as docker does: it is not an image at all (the caller then
reads it as a directory).  Only ``sha256`` digests are accepted, as the CVO's ``RetrievePayload``
(``pkg/cvo/updatepayload.go``) verifies nothing else.  ``oci:DIR[:TAG]`` is containers/image's
``oci/layout`` ``ParseReference``: the path ends at the first colon.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from cvo.images.errors import ImageError, Problem

# distribution reference/regexp.go
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DOCKER = re.compile(
    rf"(?P<registry>{_DOMAIN})/(?P<repository>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}}))?",
    re.ASCII)
SHA256 = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)
_OCI_TAG = re.compile(rf"{_TAG}", re.ASCII)
# reference/reference.go NameTotalLengthMax
NAME_MAX = 255
OCI = "oci:"
DOCKER = "docker://"


@dataclass(frozen=True)
class ImageRef:
    """A parsed pull spec.  ``docker``: ``registry``/``repository`` with a ``tag`` and/or ``digest``;
    ``oci``: ``repository`` is the layout's directory and ``tag`` its ``org.opencontainers.image.ref.name``."""

    transport: Literal["docker", "oci"]
    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        if self.transport == "oci":
            return f"{OCI}{self.repository}" + (f":{self.tag}" if self.tag else "") + (
                f"@{self.digest}" if self.digest else "")
        return f"{self.registry}/{self.repository}" + (f":{self.tag}" if self.tag else "") + (
            f"@{self.digest}" if self.digest else "")

    @property
    def name(self) -> str:
        """The repository without tag or digest (``REGISTRY/REPO``; ``oci:DIR``)."""
        return f"{OCI}{self.repository}" if self.transport == "oci" else f"{self.registry}/{self.repository}"

    @property
    def reference(self) -> str:
        """What to ask the repository for: the digest when there is one, else the tag (``latest`` when
        neither is given, as docker does; an OCI layout's only image when it has no tag)."""
        return self.digest or self.tag or ("latest" if self.transport == "docker" else "")

    def by_digest(self, digest: str) -> ImageRef:
        """The same repository pinned to ``digest``, without a tag: how a release is recorded."""
        return replace(self, tag="", digest=digest)


def looks_like_image(spec: str) -> bool:
    """Whether ``spec`` is meant as an image rather than a directory (it may still be invalid)."""
    if spec.startswith((OCI, DOCKER)):
        return True
    if "://" in spec:  # file://DIR and other URLs are not pull specs
        return False
    first, slash, _ = spec.partition("/")
    return bool(slash) and ("." in first or ":" in first or first == "localhost") and (
        "@sha256:" in spec or not spec.startswith((".", "/", "~")))


def parse_image(spec: str) -> ImageRef:
    """``spec`` as an :class:`ImageRef`; :class:`ImageError` (``INVALID``) naming what is wrong."""
    if spec.startswith(OCI):
        return _parse_oci(spec)
    text = spec[len(DOCKER):] if spec.startswith(DOCKER) else spec
    match = _DOCKER.fullmatch(text)
    if match is None:
        raise ImageError(spec, "not a pull spec (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST] or oci:DIR[:TAG])",
                         Problem.INVALID)
    registry, repository = match["registry"], match["repository"]
    if len(f"{registry}/{repository}") > NAME_MAX:
        raise ImageError(spec, f"repository name longer than {NAME_MAX} characters", Problem.INVALID)
    digest = match["digest"] or ""
    if digest and not SHA256.fullmatch(digest):
        raise ImageError(spec, f"digest {digest!r} is not sha256:<64 lowercase hex digits>", Problem.INVALID)
    return ImageRef("docker", registry, repository, match["tag"] or "", digest)


def _parse_oci(spec: str) -> ImageRef:
    rest = spec[len(OCI):]
    rest, at, digest = rest.partition("@")
    if at and not SHA256.fullmatch(digest):
        raise ImageError(spec, f"digest {digest!r} is not sha256:<64 lowercase hex digits>", Problem.INVALID)
    path, colon, tag = rest.partition(":")
    if not path:
        raise ImageError(spec, "no directory after oci:", Problem.INVALID)
    if colon and not _OCI_TAG.fullmatch(tag):
        raise ImageError(spec, f"tag {tag!r} is not a valid reference", Problem.INVALID)
    return ImageRef("oci", "", path, tag, digest)
