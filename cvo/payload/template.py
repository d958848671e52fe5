"""The part of Go's text/template that the CVO's own ``manifests/`` directory uses.

The CVO renders ``manifests/`` with ``{ReleaseImage, ClusterProfile, Images}``.  cvo supports the
actions payloads use: ``{{.ReleaseImage}}``, ``{{ .ClusterProfile }}``, ``{{index .Images "tag"}}``,
a string literal ``{{ "text" }}`` or ``{{ `text` }}``, comments ``{{/* ... */}}``, and the ``{{-``/
``-}}`` whitespace trimmers.  Anything else raises :class:`TemplateError`; the loader then skips the
file with a warning, as the CVO does when rendering fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_FIELD = re.compile(r"^\.(ReleaseImage|ClusterProfile)$")
_INDEX = re.compile(r'^index\s+\.Images\s+("(?:[^"\\]|\\.)*"|`[^`]*`)$')
_LITERAL = re.compile(r'^("(?:[^"\\]|\\.)*"|`[^`]*`)$')
_COMMENT = re.compile(r"^/\*.*\*/$", re.S)


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class TemplateContext:
    release_image: str
    cluster_profile: str
    images: dict[str, str] = field(default_factory=dict)


def _unquote(token: str) -> str:
    if token.startswith("`"):
        return token[1:-1]
    return json.loads(token)


def _evaluate(action: str, ctx: TemplateContext) -> str:
    action = action.strip()
    if _COMMENT.match(action):
        return ""
    if m := _FIELD.match(action):
        return ctx.release_image if m.group(1) == "ReleaseImage" else ctx.cluster_profile
    if m := _INDEX.match(action):
        tag = _unquote(m.group(1))
        if tag not in ctx.images:
            raise TemplateError(f'image-references has no tag "{tag}" for {{{{index .Images "{tag}"}}}}')
        return ctx.images[tag]
    if m := _LITERAL.match(action):
        return _unquote(m.group(1))
    raise TemplateError(f"unsupported template action {{{{{action}}}}}")


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


def render(text: str, ctx: TemplateContext) -> str:
    """Render ``text``; raise :class:`TemplateError` for anything outside the supported subset."""
    if "{{" not in text:
        return text
    out: list[str] = []
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
        out.append(before)
        out.append(_evaluate(body, ctx))
        pos = end + 2
        if trim_right:
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
    out.append(text[pos:])
    return "".join(out)
