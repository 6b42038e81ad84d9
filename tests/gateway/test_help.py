"""`python -m gateway --help` documents every flag with its default; test-only flags stay hidden."""
from __future__ import annotations

import argparse
import subprocess
import sys

from gateway.config import build_parser
from gateway_process import ROOT


def _options():
    return [a for a in build_parser()._actions if a.option_strings and a.help is not argparse.SUPPRESS
            and a.dest != "help"]


def test_every_flag_has_a_help_text_that_gives_its_default():
    parser = build_parser()
    formatter = parser._get_formatter()
    options = _options()
    assert len(options) > 40
    for action in options:
        assert action.help, f"{action.option_strings[0]} has no help text"
        shown = formatter._expand_help(action)
        assert "default" in shown.lower(), f"{action.option_strings[0]}: {shown!r} does not give its default"


def test_help_output_lists_every_flag_and_hides_the_test_only_ones():
    out = subprocess.run([sys.executable, "-m", "gateway", "--help"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    flat = " ".join(out.split())
    for action in _options():
        assert action.option_strings[0] in out
    assert "(default: 9092)" in flat and "(default: ./data)" in flat
    hidden = [a.option_strings[0] for a in build_parser()._actions if a.help is argparse.SUPPRESS]
    assert "--store-write-delay-ms" in hidden
    for flag in hidden:
        assert flag not in out
