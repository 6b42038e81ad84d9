"""Headless Debian chromium through chromium-driver (Selenium) for the dashboard tests, and where
their screenshots go ($TEST_ARTIFACTS_DIR, default test-artifacts/, in dashboard/)."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from gateway_process import ROOT

INSTALLED = bool(shutil.which("chromedriver") and shutil.which("chromium"))
needs_chromium = pytest.mark.skipif(not INSTALLED, reason="chromium and chromium-driver are not installed "
                                                          "(make setup: mk/ops.mk)")
ARTIFACTS = os.path.join(os.environ.get("TEST_ARTIFACTS_DIR", os.path.join(ROOT, "test-artifacts")), "dashboard")


def start():
    from selenium import webdriver
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    os.makedirs(ARTIFACTS, exist_ok=True)
    return webdriver.Chrome(service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")),
                            options=options)


def shot(browser, name: str) -> None:
    assert browser.save_screenshot(os.path.join(ARTIFACTS, f"{name}.png"))


def main_text(browser, expected: str = "", timeout: float = 10.0) -> str:
    """The page's main text once it contains `expected` (a click's navigation may still be loading)."""
    from selenium.common.exceptions import WebDriverException
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = browser.find_element("tag name", "main").text
        except WebDriverException:  # no <main> yet, a stale one, or chromium's "node does not belong to the document"
            text = None
        if (text is not None and expected in text) or time.monotonic() > deadline:
            return text or ""
        time.sleep(0.05)


def submit_form(browser, button: str, **fields) -> None:
    """Fill the form whose button says `button` (its named inputs set to `fields`) and submit it."""
    from selenium.webdriver.common.by import By
    form = [f for f in browser.find_elements(By.TAG_NAME, "form")
            if f.find_element(By.TAG_NAME, "button").text == button][0]
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    form.find_element(By.TAG_NAME, "button").click()
