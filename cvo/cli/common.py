"""Flags and helpers shared by the commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from cvo.cli.errors import CommandFailed as CommandFailed  # re-exported: the commands import both from here
from cvo.cli.errors import Refused as Refused
from cvo.cli.errors import UsageError as UsageError
from cvo.cli.load_progress import for_terminal
from cvo.payload.filters import (
    DEFAULT_PROFILE,
    KNOWN_CAPABILITIES,
    KNOWN_FEATURE_SETS,
    KNOWN_PROFILES,
    ApplyFilter,
    LoadFilter,
    parse_list,
)
from cvo.payload.limits import display_name, is_utf8_name
from cvo.payload.loader import (
    LoadError,
    ProgressCallback,
    ReadRelease,
    Release,
    finish_release,
    load_release,
    read_release,
)

if TYPE_CHECKING:
    from cvo.cluster.api import ApiError

EXIT_OK = 0
EXIT_FAILED = 1  # the command ran and found problems (lint errors, a failed sweep)
EXIT_USAGE = 2  # bad flags or bad input: nothing was done


@dataclass(frozen=True)
class PayloadOptions:
    """What a command reads of a release, and how: its payload selection flags (:func:`payload_options`)."""

    load_filter: LoadFilter  # --profile, --feature-set, --feature-gates, --exclude: the manifests read
    apply_filter: ApplyFilter  # --capabilities, --feature-gates: what a sweep applies of them
    version: str | None  # --release-version: the version of a plain manifest directory
    release_image: str | None  # --release-image: the pull spec for {{.ReleaseImage}} (None: file://RELEASE_DIR)
    use_cache: bool  # not --no-cache: read and write the parse cache
    directory: Path | None = None  # RELEASE_DIR (cvo upgrade: --to, cvo reconcile: --release; None: not given)
    image: str | None = None  # RELEASE as a pull spec: ``directory`` is its tree in the image cache


@dataclass(frozen=True)
class OutputOptions:
    """How a command prints: its result on stdout, its logs and errors on stderr (:meth:`from_args`)."""

    format: str = "text"  # -o/--output: text, or a structured format (json, yaml) where the command has one
    headers: bool = True  # not --no-headers: the tables' header lines
    log_format: str = "text"  # --log-format: log lines and errors on stderr as text or JSON lines
    verbose: int = 0  # -v (counted): 1, every event of a sweep; 2, debug

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> OutputOptions:
        flags = vars(args)
        return cls(format=flags.get("output") or "text", headers=not flags.get("no_headers"),
                   log_format=flags.get("log_format") or "text", verbose=int(flags.get("verbose") or 0))


def add_payload_flags(parser: argparse.ArgumentParser, *, read_only: bool = False) -> None:
    """RELEASE and the payload selection flags; ``read_only`` (a command that only reads the release): with
    ``--timeout`` for the image pull (commands that sweep have their own ``--timeout``, which the pull shares)."""
    parser.add_argument("release_dir", metavar="RELEASE",
                        help="release directory (with release-manifests/), a plain directory of manifests, or a "
                             "release image: REGISTRY/REPO@sha256:DIGEST, REGISTRY/REPO:TAG or oci:DIR[:TAG]")
    group = parser.add_argument_group("payload selection")
    group.add_argument("--release-version", dest="version", metavar="VERSION", help="release version of a plain manifest directory (no release-metadata)")
    group.add_argument("--release-image", metavar="PULLSPEC",
                       help="release image pull spec for {{.ReleaseImage}} (default: file://RELEASE_DIR)")
    group.add_argument("--profile", default=DEFAULT_PROFILE,
                       metavar="PROFILE",
                       help=f"cluster profile: include.release.openshift.io/<profile>; one of {', '.join(KNOWN_PROFILES)} "
                            f"(default {DEFAULT_PROFILE})")
    group.add_argument("--feature-set", default="", metavar="SET",
                       help=f"cluster feature set: {', '.join(KNOWN_FEATURE_SETS)} (default: Default)")
    group.add_argument("--feature-gates", default="", metavar="A,B", help="enabled feature gates")
    group.add_argument("--capabilities", default=None, metavar="A,B",
                       help="enabled capabilities (default: every known capability)")
    group.add_argument("--exclude", metavar="ID", help="skip manifests annotated exclude.release.openshift.io/ID=true")
    group.add_argument("--no-cache", action="store_true", help="parse every file again; do not read or write the parse cache")
    from cvo.cli.images import add_registry_flags

    add_registry_flags(parser, timeout=read_only)


# Flags whose text reaches the output (JSON must be valid Unicode): refused when not UTF-8.
TEXT_FLAGS = ("profile", "feature_set", "feature_gates", "capabilities", "exclude", "version", "release_image")


def non_negative_int(text: str) -> int:
    """argparse type: an integer, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def check_text_flags(args: argparse.Namespace) -> None:
    """A flag or path given in bytes that are not UTF-8 is a usage error, not a crash in the output."""
    for name in TEXT_FLAGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not is_utf8_name(value):
            flag = "release-version" if name == "version" else name.replace("_", "-")
            raise UsageError(f"--{flag}: {display_name(value)!r} is not UTF-8 text")


def payload_options(args: argparse.Namespace) -> PayloadOptions:
    check_text_flags(args)
    if args.profile not in KNOWN_PROFILES:
        raise UsageError(f"--profile: unknown cluster profile {args.profile!r}; known: {', '.join(KNOWN_PROFILES)}")
    feature_set = args.feature_set
    if feature_set == "Default":
        feature_set = ""
    if feature_set and feature_set not in KNOWN_FEATURE_SETS:
        raise UsageError(f"--feature-set: unknown feature set {feature_set!r}; known: {', '.join(KNOWN_FEATURE_SETS)}")
    gates = parse_list(args.feature_gates)
    if args.capabilities is None:
        enabled = frozenset(KNOWN_CAPABILITIES)
    else:
        enabled = parse_list(args.capabilities)
        unknown = sorted(enabled - set(KNOWN_CAPABILITIES))
        if unknown:
            raise UsageError(f"--capabilities: unknown capability {', '.join(unknown)}; known: {', '.join(KNOWN_CAPABILITIES)}")
    directory, image, release_image = _release_source(args, vars(args).get("release_dir"))
    return PayloadOptions(
        load_filter=LoadFilter(profile=args.profile, feature_set=feature_set, feature_gates=gates,
                               exclude_id=args.exclude),
        apply_filter=ApplyFilter(enabled_capabilities=enabled, feature_gates=gates),
        version=args.version,
        release_image=args.release_image or release_image,
        use_cache=not args.no_cache,
        directory=directory,
        image=image,
    )


def _release_source(args: argparse.Namespace, given: str | Path | None) -> tuple[Path | None, str | None, str | None]:
    """RELEASE as (directory, pull spec, release image): a directory as given; a pull spec pulled into the image
    cache (its tree, the spec, and the image known by its digest)."""
    if given is None:
        return None, None, None
    from cvo.cli.images import ImageFlags, is_image, pull

    if isinstance(given, Path) or not is_image(given):
        return Path(given), None, None
    pulled = pull(given, ImageFlags.from_args(args))
    return pulled.directory, given, pulled.pull_spec


def load(options: PayloadOptions, log_format: str = "text") -> Release:
    """The release of ``options.directory``; a long load shows its progress on a terminal."""
    assert options.directory is not None
    progress = for_terminal(log_format)
    try:
        return load_release(options.directory, version=options.version, release_image=options.release_image,
                            load_filter=options.load_filter, use_cache=options.use_cache, on_progress=progress)
    except LoadError as err:
        raise UsageError("\n".join(err.errors)) from None
    finally:
        if progress is not None:
            progress.close()


def read(options: PayloadOptions, progress: ProgressCallback | None = None) -> ReadRelease:
    """The files of ``options.directory``, read but not parsed, every file's bytes kept (``cvo plan``
    hashes them all before it knows whether it needs to parse anything)."""
    assert options.directory is not None
    try:
        return read_release(options.directory, version=options.version, release_image=options.release_image,
                            load_filter=options.load_filter, on_progress=progress)
    except LoadError as err:
        raise UsageError("\n".join(err.errors)) from None


def finish(read: ReadRelease, options: PayloadOptions, progress: ProgressCallback | None = None) -> Release:
    """What :func:`read` read, parsed and filtered."""
    try:
        return finish_release(read, use_cache=options.use_cache, on_progress=progress)
    except LoadError as err:
        raise UsageError("\n".join(err.errors)) from None


def describe_api_error(err: ApiError) -> str:
    """The ``error:`` text for an API error that ends a command (exit 1)."""
    from cvo.cluster.persist import GaveUp

    if isinstance(err, GaveUp):
        return f"the cluster kept failing ({err.kind.value}): {err}"
    return f"the cluster refused a request ({err.kind.value}): {err}"


def terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to; ``None`` when it is not a terminal (piped output keeps its
    lines whole).  As ``shutil.get_terminal_size``: ``COLUMNS`` when set to a positive number, else the
    terminal's own width, else 80 (a pseudo-terminal nobody sized reports 0 columns)."""
    import os

    try:
        if not stream.isatty():
            return None
    except (ValueError, AttributeError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = 0
    return width if width > 0 else 80


def terminal_rows(stream: TextIO) -> int | None:
    """The height of the terminal ``stream`` writes to (``LINES``, else the terminal's, else 24); ``None`` when
    it is not a terminal."""
    import os

    if terminal_width(stream) is None:
        return None
    lines = os.environ.get("LINES", "")
    if lines.isdigit() and int(lines) > 0:
        return int(lines)
    try:
        rows = os.get_terminal_size(stream.fileno()).lines
    except (OSError, ValueError, AttributeError):
        rows = 0
    return rows if rows > 0 else 24


def print_error(message: str, *, whole: bool = False) -> None:
    """``error: …`` on stderr, a line per line of ``message``; with ``--log-format json`` JSON documents.
    ``whole``: one error whose later lines follow its ``error:`` line as they are (one JSON document)."""
    from cvo.log import error_line

    if whole:
        print(error_line(message), file=sys.stderr)
        return
    for line in message.splitlines() or [message]:
        print(error_line(line), file=sys.stderr)


class Parser(argparse.ArgumentParser):
    """argparse with cvo's error convention: one ``error:`` line (JSON with ``--log-format json``), exit 2,
    naming the command and where its help is, instead of a usage block and ``cvo: error:``."""

    def error(self, message: str) -> NoReturn:
        self.fail(self.prog, _with_suggestion(message))

    def format_help(self) -> str:
        """argparse's help, then the epilog (a command's ``Examples:``) as written: its lines are command lines
        and comments, which argparse would run together into one paragraph."""
        epilog, self.epilog = self.epilog, None
        try:
            text = super().format_help()
        finally:
            self.epilog = epilog
        return text + ("\n" + epilog.strip("\n") + "\n" if epilog else "")

    @staticmethod
    def fail(prog: str, message: str) -> NoReturn:
        print_error(f"{prog}: {message} (see '{prog} --help')")
        raise SystemExit(EXIT_USAGE)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """Unknown arguments are reported under the command they were given to (``cvo install: …``)."""
        parsed, extras = self.parse_known_args(args, namespace)
        after = vars(parsed).pop(VERBOSE_AFTER, 0)
        parsed.verbose = getattr(parsed, "verbose", 0) + after  # -v is additive on both sides of the command
        if extras:
            chosen = self._subparser(parsed)
            prog = chosen.prog
            hint = ""
            flags = [o for a in chosen._actions for o in a.option_strings if o.startswith("--")]
            if extras[0].startswith("--"):
                import difflib

                typed = extras[0].split("=", 1)[0]
                close = [c for c in difflib.get_close_matches(typed, flags, n=2, cutoff=0.7) if c != typed]
                hint = f"; did you mean {close[0]}?" if close else ""
            self.fail(prog, f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _subparser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the command ``parsed`` holds, a sub-command's when it has one (``cvo graph serve``);
        this one when none."""
        parser: argparse.ArgumentParser = self
        while True:
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction) and \
                        getattr(parsed, action.dest, None) in action.choices:
                    parser = action.choices[getattr(parsed, action.dest)]
                    break
            else:
                return parser


def _with_suggestion(message: str) -> str:
    """argparse's "invalid choice: 'instal' (choose from …)" as "invalid choice: 'instal'; did you mean 'install'?"
    when a choice is close (a typo); the list of choices otherwise."""
    import difflib
    import re

    match = re.match(r"(.*invalid choice: '(.*)') \(choose from (.*)\)$", message, re.S)
    if match is None:
        return message
    choices = re.findall(r"'([^']*)'", match.group(3))
    close = difflib.get_close_matches(match.group(2), choices, n=2, cutoff=0.7)
    if close:
        return f"{match.group(1)}; did you mean {' or '.join(repr(c) for c in close)}?"
    return message


# The flags every command accepts, before or after its name (kubectl's global flags).  The top-level
# parser holds their defaults; a command's parser declares them again with SUPPRESS as its default, so
# that a flag given after the command overrides the one before it and an absent one changes nothing.
# -v is the exception: it counts, on both sides (the command's count goes to VERBOSE_AFTER and is added).
VERBOSE_AFTER = "verbose_after_command"
KUBECONFIG_HELP = ("talk to the real cluster of this kubeconfig instead of the embedded one (with --context "
                   "alone: $KUBECONFIG, else ~/.kube/config). $KUBECONFIG alone is deliberately ignored: "
                   "without --kubeconfig or --context every command uses the embedded cluster")


def add_global_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``-v``, ``--log-format``, ``--no-color``, ``--kubeconfig``, ``--context``, ``--state``."""
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    have = {o for a in parser._actions for o in a.option_strings}
    group = parser.add_argument_group("global flags (before or after the command)")
    if "-v" not in have:  # counted on each side, added up by Parser.parse_args: -v install -v is -vv
        group.add_argument("-v", "--verbose", action="count", dest="verbose" if top else VERBOSE_AFTER,
                           default=default(0), help="more log output: -v every event of a sweep, -vv debug")
    if "--log-format" not in have:
        group.add_argument("--log-format", choices=["text", "json"], default=default("text"),
                           help="log lines and errors on stderr as text (default) or JSON lines")
    if "--no-color" not in have:
        group.add_argument("--no-color", dest="no_color", action="store_true", default=default(False),
                           help="no colours on stderr (also: the NO_COLOR environment variable)")
    if "--kubeconfig" not in have:
        group.add_argument("--kubeconfig", default=default(None), metavar="PATH", help=KUBECONFIG_HELP)
    if "--context" not in have:
        group.add_argument("--context", default=default(None), metavar="NAME",
                           help="the kubeconfig context to use (default: its current-context); implies a real cluster")
    if "--state" not in have:
        group.add_argument("--state", type=Path, default=default(None), metavar="FILE",
                           help="the embedded cluster's store, an SQLite file that several cvo commands can "
                                "use at once (default: $CVO_STATE or ~/.local/state/cvo/sim-cluster.db); 'none' "
                                "keeps the cluster in memory for this command only")


def add_saved_flags(parser: argparse.ArgumentParser) -> None:
    """``--from-file`` and ``--now``: a read-only command over saved objects instead of a cluster
    (:func:`cvo.cli.backend.saved_cluster`; here, so that registering them imports no cluster code)."""
    group = parser.add_argument_group("saved objects")
    group.add_argument("--from-file", dest="from_file", action="append", default=None, metavar="PATH",
                       help="read the cluster from saved objects instead (repeatable): a YAML or JSON file of objects "
                            "(single objects or kind: List, as 'oc get -o yaml' writes them) or a directory of "
                            "such files, e.g. a must-gather's cluster-scoped-resources; writes are refused")
    group.add_argument("--now", default=None, metavar="RFC3339",
                       help="with --from-file: the moment the objects describe (default: the latest "
                            "lastTransitionTime of the ClusterVersion's and ClusterOperators' conditions)")


def uses_saved_objects(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "from_file", None))
