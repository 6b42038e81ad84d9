"""Which tests are long: tests/long_tests.txt, read by conftest to mark them (make test leaves them out)."""
from __future__ import annotations

import re
from pathlib import Path

LONG_TESTS = Path(__file__).with_name("long_tests.txt")


def long_prefixes() -> list[str]:
    """Node-id prefixes listed in tests/long_tests.txt (one per line, '#' starts a comment)."""
    lines = (line.split("#", 1)[0].strip() for line in LONG_TESTS.read_text().splitlines())
    return [line for line in lines if line]


def is_long(node: str, prefix: str) -> bool:
    """`prefix` names `node`: the same id, a test of that file or directory, or a match where '*' stands for
    any run of characters (e.g. 'tests/compat/test_x.py::*[4.9]' for every 4.9 case of that file)."""
    if "*" in prefix:
        return re.fullmatch(".*".join(map(re.escape, prefix.split("*"))), node) is not None
    if prefix.endswith("/"):
        return node.startswith(prefix)
    return node == prefix or node.startswith((prefix + "::", prefix + "["))
