"""Structured logging: readable on a terminal, JSON lines with ``--log-format json``.

Logs go to stderr so that ``-o json`` output on stdout stays machine-readable.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

_SECRET_KEYS = frozenset({"token", "password", "secret", "data", "stringData", "client-key-data", "bearer"})


def _redact(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    for key in list(event):
        if key in _SECRET_KEYS:
            event[key] = "<redacted>"
    return event


_lock = threading.RLock()
_write_lock = threading.Lock()


class _LineLogger:
    """Writes each rendered line to whatever ``sys.stderr`` is at that moment, in one write.

    Watch threads log while the event loop does: a line and its newline written separately (as
    ``print`` does) can interleave with another thread's line and glue two JSON documents together.
    """

    def msg(self, message: str) -> None:
        with _write_lock:
            stream = sys.stderr
            stream.write(message + "\n")
            stream.flush()

    log = debug = info = warning = warn = error = critical = exception = fatal = msg
# details: whether Logger.detail lines are info (shown wherever info is) or debug; piped sweeps show them at -v
_settings: dict[str, Any] = {"format": "text", "verbosity": 0, "color": True, "configured": False, "details": True}


def use_color() -> bool:
    """Whether stderr gets colours: a terminal, no ``--no-color``, no ``NO_COLOR`` (https://no-color.org)."""
    return bool(_settings["color"]) and not os.environ.get("NO_COLOR") and sys.stderr.isatty()


def debug_enabled() -> bool:
    """Whether debug lines are written (``-vv``; :func:`_apply` sets the level the same way): a caller
    that logs a line per event can skip building the ones that would be dropped."""
    return int(_settings["verbosity"]) >= 2


def log_format() -> str:
    """``text`` or ``json``: the format chosen by :func:`configure` (errors follow it too)."""
    return str(_settings["format"])


def error_line(message: str) -> str:
    """One error as the log format writes it: ``error: …``, or a JSON document with level ``error``."""
    if _settings["format"] == "json":
        from datetime import UTC, datetime

        import orjson

        return orjson.dumps({"level": "error", "event": "error", "message": message,
                             "timestamp": datetime.now(UTC).isoformat()}).decode()
    return f"error: {message}"


class _LazyLogger:
    """A structlog logger that imports and configures structlog on first use.

    ``import structlog`` costs tens of milliseconds; ``cvo plan`` usually logs nothing.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def detail(self, event: str, **fields: Any) -> None:
        """A line that repeats what the reader learns from other lines (``operator rolling out`` beside the
        sweep's wait for that operator): info where details are wanted (``configure(details=True)``, the
        default), else debug.  A piped sweep wants them only with ``-v``."""
        if _settings["details"]:
            self.info(event, **fields)
        else:
            self.debug(event, **fields)

    def debug(self, event: str, *args: Any, **fields: Any) -> Any:
        """As structlog's, but a line below the level never imports structlog (a cached image pull in a warm
        ``cvo plan`` logs at debug and must not cost the import)."""
        if self._logger is None and "structlog" not in sys.modules and int(_settings["verbosity"]) < 2:
            return None
        return self.__getattr__("debug")(event, *args, **fields)

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            with _lock:  # watch threads log too: configure exactly once, before anyone writes
                import structlog
                if not _settings["configured"]:
                    _apply(structlog)
            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attr)


def get_logger(name: str) -> Any:
    return _LazyLogger(name)


def configure(log_format: str = "text", verbosity: int = 0, color: bool | None = None,
              details: bool | None = None) -> None:
    """Choose the format (``text`` or ``json``), the level (``-v`` lowers it), with ``color=False``
    (``--no-color``) no colours, and whether :meth:`_LazyLogger.detail` lines are info (``details``);
    applied on first log."""
    with _lock:
        _settings.update(format=log_format, verbosity=verbosity, configured=False)
        if color is not None:
            _settings["color"] = color
        if details is not None:
            _settings["details"] = details
        if "structlog" in sys.modules:
            import structlog

            _apply(structlog)


def _apply(structlog: Any) -> None:
    import logging  # here, not at the top: ``cvo plan`` usually logs nothing

    log_format, verbosity = _settings["format"], _settings["verbosity"]
    level = logging.WARNING - 10 * verbosity
    as_json = log_format == "json"
    # No exception is rendered through rich: plain_traceback is named, whether or not rich is installed
    # (``import structlog`` still imports rich when it is: structlog/dev.py and structlog/tracebacks.py
    # try it at module level, and structlog/__init__.py imports both; about 30 ms of the first log line).
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _redact,
    ]
    if as_json:
        processors += [structlog.processors.TimeStamper(fmt="iso", utc=True), structlog.processors.JSONRenderer()]
    else:
        processors += [structlog.dev.ConsoleRenderer(colors=use_color(),
                                                     exception_formatter=structlog.dev.plain_traceback)]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(max(level, logging.DEBUG)),
        # Resolve sys.stderr at each write: it may be replaced (tests, redirection) after configuration.
        logger_factory=lambda *args: _LineLogger(),
        cache_logger_on_first_use=False,
    )
    _settings["configured"] = True
