"""Go's ``text/tabwriter`` as a buffered writer: text is held until :meth:`TabWriter.flush`, then aligned.

A port of ``text/tabwriter``'s ``Writer.Write``, ``format`` and ``writeLines`` for a space ``padchar`` and the
flags ``0`` or ``DiscardEmptyColumns`` (no ``AlignRight``, ``FilterHTML``, ``StripEscape``, ``TabIndent``,
``Debug``).  A cell ends at ``\\t`` or ``\\v`` (a soft end: an empty ``\\v`` cell may be discarded); a line at
``\\n`` or ``\\f``; ``\\f``, and a newline ending a line of one cell, flush at once as in Go.  Where the program
writes to the same output directly between flushes (oc's ``recommend`` does), only what was flushed is
written: :meth:`TabWriter.write` returns what Go would have written out so far.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Cell:
    text: str = ""
    htab: bool = False  # ended by a tab, not a vertical tab: never discarded


class TabWriter:
    """``tabwriter.NewWriter(out, minwidth, tabwidth, padding, ' ', flags)``; the output is returned, not written."""

    def __init__(self, minwidth: int, padding: int, *, discard_empty_columns: bool = False) -> None:
        self.minwidth = minwidth
        self.padding = padding
        self.discard_empty_columns = discard_empty_columns
        self._reset()

    def _reset(self) -> None:
        self._lines: list[list[_Cell]] = [[]]
        self._cell = ""
        self._widths: list[int] = []

    def write(self, text: str) -> str:
        """``Write``: buffer ``text``; what a flush inside it (``\\f``, a one-cell line) wrote out."""
        out: list[str] = []
        start = 0
        for i, ch in enumerate(text):
            if ch not in "\t\v\n\f":
                continue
            self._cell += text[start:i]
            start = i + 1
            self._lines[-1].append(_Cell(self._cell, ch == "\t"))
            self._cell = ""
            cells = len(self._lines[-1])
            if ch in "\n\f":
                self._lines.append([])
                if ch == "\f" or cells == 1:
                    out.append(self.flush())
        self._cell += text[start:]
        return "".join(out)

    def flush(self) -> str:
        """``Flush``: the buffered text, aligned; the buffer is emptied."""
        if self._cell:
            self._lines[-1].append(_Cell(self._cell, False))
            self._cell = ""
        out: list[str] = []
        self._format(out, 0, len(self._lines))
        self._reset()
        return "".join(out)

    def _format(self, out: list[str], line0: int, line1: int) -> None:
        column = len(self._widths)
        this = line0
        while this < line1:
            if column >= len(self._lines[this]) - 1:
                this += 1
                continue
            self._write_lines(out, line0, this)
            line0 = this
            width = self.minwidth
            discardable = True
            while this < line1 and column < len(self._lines[this]) - 1:
                cell = self._lines[this][column]
                width = max(width, len(cell.text) + self.padding)
                if cell.text or cell.htab:
                    discardable = False
                this += 1
            if discardable and self.discard_empty_columns:
                width = 0
            self._widths.append(width)
            self._format(out, line0, this)
            self._widths.pop()
            line0 = this
        self._write_lines(out, line0, line1)

    def _write_lines(self, out: list[str], line0: int, line1: int) -> None:
        for i in range(line0, line1):
            for j, cell in enumerate(self._lines[i]):
                out.append(cell.text)
                if j < len(self._widths):
                    out.append(" " * (self._widths[j] - len(cell.text)))
            if i + 1 < len(self._lines):
                out.append("\n")
