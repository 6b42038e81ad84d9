"""Which of a Go package's tests talk to a broker: a static scan of its *_test.go files.

A test needs the broker when its body calls, directly or through other functions of the test files, one
of the package's seed helpers (for franz-go's kgo: `adm`, `newTestClient`, `testClientOpts`,
`getSeedBrokers`); the others are unit tests that never open a connection, so the report leaves them out.
"""
from __future__ import annotations

import glob
import os
import re

_FUNC = re.compile(r"^func (?:\([^)]*\) )?(\w+)\s*[\[(]", re.M)


def _bodies(directory: str) -> dict[str, str]:
    """Top-level function name -> source text up to the next top-level declaration (methods included)."""
    bodies: dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(directory, "*_test.go"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        starts = [(m.start(), m.group(1)) for m in _FUNC.finditer(text)]
        for i, (start, name) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
            bodies[name] = bodies.get(name, "") + text[start:end]
    return bodies


def broker_tests(directory: str, seed_helpers: set[str]) -> list[str]:
    """Names of the `TestX` functions that reach one of `seed_helpers`, sorted."""
    bodies = _bodies(directory)
    reaching = set(seed_helpers)
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name in reaching:
                continue
            calls = set(re.findall(r"\b(\w+)\(", body)) - {name}
            if calls & reaching:
                reaching.add(name)
                changed = True
    return sorted(n for n in reaching if n.startswith("Test") and n in bodies)
