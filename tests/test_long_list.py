"""tests/long_tests.txt: each entry names existing tests, and the matcher reads entries as documented."""
from __future__ import annotations

from pathlib import Path

from long_cases import is_long, long_prefixes

ROOT = Path(__file__).resolve().parent.parent


def test_matcher_reads_ids_files_directories_and_stars():
    node = "tests/compat/test_x.py::test_send[4.9]"
    assert is_long(node, "tests/compat/test_x.py")
    assert is_long(node, "tests/compat/test_x.py::test_send")
    assert is_long(node, "tests/compat/")
    assert is_long(node, "tests/compat/test_x.py::*[4.9]")
    assert not is_long(node, "tests/compat/test_x.py::*[5]")
    assert not is_long(node, "tests/compat/test_x.py::test_sen")
    assert not is_long(node, "tests/compat/test_x")


def test_every_entry_names_an_existing_file_and_test():
    for prefix in long_prefixes():
        path, _, rest = prefix.partition("::")
        assert (ROOT / path).exists(), prefix
        name = rest.split("[", 1)[0]
        if name and "*" not in name:
            assert f"def {name}(" in (ROOT / path).read_text(), prefix
