"""The admin command's output helpers: aligned tables, JSON, and the progress bar (drawn only on a
terminal)."""
from __future__ import annotations

import io
import json

from gateway.admin.output import Progress, emit, table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_table_aligns_columns_and_joins_lists():
    text = table([{"topic": "a", "partitions": 12, "tags": ["x", "y"]},
                  {"topic": "longer-name", "partitions": 3, "tags": []}])
    assert text.splitlines() == ["TOPIC        PARTITIONS  TAGS",
                                 "a            12          x,y",
                                 "longer-name  3"]
    assert table([]) == "(none)\n"


def test_emit_json_and_key_value(capsys):
    emit([{"b": 1, "a": 2}], as_json=True)
    assert json.loads(capsys.readouterr().out) == [{"a": 2, "b": 1}]
    emit({"created": "t", "partitions": 4}, as_json=False)
    assert capsys.readouterr().out == "created     t\npartitions  4\n"


def test_progress_draws_on_a_terminal_only():
    term = _Terminal()
    with Progress(100, "resending", stream=term) as bar:
        for _ in range(100):
            bar.advance()
    drawn = term.getvalue()
    assert drawn.endswith("resending [" + "#" * 30 + "] 100/100\n")
    assert "] 50/100" in drawn and "] 0/100" in drawn
    pipe = io.StringIO()
    with Progress(10, "resending", stream=pipe) as bar:
        bar.advance(10)
    assert pipe.getvalue() == ""
