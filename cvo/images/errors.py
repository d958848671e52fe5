"""The one error of :mod:`cvo.images`: ``str()`` is one line naming the image and what is wrong."""

from __future__ import annotations

from enum import Enum


class Problem(Enum):
    """What kind of failure an :class:`ImageError` is: callers decide exit codes and retries by it."""

    INVALID = "invalid"            # a pull spec, config file or option that cannot be used (exit 2)
    NOT_FOUND = "not-found"        # 404: no such repository, tag, manifest or blob
    UNAUTHORIZED = "unauthorized"  # 401 after every credential tried, or 403
    TRANSIENT = "transient"        # 5xx, 429, reset or stalled connections, after the retries ran out
    REFUSED = "refused"            # content cvo will not use: digest mismatch, bad media type, unsafe layer
    UNAVAILABLE = "unavailable"    # the registry could not be reached at all (DNS, refused, TLS)


class ImageError(Exception):
    """An image cannot be used; ``image`` is the pull spec as the user wrote it (never credentials)."""

    def __init__(self, image: str, message: str, problem: Problem = Problem.REFUSED) -> None:
        super().__init__(f"image {image}: {message}")
        self.image = image
        self.message = message
        self.problem = problem
