"""The headless chromium the console tests of one module share (tests/ops/chromium.py)."""
from __future__ import annotations

import pytest

import chromium


@pytest.fixture(scope="module")
def browser():
    if not chromium.INSTALLED:
        pytest.skip("chromium and chromium-driver are not installed (make setup: mk/ops.mk)")
    driver = chromium.start()
    yield driver
    driver.quit()
