"""What cvo refuses to read: input limits and file-type checks, in one place.

Every reader of user input (release manifests, ``release-metadata``, ``image-references``, the
``--operators`` file, scenario files) goes through :func:`read_input`, and the YAML/JSON decoder
enforces the per-document limits below.  Each limit is far above what a real payload needs (the
numbers for the 5.0 nightly corpus are in the comments) and is explained in ``docs/loading.md``.

The CVO reads whatever it finds in the payload image; cvo reads local directories a person or a
script put together, so it is deliberately stricter: only regular files are read (a symbolic link
to a regular file is followed), and nothing is read past a limit.
"""

from __future__ import annotations

import errno
import os
import stat

KIB = 1024
MIB = 1024 * KIB

# One file, before or after template rendering (corpus: 1.49 MB at most).
MAX_FILE_BYTES = 16 * MIB
# All files of one release read together (corpus: 19 MB; the benchmarks' 20x copy: 341 MB): bounds
# the memory a cold load holds (a warm one drops each file's bytes once the parse cache has it).
MAX_RELEASE_BYTES = 512 * MIB
# One document as the JSON cvo sends (corpus: 0.71 MB at most); the API server refuses request
# bodies over 3 MiB, so a larger object could never be applied.
MAX_DOCUMENT_BYTES = 3 * MIB
# Documents in one file (corpus: 22 at most).
MAX_DOCUMENTS_PER_FILE = 10_000
# Nested mappings and sequences in one document, the document itself being level 1 (corpus: 40 at
# most); below the 254 levels orjson can encode, and far below Python's recursion limit.
MAX_DEPTH = 200
# What aliases may repeat in one file, as JSON bytes.  go-yaml v2's ratio rule (yamlparse.py) counts
# nodes, not bytes: one alias of a 1 MB string is one node.
MAX_ALIAS_EXPANSION_BYTES = 3 * MIB

# go-yaml v2 decode.go: the share of decode operations that may come from alias expansion.
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
ALIAS_MIN_ALIASED = 100  # aliasCount > 100 ...
ALIAS_MIN_DECODED = 1000  # ... and decodeCount > 1000 before the ratio is checked


def allowed_alias_ratio(decode_count: int) -> float:
    """go-yaml v2's ``allowedAliasRatio``: 99% for small documents, scaling down to 10% for large ones."""
    if decode_count <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decode_count >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * ((decode_count - ALIAS_RATIO_RANGE_LOW) / span)


def excessive_aliasing(alias_count: int, decode_count: int) -> bool:
    """go-yaml v2's test in ``decoder.unmarshal``: "document contains excessive aliasing"."""
    return (alias_count > ALIAS_MIN_ALIASED and decode_count > ALIAS_MIN_DECODED
            and alias_count / decode_count > allowed_alias_ratio(decode_count))


class InputError(ValueError):
    """Input that cannot be used; ``str()`` is one line naming the file (and document) and the problem."""

    def __init__(self, path: str, message: str, document: int | None = None) -> None:
        where = f"{path}" if document is None else f"{path} (document {document})"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.document = document
        self.problem = message


def size_text(n: int) -> str:
    """``16 MiB``, ``1.5 MiB``, ``700 KiB``, ``12 bytes``."""
    for unit, size in (("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def printable(text: str, limit: int | None = None) -> str:
    """``text`` fit for a one-line message: control characters (newlines too) escaped, shortened to ``limit``."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                       for ch in text)
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def display_name(name: str | bytes) -> str:
    """A file name as it can be printed on one line: bytes that are not UTF-8 shown as ``\\xNN``,
    control characters escaped."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    return printable(raw.decode("utf-8", "backslashreplace"))


def is_utf8_name(name: str) -> bool:
    try:
        os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str:
    kind = next((text for test, text in _KINDS if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file (cvo reads only regular files)"


def _os_problem(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "symbolic link loop (too many levels of symbolic links)"
    if err.errno == errno.ENOENT:
        return "file not found"
    if err.errno == errno.ENOTDIR:
        return "file not found (a parent is not a directory)"
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return f"cannot read: {err.strerror or err}"


def check_size(size: int, display: str, limit: int, what: str = "file") -> None:
    if size > limit:
        raise InputError(display, f"{what} is {size_text(size)}, over cvo's limit of {size_text(limit)} "
                                  "(see docs/loading.md)")


def read_input(path: str | os.PathLike[str], display: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them; :class:`InputError` for anything else.

    A symbolic link to a regular file is followed; a link loop, a dangling link, a directory, a FIFO,
    a device or a socket is refused without being opened for reading (a FIFO would block, a device
    would never end).  Never reads more than ``limit + 1`` bytes (default :data:`MAX_FILE_BYTES`),
    whatever the file claims its size is.
    """
    if limit is None:
        limit = MAX_FILE_BYTES
    p = os.fspath(path)  # not a Path: read once per file, 900 times for the corpus
    try:
        st = os.stat(p)
    except OSError as err:
        if err.errno == errno.ENOENT and os.path.islink(p):
            raise InputError(display, "file not found (dangling symbolic link)") from None
        raise InputError(display, _os_problem(err)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(display, _not_regular(st.st_mode))
    check_size(st.st_size, display, limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except OSError as err:
        raise InputError(display, _os_problem(err)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the stat and the open
            raise InputError(display, _not_regular(st.st_mode))
        chunks: list[bytes] = []
        remaining = limit + 1
        want = st.st_size + 1 if st.st_size else 64 * KIB  # one read for a file that is what it says
        while remaining > 0:
            chunk = os.read(fd, min(remaining, want))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
            want = MIB
    except OSError as err:
        raise InputError(display, _os_problem(err)) from None
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > limit:
        raise InputError(display, f"file is over cvo's limit of {size_text(limit)} (see docs/loading.md)")
    return data


def read_text_input(path: str | os.PathLike[str], display: str, limit: int | None = None) -> str:
    """:func:`read_input` decoded as UTF-8 (a BOM is dropped)."""
    data = read_input(path, display, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(display, f"not UTF-8 text: {err.reason} at byte {err.start}") from None
