"""``cvo release new|info|extract|sign``: release images as ``oc adm release`` builds and reads them.

``new`` builds a release image from a release directory and pushes it (openshift/oc
``pkg/cli/admin/release/new.go``); ``info`` prints what ``info.go`` prints; ``extract`` writes the image's
``release-manifests/`` and ``manifests/`` (``extract.go``; oc writes the files flat, cvo keeps the two
directories so that ``cvo plan DIR`` reads the result back); ``sign`` writes a signature of the image's
digest to a signature store with GnuPG (what the CVO verifies: library-go ``pkg/verify``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from cvo.cli.common import (
    EXIT_OK,
    CommandFailed,
    OutputOptions,
    UsageError,
    add_payload_flags,
    payload_options,
)
from cvo.cli.images import ImageFlags, add_registry_flags, check_image, fail, pull
from cvo.cli.output import STRUCTURED, TEXT, add_output_flag, dump, is_structured

KEPT = ("release-manifests", "manifests")

RELEASE_EXAMPLES = """\
Examples:
  # Build, describe, sign and extract a release image in an OCI layout directory
  cvo release new --from-dir payloads/demo-4.16.3 --to oci:releases:4.16.3
  cvo release info oci:releases:4.16.3
  cvo release sign oci:releases:4.16.3 --key releases@example.com --to /srv/signatures
  cvo release extract oci:releases:4.16.3 --to /tmp/4.16.3
"""
NEW_EXAMPLES = """\
Examples:
  # The demo's 4.16.3 as an image in an OCI layout directory (no registry needed)
  cvo release new --from-dir payloads/demo-4.16.3 --to oci:releases:4.16.3

  # Pushed to a registry
  cvo release new --from-dir payloads/demo-4.16.3 --to registry.example.com/ocp/release:4.16.3
"""
INFO_EXAMPLES = """\
Examples:
  cvo release info oci:releases:4.16.3
  cvo release info quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64 -o json | jq .metadata
"""
EXTRACT_EXAMPLES = """\
Examples:
  # release-manifests/ and manifests/ of the image, as a directory cvo plan reads
  cvo release extract oci:releases:4.16.3 --to /tmp/4.16.3 && cvo plan /tmp/4.16.3

  # Only what a cluster of this profile and these capabilities would apply
  cvo release extract oci:releases:4.16.3 --to /tmp/included --included --capabilities baremetal,Console
"""
SIGN_EXAMPLES = """\
Examples:
  # Sign with a key of your GnuPG keyring into a file signature store (STORE/sha256=HEX/signature-N)
  cvo release sign oci:releases:4.16.3 --key releases@example.com --to /srv/signatures
"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    release = sub.add_parser("release", help="build, describe, extract and sign release images",
                             description="Release images as 'oc adm release' builds and reads them "
                                         "(docs/images.md).", epilog=RELEASE_EXAMPLES)
    verbs = release.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    new = verbs.add_parser("new", help="build a release image from a release directory and push it",
                           epilog=NEW_EXAMPLES)
    new.add_argument("--from-dir", type=Path, required=True, metavar="DIR",
                     help="a release directory: release-manifests/ (with release-metadata and image-references) "
                          "and manifests/")
    new.add_argument("--to", dest="to_image", required=True, metavar="IMAGE",
                     help="where to push it: REGISTRY/REPO:TAG or oci:DIR[:TAG]")
    new.add_argument("--base", default=None, metavar="IMAGE",
                     help="the cluster-version-operator image whose layers hold manifests/ (default: a layer "
                          "made from DIR/manifests)")
    add_registry_flags(new, timeout=True)
    add_output_flag(new, (TEXT, *STRUCTURED), "cvo release new --from-dir DIR --to oci:out -o json | jq .digest",
                    what="what was pushed")
    new.set_defaults(func=run_new)

    info = verbs.add_parser("info", help="print what a release image holds, as 'oc adm release info'",
                            epilog=INFO_EXAMPLES)
    info.add_argument("image", metavar="IMAGE")
    add_registry_flags(info, timeout=True)
    add_output_flag(info, (TEXT, *STRUCTURED), "cvo release info IMAGE -o json | jq .digest",
                    what="the release's description")
    info.set_defaults(func=run_info)

    extract = verbs.add_parser("extract", help="write a release image's manifests to a directory",
                               epilog=EXTRACT_EXAMPLES)
    extract.add_argument("--to", dest="to_dir", type=Path, required=True, metavar="DIR",
                         help="where to write release-manifests/ and manifests/ (created; must be empty if it exists)")
    extract.add_argument("--included", action="store_true",
                         help="only the documents a cluster of --profile, --feature-set, --feature-gates and "
                              "--capabilities includes, as 'oc adm release extract --included'")
    add_payload_flags(extract, read_only=True)
    extract.set_defaults(func=run_extract)

    sign = verbs.add_parser("sign", help="sign a release image's digest into a signature store (GnuPG)",
                            epilog=SIGN_EXAMPLES)
    sign.add_argument("image", metavar="IMAGE")
    sign.add_argument("--key", required=True, metavar="KEY",
                      help="the signing key: a fingerprint, key id or user id in the GnuPG keyring")
    sign.add_argument("--to", dest="store", type=Path, required=True, metavar="STORE",
                      help="the signature store directory (written as STORE/sha256=HEX/signature-N)")
    sign.add_argument("--gnupg-home", type=Path, default=None, metavar="DIR",
                      help="the GnuPG home holding the key (default: $GNUPGHOME, else ~/.gnupg)")
    add_registry_flags(sign, timeout=True)
    sign.set_defaults(func=run_sign)


def run_extract(args: argparse.Namespace) -> int:
    """The image's two payload directories, written to ``--to`` (straight from the layers, or copied from the image
    cache); ``--included``: only the documents the flags' cluster includes (release-metadata and image-references
    as they are)."""
    from cvo.images.errors import ImageError
    from cvo.images.pull import pull_release

    target: Path = args.to_dir
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"--to {target}: exists and is not an empty directory")
    if not is_release_image_arg(args.release_dir):
        raise UsageError(f"{args.release_dir}: not a release image (REGISTRY/REPO@sha256:…, REGISTRY/REPO:TAG, "
                         "oci:DIR[:TAG])")
    check_image(args.release_dir, "IMAGE")
    flags = ImageFlags.from_args(args)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        target.rmdir()
    if args.included:
        options = payload_options(args)  # pulls into the cache
        assert options.directory is not None
        staging = Path(tempfile.mkdtemp(prefix=".cvo-extract-", dir=target.parent))
        try:
            _write_included(options.directory, staging, options)
            staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    else:
        try:
            pull_release(args.release_dir, flags.pull_options(), into=target)
        except ImageError as err:
            raise fail(err) from None
    files = sum(1 for p in target.rglob("*") if p.is_file())
    print(f"extracted {args.release_dir} to {target}: {files} files", file=sys.stderr)
    return EXIT_OK


def is_release_image_arg(spec: str) -> bool:
    from cvo.cli.images import is_image

    return is_image(spec)


def _write_included(source: Path, target: Path, options: object) -> None:
    """The documents of ``source`` a cluster of ``options`` includes, file by file, in their directories."""
    import yaml

    from cvo.cli.common import PayloadOptions, load
    from cvo.payload.filters import apply_exclusion

    assert isinstance(options, PayloadOptions)
    release = load(options)
    kept: dict[str, list[object]] = defaultdict(list)
    for manifest in release.manifests:
        if apply_exclusion(manifest, options.apply_filter) is None:
            kept[manifest.path].append(manifest.obj)
    for name in KEPT:
        root = source / name
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(source)
            if not path.is_file():
                continue
            out = target / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix in (".yaml", ".yml", ".json"):
                documents = kept.get(str(relative))
                if documents:
                    out.write_text(yaml.safe_dump_all(documents, sort_keys=False))
            else:  # release-metadata, image-references and other files the loader does not apply
                shutil.copyfile(path, out)


def run_sign(args: argparse.Namespace) -> int:
    """Resolve the image to its digest and write a signature of it with GnuPG."""
    from cvo.images.errors import ImageError
    from cvo.images.pull import resolve
    from cvo.verify.errors import SigningFailed
    from cvo.verify.sign import sign

    check_image(args.image, "IMAGE")
    flags = ImageFlags.from_args(args)
    try:
        ref, digest = resolve(args.image, flags.pull_options())
    except ImageError as err:
        raise fail(err) from None
    try:
        path = sign(digest, ref.name, args.key, args.store, gnupg_home=args.gnupg_home)
    except (OSError, ValueError, SigningFailed) as err:
        raise CommandFailed(f"cannot sign {args.image}: {err}") from None
    print(f"signed {ref.name}@{digest}: {path}")
    return EXIT_OK


def run_info(args: argparse.Namespace) -> int:
    from cvo.images.info import describe, render_text, to_dict

    check_image(args.image, "IMAGE")
    output = OutputOptions.from_args(args)
    pulled = pull(args.image, ImageFlags.from_args(args))
    info = describe(pulled)
    if is_structured(output.format):
        sys.stdout.write(dump(to_dict(info), output.format))
    else:
        sys.stdout.write(render_text(info))
    return EXIT_OK


def run_new(args: argparse.Namespace) -> int:
    from cvo.images.build import build_release
    from cvo.images.errors import ImageError

    check_image(args.to_image, "--to")
    if not args.from_dir.is_dir():
        raise UsageError(f"--from-dir {args.from_dir}: not a directory")
    output = OutputOptions.from_args(args)
    flags = ImageFlags.from_args(args)
    try:
        built = build_release(args.from_dir, args.to_image, flags.pull_options(), base=args.base)
    except ImageError as err:
        raise fail(err) from None
    if is_structured(output.format):
        sys.stdout.write(dump({"image": args.to_image, "digest": built.digest, "pullSpec": built.pull_spec},
                              output.format))
    else:
        print(f"{args.to_image}: pushed, digest {built.digest}\n{built.pull_spec}")
    return EXIT_OK
