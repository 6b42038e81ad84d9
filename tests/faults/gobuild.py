"""The harness's Go programs (tests/faults/<name>: lincheck, rmqgo), built by `make faults-<name>` into
~/.cache/rocketgate/<name>/ under a name keyed by their sources' hash (mk/faults.mk): never committed."""
from __future__ import annotations

import hashlib
import os
import subprocess

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def go_binary(name: str, cache_var: str) -> str:
    """The binary of tests/faults/<name> (built by its make target when missing); `cache_var`: the
    environment / make variable naming its cache directory (e.g. LINCHECK_CACHE)."""
    cache = os.environ.get(cache_var, os.path.expanduser(f"~/.cache/rocketgate/{name}"))
    digest = hashlib.sha256()
    for part in ("main.go", "go.mod", "go.sum"):
        with open(os.path.join(CHECKOUT, "tests", "faults", name, part), "rb") as f:
            digest.update(f.read())
    path = os.path.join(cache, f"{name}-{digest.hexdigest()[:16]}")
    if not os.access(path, os.X_OK):
        subprocess.run(["make", "-s", f"faults-{name}", f"{cache_var}={cache}"], cwd=CHECKOUT,
                       check=True, capture_output=True, timeout=600)
    return path
