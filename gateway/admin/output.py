"""What the admin command prints: aligned tables by default, JSON with --json, and a progress bar on
stderr for long operations (only on a terminal)."""
from __future__ import annotations

import json
import sys


def emit(result, as_json: bool, columns: list[str] | None = None) -> None:
    """Print a list of rows (dicts) as a table (or JSON), a dict as key: value lines (or JSON)."""
    if as_json:
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    elif isinstance(result, list):
        sys.stdout.write(table(result, columns))
    elif isinstance(result, dict):
        width = max((len(k) for k in result), default=0)
        for key, value in result.items():
            sys.stdout.write(f"{key.ljust(width)}  {_cell(value)}\n")
    else:
        sys.stdout.write(f"{result}\n")


def _cell(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return "" if value is None else str(value)


def table(rows: list[dict], columns: list[str] | None = None) -> str:
    if not rows:
        return "(none)\n"
    columns = columns or list(rows[0])
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"


class Progress:
    """`with Progress(total, "resending") as bar: bar.advance()` draws on stderr when it is a terminal."""

    WIDTH = 30

    def __init__(self, total: int, label: str, stream=None) -> None:
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.visible = self.stream.isatty()

    def __enter__(self) -> "Progress":
        self._draw()
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.done == self.total or self.done % 50 == 0:
            self._draw()

    def _draw(self) -> None:
        if not self.visible:
            return
        filled = self.WIDTH * self.done // self.total if self.total else self.WIDTH
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total}")
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        if self.visible:
            self._draw()
            self.stream.write("\n")
