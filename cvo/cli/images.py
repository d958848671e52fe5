"""Release images on the command line: the registry flags, and a pull spec where a directory is accepted.

Every command that reads a release takes a directory or a pull spec (``REGISTRY/REPO@sha256:…``,
``REGISTRY/REPO:TAG``, ``oci:DIR[:TAG]``); an existing path is always a directory.  The image is pulled
into the cache (:func:`cvo.images.pull.pull_release`) and read from there, known by its digest.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cvo.cli.errors import CommandFailed, UsageError

if TYPE_CHECKING:
    from cvo.images.errors import ImageError
    from cvo.images.pull import PulledRelease, PullOptions

# Commands that only read an image give up within a minute (oc's own default is a minute too).
READ_TIMEOUT = "1m"


def add_registry_flags(parser: argparse.ArgumentParser, *, timeout: bool = False) -> None:
    """``--registry-config``, ``--registry-ca``, ``--insecure-registry`` (and ``--timeout`` for the commands that
    only read an image)."""
    group = parser.add_argument_group("release images")
    group.add_argument("--registry-config", type=Path, default=None, metavar="FILE",
                       help="registry credentials, a docker config.json (default: $REGISTRY_AUTH_FILE, then "
                            "$XDG_RUNTIME_DIR/containers/auth.json, then ~/.docker/config.json)")
    group.add_argument("--registry-ca", type=Path, default=None, metavar="FILE",
                       help="PEM certificates to trust for registries, besides the system's")
    group.add_argument("--insecure-registry", action="store_true",
                       help="allow plain HTTP and unverified TLS to registries (never for a production cluster)")
    if timeout:
        group.add_argument("--timeout", default=READ_TIMEOUT, metavar="DURATION",
                           help=f"give up on the image after this long, retries included (default {READ_TIMEOUT}; 0: the default)")


@dataclass(frozen=True)
class ImageFlags:
    """The registry flags, parsed once."""

    registry_config: Path | None = None  # --registry-config (else $REGISTRY_AUTH_FILE and the defaults)
    registry_ca: Path | None = None  # --registry-ca
    insecure: bool = False  # --insecure-registry
    timeout: float = 60.0  # seconds for a whole pull, retries included

    @classmethod
    def from_args(cls, args: argparse.Namespace, timeout: float | None = None) -> ImageFlags:
        from cvo.operators.behaviour import parse_duration

        flags = vars(args)
        if timeout is None:
            text = flags.get("timeout") or READ_TIMEOUT
            try:
                timeout = parse_duration(str(text), "--timeout")
            except ValueError as err:
                raise UsageError(str(err)) from None
            if timeout == 0:  # a sweep's "0: never" leaves the pull its own limit
                timeout = parse_duration(READ_TIMEOUT, "--timeout")
        config = flags.get("registry_config") or (Path(os.environ["REGISTRY_AUTH_FILE"])
                                                  if os.environ.get("REGISTRY_AUTH_FILE") else None)
        return cls(config, flags.get("registry_ca"), bool(flags.get("insecure_registry")), timeout)

    def pull_options(self, architecture: str | None = None) -> PullOptions:
        from cvo.images.options import RegistryOptions
        from cvo.images.pull import PullOptions

        registry = RegistryOptions(registry_config=self.registry_config, ca_file=self.registry_ca,
                                   insecure=self.insecure)
        options = PullOptions(registry=registry, timeout=self.timeout)
        if architecture is not None:
            from dataclasses import replace

            options = replace(options, architecture=architecture)
        return options


def is_image(spec: str) -> bool:
    """``spec`` names an image, not a directory (an existing path is always a directory)."""
    from cvo.images.reference import looks_like_image

    return looks_like_image(spec) and (spec.startswith(("oci:", "docker://")) or not Path(spec).exists())


def fail(err: ImageError) -> UsageError | CommandFailed:
    """The command's error for ``err``: a pull spec or flag that cannot be used exits 2, the rest 1."""
    from cvo.images.errors import Problem

    return UsageError(str(err)) if err.problem is Problem.INVALID else CommandFailed(str(err))


def pull(spec: str, flags: ImageFlags, architecture: str | None = None) -> PulledRelease:
    """The release image ``spec``, pulled into the cache (a second pull of its digest reads the cache)."""
    from cvo.images.errors import ImageError
    from cvo.images.pull import pull_release

    try:
        return pull_release(spec, flags.pull_options(architecture))
    except ImageError as err:
        raise fail(err) from None


def check_image(spec: str, flag: str) -> None:
    """``spec`` parses as a pull spec; else a :class:`UsageError` naming ``flag``."""
    from cvo.images.errors import ImageError
    from cvo.images.reference import parse_image

    try:
        parse_image(spec)
    except ImageError as err:
        raise UsageError(f"{flag}: {err}" if flag.startswith("--") else str(err)) from None
