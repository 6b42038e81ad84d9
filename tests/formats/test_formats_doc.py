"""docs/formats.md is what `make formats-doc` writes from the construct definitions."""
from __future__ import annotations

import os

from codec.formats import LAYOUTS, doc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_formats_md_is_current():
    with open(os.path.join(ROOT, "docs", "formats.md"), encoding="utf-8") as f:
        assert f.read() == doc.render(), "docs/formats.md is stale: run `make formats-doc`"


def test_every_layout_is_documented_with_every_field():
    text = doc.render()
    for layout in LAYOUTS:
        assert f"### {layout.name}" in text
        for _o, _s, field, _t, meaning in doc.rows(layout.construct):
            assert meaning, f"{layout.name}.{field} has no meaning"
