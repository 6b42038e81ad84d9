"""The Security page's forms in headless chromium: the password box hides what is typed, and an admin
creates and deletes RocketMQ access keys through security.commands (python -m security's parser and
checks), the generated secret shown once in the creation answer and never again."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import chromium
from test_dashboard_admin import gw, request, signed_in, submit_security  # noqa: F401 (gw: the module's gateway fixture)

pytestmark = chromium.needs_chromium


def _security_cli(gw, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "security", "--data-dir", gw.data_dir, *args],
                          check=True, capture_output=True, text=True, timeout=60).stdout


def test_password_boxes_hide_what_is_typed(gw):
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By
    with signed_in(gw) as browser:
        browser.get(f"http://{gw.host}/security")
        chromium.main_text(browser, "ACLs")
        boxes = browser.find_elements(By.CSS_SELECTOR, "form input[name='password'], form input[name='secret']")
        assert boxes and {b.get_attribute("type") for b in boxes} == {"password"}
        assert all(b.get_attribute("value") == "" for b in boxes)


def test_admin_creates_and_deletes_access_keys(gw):
    pytest.importorskip("selenium")
    with signed_in(gw) as browser:
        text = submit_security(browser, gw, "/security/access-keys", {"key": "web-key", "user": "bob"},
                       "access key web-key: set, for user bob")
        secret = re.search(r"secret key \(shown only now\): (\S+)", text).group(1)
        assert len(secret) >= 20
        listed = json.loads(_security_cli(gw, "list"))
        assert listed["access_keys"]["web-key"] == "bob"
        assert secret not in json.dumps(listed)
        browser.get(f"http://{gw.host}/security")
        page = chromium.main_text(browser, "web-key")
        assert "web-key bob" in page and secret not in browser.page_source
        chromium.shot(browser, "security-access-keys")
        text = submit_security(browser, gw, "/security/access-keys", {"key": "web-key", "secret": "typed-secret-99"},
                       "access key web-key: set")
        assert "typed-secret-99" not in browser.page_source  # a typed secret is never echoed
        submit_security(browser, gw, "/security/access-keys", {"key": ""}, "invalid access key ''")  # the store's check
        text = submit_security(browser, gw, "/security/access-keys/delete", {"key": "web-key"}, "access key web-key: deleted")
        assert "web-key" not in json.loads(_security_cli(gw, "list"))["access_keys"]
        text = submit_security(browser, gw, "/security/access-keys/delete", {"key": "web-key"}, "not found (nothing deleted)")
    status, page, _ = request(gw, "/security/access-keys", data={"key": "forged"})
    assert status == 403
    assert "forged" not in _security_cli(gw, "list")
