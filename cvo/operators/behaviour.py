"""How a simulated operator behaves: delays, failures and gates, per operator.

Durations are seconds; in scenario files they may be written ``90s``, ``40m``, ``2h`` or
``1h30m``.  Windows (``degraded``, ``upgradeable``) are ``{after, for}`` pairs: ``after`` counts
from the start of the operator's rollout (``degraded``) or from the start of the simulation
(``upgradeable``), ``for`` is the length (omitted: forever).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from cvo.operators.durations import MAX_DURATION as MAX_DURATION  # re-exported: its home before durations.py
from cvo.operators.durations import label as _label
from cvo.operators.durations import parse_duration as parse_duration
from cvo.operators.durations import show as _show
from cvo.operators.machine_behaviour import MachinesBehaviour, parse_machines

MAX_FLAPS = 10_000


@dataclass(frozen=True)
class Window:
    after: float = 0.0
    length: float | None = None  # None: until the end

    def contains(self, t: float) -> bool:
        return t >= self.after and (self.length is None or t < self.after + self.length)

    def edges(self) -> list[float]:
        return [self.after] + ([] if self.length is None else [self.after + self.length])

    @classmethod
    def parse(cls, value: Any, what: str) -> Window:
        if value is True:
            return cls()
        if not isinstance(value, Mapping):
            raise ValueError(f"{what}: expected {{after: DURATION, for: DURATION}}")
        unknown = set(value) - {"after", "for", "reason", "message"}
        if unknown:
            raise ValueError(f"{what}: unknown key {_show(sorted(unknown, key=str)[0])}")
        length = value.get("for")
        return cls(parse_duration(value.get("after", 0), f"{what}.after"),
                   None if length is None else parse_duration(length, f"{what}.for"))


@dataclass(frozen=True)
class Behaviour:
    delay: float = 60.0  # rollout start -> new versions reported and Available=True
    never_available: bool = False
    degraded: Window | None = None  # Degraded=True during this window of the rollout
    degraded_message: str = "Simulated degradation"
    flapping: float = 0.0  # once ready, Available toggles every this many seconds ...
    flaps: int = 0  # ... this many times
    upgradeable: Window | None = None  # Upgradeable=False during this window (from simulation start)
    upgradeable_reason: str = "Migrating"
    upgradeable_message: str = "The operator is migrating its data; do not upgrade now"
    upgrading_condition: bool = False  # report Upgrading=True while rolling out (operator-framework/enhancements enhancements/operator-conditions.md)
    version_early: bool = False  # report the new versions at rollout start, before operands finish
    never_versions: bool = False  # become Available but never report the new versions
    use_operator_condition: bool = False  # report Upgradeable on its OperatorCondition too (issue 4)
    machines: MachinesBehaviour | None = None  # machine-config's pools and nodes (``nodes``, ``pools``)


_MACHINE_KEYS = ("nodes", "pools")  # parsed together into ``machines``
_KEYS = ({f.name.replace("_", "-"): f.name for f in fields(Behaviour) if f.name != "machines"}
         | {f.name: f.name for f in fields(Behaviour) if f.name != "machines"} | {k: k for k in _MACHINE_KEYS})


def _text(value: Any, where: str) -> str:
    if isinstance(value, dict | list):
        raise ValueError(f"{where}: expected text")
    return str(value)


def parse_behaviour(data: Mapping[str, Any], what: str, base: Behaviour | None = None) -> Behaviour:
    """A behaviour from a scenario mapping, on top of ``base`` (the defaults)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{what}: expected a mapping of behaviours")
    values: dict[str, Any] = {}
    machines: dict[str, Any] = {}
    for key, value in data.items():
        name = _KEYS.get(key) if isinstance(key, str) else None
        if name is None:
            raise ValueError(f"{what}: unknown behaviour {_show(key)}; known: "
                             f"{', '.join(sorted(k for k in _KEYS if '-' not in k))}")
        where = f"{what}.{_label(key)}"
        if name in _MACHINE_KEYS:
            machines[name] = value
        elif name in ("delay", "flapping"):
            values[name] = parse_duration(value, where)
        elif name in ("degraded", "upgradeable"):
            values[name] = None if value in (None, False) else Window.parse(value, where)
            if isinstance(value, Mapping):
                prefix = "degraded" if name == "degraded" else "upgradeable"
                if "reason" in value and name == "upgradeable":
                    values["upgradeable_reason"] = _text(value["reason"], f"{where}.reason")
                if "message" in value:
                    values[f"{prefix}_message"] = _text(value["message"], f"{where}.message")
        elif name == "flaps":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_FLAPS:
                raise ValueError(f"{where}: expected an integer from 0 to {MAX_FLAPS:,}")
            values[name] = value
        elif name in ("degraded_message", "upgradeable_reason", "upgradeable_message"):
            values[name] = _text(value, where)
        else:
            if not isinstance(value, bool):
                raise ValueError(f"{where}: expected true or false")
            values[name] = value
    if machines:
        values["machines"] = parse_machines(machines.get("nodes"), machines.get("pools"), what)
    return replace(base or Behaviour(), **values)


def default_delay(name: str, low: float = 30.0, high: float = 180.0) -> float:
    """A stable pseudo-random delay per operator, so runs are reproducible."""
    return low + (zlib.crc32(name.encode()) % int(high - low + 1))


@dataclass
class Behaviours:
    """Per-operator behaviours with a default for the rest."""

    default: Behaviour | None = None  # None: ``default_delay`` per operator, otherwise all defaults
    operators: dict[str, Behaviour] = field(default_factory=dict)

    def for_operator(self, name: str) -> Behaviour:
        if name in self.operators:
            return self.operators[name]
        if self.default is not None:
            return self.default
        return Behaviour(delay=default_delay(name))

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None, what: str = "operators") -> Behaviours:
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise ValueError(f"{what}: expected a mapping of operator name to behaviour")
        default = None
        if "default" in data:
            default = parse_behaviour(data["default"] or {}, f"{what}.default")  # checks it is a mapping
        operators = {}
        for name, value in data.items():
            if name == "default":
                continue
            if not isinstance(value, Mapping):
                raise ValueError(f"{what}.{_label(name)}: expected a mapping of behaviours")
            operators[str(name)] = parse_behaviour(value, f"{what}.{_label(name)}", default)
        return cls(default, operators)


def read_behaviours(path: str | os.PathLike[str]) -> Behaviours:
    """The ``--operators`` file: one YAML mapping, read under cvo's input limits (``cvo.payload.limits``).

    Raises ``ValueError`` with one line naming the file and the problem.
    """
    from cvo.payload.limits import InputError, display_name, read_input
    from cvo.payload.yamlorjson import load_documents
    from cvo.payload.yamlparse import DocumentError

    shown = display_name(os.fspath(path))
    data = read_input(path, shown)
    try:
        documents = [d for d in load_documents(data) if d is not None]
    except DocumentError as err:
        where = f"line {err.line}: " if err.line else ""
        raise InputError(shown, f"invalid YAML: {where}{err}") from None
    except UnicodeDecodeError as err:
        raise InputError(shown, f"not UTF-8 text: {err.reason}") from None
    if len(documents) > 1:
        raise InputError(shown, "expected one YAML document (a mapping of operator name to behaviour)")
    return Behaviours.parse(documents[0] if documents else None, shown)  # its errors name the file too
