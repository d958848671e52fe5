r"""The part of Go's text/template that the CVO's own ``manifests/`` directory uses.

The CVO renders ``manifests/`` with ``{ReleaseImage, ClusterProfile, Images}``.  cvo supports the
actions payloads use: ``{{.ReleaseImage}}``, ``{{ .ClusterProfile }}``, ``{{index .Images "tag"}}``,
a string literal ``{{ "text" }}`` or ``{{ `text` }}``, comments ``{{/* ... */}}``, and the ``{{-``/
``-}}`` whitespace trimmers.  Anything else raises :class:`TemplateError`; the loader then skips the
file with a warning, as the CVO does when rendering fails.  String literals are unquoted with Go's
rules (``strconv.Unquote``): an escape Go does not know, such as ``\q``, or a ``\u`` escape of a
surrogate is a template error, and ``\xNN``/octal escapes give bytes, as in Go.

Rendering is text in, text out; bytes that are not UTF-8 travel as ``surrogateescape`` characters
(decode the file with ``errors="surrogateescape"`` and encode the result the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cvo.payload.limits import printable

_FIELD = re.compile(r"^\.(ReleaseImage|ClusterProfile)$")
_INDEX = re.compile(r'^index\s+\.Images\s+("(?:[^"\\]|\\.)*"|`[^`]*`)$')
_LITERAL = re.compile(r'^("(?:[^"\\]|\\.)*"|`[^`]*`)$')
_COMMENT = re.compile(r"^/\*.*\*/$", re.S)


class TemplateError(ValueError):
    pass


class RenderTooLarge(ValueError):
    """The rendered text would be longer than the caller's limit."""


@dataclass(frozen=True)
class TemplateContext:
    """The values a manifests/ template may use."""

    release_image: str
    cluster_profile: str
    images: dict[str, str] = field(default_factory=dict)


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
                   '"': '"'}
_ESCAPE = re.compile(r"\\(?:([abfnrtv\\\"])|x([0-9A-Fa-f]{2})|([0-7]{3})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.?))", re.S)


def _unquote(token: str) -> str:
    """Go's ``strconv.Unquote`` of a template string literal (``"..."`` or a raw ```...```)."""
    if token.startswith("`"):
        return token[1:-1].replace("\r", "")  # Go drops carriage returns from raw strings
    body = token[1:-1]
    if "\n" in body:
        raise TemplateError("newline in a quoted string")
    if "\\" not in body:
        return body

    def escape(m: re.Match[str]) -> str:
        simple, hex_byte, octal, u4, u8, bad = m.groups()
        if simple is not None:
            return _SIMPLE_ESCAPES[simple]
        if hex_byte is not None or octal is not None:
            value = int(hex_byte, 16) if hex_byte is not None else int(octal, 8)
            if value > 255:
                raise TemplateError(f"octal escape \\{octal} is over 255 in a string literal")
            # A byte, as in Go: an ASCII character, or one byte of the output that may not be UTF-8.
            return chr(value) if value < 0x80 else bytes([value]).decode("utf-8", "surrogateescape")
        if bad is not None:
            raise TemplateError(f"unknown escape sequence \\{bad} in a string literal" if bad else
                                "unterminated escape sequence in a string literal")
        code = int(u4 if u4 is not None else u8, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise TemplateError(f"\\{'u' if u4 is not None else 'U'}{u4 or u8} is not a Unicode character")
        return chr(code)

    return _ESCAPE.sub(escape, body)


def _show(action: str, limit: int = 60) -> str:
    """``{{action}}`` for a one-line message: control characters escaped, long actions shortened."""
    return "{{" + printable(action, limit) + "}}"


def _evaluate(action: str, ctx: TemplateContext) -> str:
    action = action.strip()
    if _COMMENT.match(action):
        return ""
    if m := _FIELD.match(action):
        return ctx.release_image if m.group(1) == "ReleaseImage" else ctx.cluster_profile
    if m := _INDEX.match(action):
        tag = _unquote(m.group(1))
        if tag not in ctx.images:
            quoted = f'"{tag}"'
            raise TemplateError(f"image-references has no tag {_show(quoted)[2:-2]} for "
                                f"{_show('index .Images ' + quoted)}")
        return ctx.images[tag]
    if m := _LITERAL.match(action):
        return _unquote(m.group(1))
    raise TemplateError(f"unsupported template action {_show(action)}")


def _action_end(text: str, pos: int) -> int:
    """Index of the ``}}`` closing the action whose body starts at ``pos``; quoted text may hold ``}}``."""
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == '"':
            pos += 1
            while pos < n and text[pos] != '"':
                pos += 2 if text[pos] == "\\" else 1
        elif ch == "`":
            pos = text.find("`", pos + 1)
            if pos < 0:
                break
        elif ch == "}" and text.startswith("}}", pos):
            return pos
        pos += 1
    raise TemplateError("unclosed action: '{{' without '}}'")


def render(text: str, ctx: TemplateContext, limit: int | None = None) -> str:
    """Render ``text``; raise :class:`TemplateError` for anything outside the supported subset.

    With ``limit``, raise :class:`RenderTooLarge` as soon as the output would be longer than that
    many characters (``{{index .Images "x"}}`` repeated can make a small file very large).
    """
    if "{{" not in text:
        return text
    out: list[str] = []
    size = 0
    pos = 0
    while (start := text.find("{{", pos)) >= 0:
        before = text[pos:start]
        body_start = start + 2
        if text.startswith("- ", body_start) or text[body_start:body_start + 2] in ("-\t", "-\n", "-\r"):
            before = before.rstrip(" \t\r\n")
            body_start += 2
        end = _action_end(text, body_start)
        body = text[body_start:end]
        trim_right = len(body) >= 2 and body[-1] == "-" and body[-2] in " \t\r\n"
        if trim_right:
            body = body[:-2]
        value = _evaluate(body, ctx)
        out.append(before)
        out.append(value)
        size += len(before) + len(value)
        if limit is not None and size > limit:
            raise RenderTooLarge(f"the rendered template is over {limit:,} characters")
        pos = end + 2
        if trim_right:
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
    out.append(text[pos:])
    return "".join(out)
