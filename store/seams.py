"""Test seams of the store (hidden flags; tests and benchmarks only). A throttled disk:
`StoreConfig.write_delay_ms`, every CommitLog write sleeps that long. A stalled disk:
`StoreConfig.write_hold_file`, while that file exists every CommitLog write waits (polling it), so
a test decides how long the store is held instead of guessing with sleeps."""
from __future__ import annotations

import logging
import os
import time

log = logging.getLogger("rocketgate.store")

HOLD_POLL_S = 0.01


def writes_held(config) -> bool:
    """Does the write-hold seam stall writes right now?"""
    path = getattr(config, "write_hold_file", None)
    return bool(path) and os.path.exists(path)


def before_write(config) -> None:
    """Called by the writer before each CommitLog write (outside the store lock)."""
    if config.write_delay_ms:
        time.sleep(config.write_delay_ms / 1000)
    if writes_held(config):
        log.warning("store write held while %s exists (test seam)", config.write_hold_file)
        while writes_held(config):
            time.sleep(HOLD_POLL_S)
        log.warning("store write released (test seam)")
