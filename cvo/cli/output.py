"""Output formats as kubectl has them: ``-o json|yaml`` (one document, the same data in either), ``-o name``
(``kind.group/name`` lines), ``-o wide`` and ``--no-headers`` for tables.

``-o yaml`` is the JSON document's data (read back from its JSON, so both hold exactly the same values,
keys in the same order) dumped by PyYAML's safe dumper; long strings are not folded.  In a stream
(``cvo status -w``) JSON documents take one line each and YAML documents start with ``---``, as
``kubectl get -w`` prints them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import orjson

TEXT = "text"
JSON = "json"
YAML = "yaml"
WIDE = "wide"
NAME = "name"
STRUCTURED = (JSON, YAML)  # the formats that print data rather than text for people


def add_output_flag(parser: argparse.ArgumentParser, formats: Sequence[str], example: str, *,
                    what: str = "the result") -> None:
    """``-o/--output`` with ``formats`` (``text`` first, the default); ``example`` is a command line using it."""
    described = {
        TEXT: "for people (default)",
        JSON: "one JSON document",
        YAML: "the same document as YAML",
        WIDE: "text with more columns",
        NAME: "kind.group/name lines, as 'kubectl get -o name'",
    }
    parser.add_argument("-o", "--output", choices=list(formats), default=TEXT, metavar="FORMAT",
                        help=f"how to print {what}: " + "; ".join(f"{f}: {described.get(f, f)}" for f in formats)
                             + f" (e.g. {example})")


def add_no_headers_flag(parser: argparse.ArgumentParser, example: str) -> None:
    """kubectl's ``--no-headers``: tables without their header line (other formats ignore it)."""
    parser.add_argument("--no-headers", action="store_true",
                        help="print the tables without their header lines, the columns aligned as with them, as "
                             f"kubectl's --no-headers; only text tables have headers (e.g. {example})")


def is_structured(fmt: str) -> bool:
    return fmt in STRUCTURED


def to_data(doc: Any) -> Any:
    """``doc`` as the plain data its JSON holds (dicts, lists, strings, numbers, booleans, None)."""
    return orjson.loads(orjson.dumps(doc))


def dump(doc: Any, fmt: str, *, stream: bool = False) -> str:
    """``doc`` as ``fmt`` (``json`` or ``yaml``), ending in a newline.  ``stream``: one document of several,
    a JSON line or a YAML document opened by ``---``."""
    if fmt == JSON:
        return orjson.dumps(doc, option=0 if stream else orjson.OPT_INDENT_2).decode() + "\n"
    if fmt == YAML:
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text: str = yaml.dump(to_data(doc), Dumper=dumper, sort_keys=False, allow_unicode=True,
                              default_flow_style=False, width=1 << 30, explicit_start=stream)
        return text
    raise ValueError(f"not a data format: {fmt!r}")


def group_of(api_version: str) -> str:
    """The API group of ``apiVersion`` ("" for the core group's ``v1``)."""
    return api_version.rpartition("/")[0]


def one_word(text: str) -> str:
    """``text`` as is when it holds no blank, quote, backslash, control or other unprintable character (no
    name a cluster accepts does), else JSON-quoted: a line of ``-o name`` stays one line of shell words
    whatever a manifest says."""
    if text and text.isprintable() and not any(c.isspace() or c in "\"'\\" for c in text):
        return text
    import json

    return json.dumps(text)  # ASCII: escapes any character, a lone surrogate too


def kubectl_name(group: str, kind: str, name: str) -> str:
    """``kubectl get -o name``'s line for an object: the lower-case kind, ``.group`` unless core, ``/name``
    (``deployment.apps/etcd-operator``, ``namespace/openshift-etcd``)."""
    return one_word(f"{kind.lower()}{'.' + group if group else ''}/{name}")
