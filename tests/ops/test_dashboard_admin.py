"""Dashboard changes on a gateway with `--authorizer acl`: only an admin (HTTP Basic, a super user)
sees and may submit the forms; every POST needs the CSRF token and this site as its origin. An
admin creates a topic, resets a group's offsets and resends dead letters in headless chromium."""
from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager

import pytest

from client import (Admin, ConsumeFrom, ConsumeStatus, LitePullConsumer, Message, MessageQueue, Producer,
                    PushConsumer, TransactionProducer, TransactionState)
import chromium
from gateway_process import GatewayProcess, free_port
from security.credentials import CredentialStore

ADMIN = ("admin", "admin-secret")



@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("dash-acl") / "data")
    http_port = free_port()
    os.environ["ROCKETGATE_ADMIN_PASSWORD"] = ADMIN[1]
    try:
        g = GatewayProcess(data, extra_args=["--authorizer", "acl", "--super-users", "User:admin",
                                             "--http-port", str(http_port)]).start()
    finally:
        del os.environ["ROCKETGATE_ADMIN_PASSWORD"]
    g.host = f"127.0.0.1:{http_port}"
    CredentialStore(os.path.join(data, "config")).set_password("bob", "bob-secret")
    time.sleep(1.2)  # the gateway re-reads changed credential files within a second
    yield g
    g.stop()


def request(gw, path: str, user=None, data: dict | None = None, origin: str | None = "self"):
    headers = {}
    if user:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
    if origin:
        headers["Origin"] = f"http://{gw.host}" if origin == "self" else origin
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    req = urllib.request.Request(f"http://{gw.host}{path}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(), resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers


@contextmanager
def signed_in(gw):
    """A headless chromium signed in as the admin (quit however the test ends)."""
    browser = chromium.start()
    try:
        browser.get(f"http://{ADMIN[0]}:{ADMIN[1]}@{gw.host}/login")
        chromium.main_text(browser, "Signed in as admin admin")
        yield browser
    finally:
        browser.quit()


def submit_security(browser, gw, form: str, values: dict[str, str], expected: str) -> str:
    """Fill and submit one of the Security page's forms; the answer's text (which says `expected`)."""
    from selenium.webdriver.common.by import By
    browser.get(f"http://{gw.host}/security")
    chromium.main_text(browser, "ACLs")
    for name, value in values.items():
        box = browser.find_element(By.CSS_SELECTOR, f"form[action='{form}'] input[name='{name}']")
        box.clear()
        box.send_keys(value)
    browser.find_element(By.CSS_SELECTOR, f"form[action='{form}'] button").click()
    text = chromium.main_text(browser, expected)
    assert expected in text, text
    return text


def token(gw, user) -> str:
    status, page, _ = request(gw, "/topics", user)
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert status == 200 and found, page
    return found.group(1)


def test_only_a_signed_in_admin_gets_forms(gw):
    status, page, headers = request(gw, "/login")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert 'method="post"' not in request(gw, "/topics")[1]
    assert 'method="post"' not in request(gw, "/topics", ("bob", "bob-secret"))[1]
    assert 'method="post"' not in request(gw, "/topics", ("admin", "wrong"))[1]
    assert 'method="post"' in request(gw, "/topics", ADMIN)[1]
    assert request(gw, "/login", ADMIN)[0] == 200  # redirected to the overview
    assert "Signed in as admin admin" in request(gw, "/", ADMIN)[1]


def test_changes_are_refused_without_admin_token_or_origin(gw):
    form = {"name": "forged", "queues": "2"}
    assert request(gw, "/topics", data=form)[0] == 403
    assert request(gw, "/topics", ("bob", "bob-secret"), data=form)[0] == 403
    status, page, _ = request(gw, "/topics", ADMIN, data=form)
    assert status == 400 and "CSRF token" in page
    status, page, _ = request(gw, "/topics", ADMIN, data={**form, "csrf": token(gw, ADMIN)},
                              origin="http://evil.example")
    assert status == 400 and "another site" in page
    status, page, _ = request(gw, "/topics", ADMIN, data={**form, "csrf": token(gw, ADMIN)})
    assert status == 200 and "created topic forged with 2 queues" in page
    status, page, _ = request(gw, "/topics", ADMIN, data={**form, "csrf": token(gw, ADMIN)})
    assert status == 400 and "exists" in page


def _populate(gw) -> None:
    """Through the remoting port, signed as the admin: 4 messages on a 1-queue topic, a group
    committed at 3 (then gone), and a dead letter."""
    creds = {"access_key": ADMIN[0], "secret_key": ADMIN[1]}
    with Admin(gw.namesrv, **creds) as admin:
        admin.create_topic("dash-acl", queues=1)
        admin.create_topic("dash-acl-native", queues=1)
    with Producer("acl-pg", gw.namesrv, **creds) as prod:
        for i in range(4):
            prod.send(Message("dash-acl", b"v%d" % i))
    committer = LitePullConsumer("acl-billing", gw.namesrv, auto_commit=False, **creds)
    committer.start()
    try:
        committer.commit({MessageQueue("dash-acl", "broker-a", 0): 3})
    finally:
        committer.shutdown()
    seen = []

    def reject(msgs):
        seen.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER

    dead = PushConsumer("acl-cg", gw.namesrv, consume_from=ConsumeFrom.FIRST_OFFSET, max_reconsume_times=0, **creds)
    dead.subscribe("dash-acl-native")
    dead.register_listener(reject)
    with Producer("acl-pg", gw.namesrv, **creds) as prod:
        prod.send(Message("dash-acl-native", b"poison"))
    dead.start()
    try:
        deadline = time.monotonic() + 30
        while "poison" not in request(gw, "/dlq/acl-cg")[1] and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        dead.shutdown()


@chromium.needs_chromium
def test_admin_changes_in_the_browser(gw):
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By

    _populate(gw)
    browser = chromium.start()
    base = f"http://{gw.host}"
    try:
        browser.get(f"http://{ADMIN[0]}:{ADMIN[1]}@{gw.host}/login")  # answers the challenge, then the overview
        expected = "Signed in as admin admin"
        assert expected in chromium.main_text(browser, expected)
        browser.get(base + "/topics")
        browser.find_element(By.NAME, "name").send_keys("made-in-browser")
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button").click()
        expected = "created topic made-in-browser with 4 queues"
        assert expected in chromium.main_text(browser, expected)
        chromium.shot(browser, "admin-topic-created")

        browser.get(base + "/groups/acl-billing")
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button").click()  # to earliest
        expected = "reset acl-billing on dash-acl to {0: 0}"
        assert expected in chromium.main_text(browser, expected)
        browser.get(base + "/groups/acl-billing")
        chromium.main_text(browser, "Lag per queue")
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr")]
        assert "dash-acl 0 0 4 4" in rows
        chromium.shot(browser, "admin-group-reset")

        browser.get(base + "/dlq/acl-cg")
        buttons = browser.find_elements(By.CSS_SELECTOR, "form[method=post] button")
        assert [b.text for b in buttons] == ["Resend one", "Resend all"]
        buttons[1].click()
        expected = "resent 1 dead letter(s) of acl-cg"
        assert expected in chromium.main_text(browser, expected)
        chromium.shot(browser, "admin-dlq-resent")
    finally:
        browser.quit()
    topics = {t["topic"]: t for t in json.loads(request(gw, "/api/topics")[1])}
    assert topics["dash-acl-native"]["messages"] == 2  # the original and the resent copy
    assert topics["made-in-browser"]["write_queues"] == 4


@chromium.needs_chromium
def test_admin_delivers_a_delayed_message_now_in_the_browser(gw):
    """A message two hours from delivery (level 18): an admin delivers it now from the Delay page; it
    is on its topic at once, leaves the waiting list (recalled, so not delivered twice), and a
    second try is refused."""
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By

    creds = {"access_key": ADMIN[0], "secret_key": ADMIN[1]}
    with Admin(gw.namesrv, **creds) as admin:
        admin.create_topic("dash-delay", queues=1)
    with Producer("acl-delay", gw.namesrv, **creds) as prod:
        prod.send(Message("dash-delay", b"in two hours", delay_level=18))
    assert "Deliver now" not in request(gw, "/delay")[1]  # not signed in: no form
    with signed_in(gw) as browser:
        browser.get(f"http://{gw.host}/delay")
        msg_id = browser.find_element(By.NAME, "msg_id").get_attribute("value")
        assert "dash-delay" in chromium.main_text(browser, "Next waiting")
        browser.find_element(By.XPATH, "//button[text()='Deliver now']").click()
        expected = "to dash-delay now"
        assert expected in chromium.main_text(browser, expected)
    topics = {t["topic"]: t for t in json.loads(request(gw, "/api/topics")[1])}
    assert topics["dash-delay"]["messages"] == 1
    assert "dash-delay" not in request(gw, "/delay", ADMIN)[1].split("Next waiting")[1]
    again = request(gw, "/delay", ADMIN, {"csrf": token(gw, ADMIN), "msg_id": msg_id})
    assert again[0] == 400 and "already delivered" in again[1]


@chromium.needs_chromium
def test_admin_decides_a_pending_transaction_in_the_browser(gw):
    """A half message its producer left UNKNOWN (and nobody answers checks): an admin commits it from
    the Pending transactions page and it is delivered; a second decision is refused."""
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By

    creds = {"access_key": ADMIN[0], "secret_key": ADMIN[1]}
    with Admin(gw.namesrv, **creds) as admin:
        admin.create_topic("dash-tx", queues=1)
    unknown = lambda *_: TransactionState.UNKNOWN  # noqa: E731
    with TransactionProducer("acl-tx", gw.namesrv, local_transaction=unknown, check_listener=unknown, **creds) as tp:
        tp.send_in_transaction(Message("dash-tx", b"undecided"))
    assert "Decide" not in request(gw, "/transactions")[1]  # not signed in: no form
    with signed_in(gw) as browser:
        browser.get(f"http://{gw.host}/transactions")
        half = browser.find_element(By.NAME, "half_offset").get_attribute("value")
        browser.find_element(By.XPATH, "//button[text()='Decide']").click()
        expected = f"half message {half} committed"
        assert expected in chromium.main_text(browser, expected)
    topics = {t["topic"]: t for t in json.loads(request(gw, "/api/topics")[1])}
    assert topics["dash-tx"]["messages"] == 1
    again = request(gw, "/transactions", ADMIN, {"csrf": token(gw, ADMIN), "half_offset": half, "decision": "rollback"})
    assert again[0] == 400 and f"half message {half}: already decided" in again[1]


@chromium.needs_chromium
def test_admin_edits_configs_and_deletes_a_topic_in_the_browser(gw):
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By

    with Admin(gw.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        admin.create_topic("dash-edit", queues=2)
    assert "Sign in" in request(gw, "/topics/dash-edit")[1]  # someone can sign in here: the link is shown
    browser = chromium.start()
    base = f"http://{gw.host}"

    def submit(button: str, **fields) -> str:
        chromium.submit_form(browser, button, **fields)
        return chromium.main_text(browser, "back") + chromium.main_text(browser, "")

    try:
        browser.get(f"http://{ADMIN[0]}:{ADMIN[1]}@{gw.host}/login")
        chromium.main_text(browser, "Signed in as admin admin")
        browser.get(base + "/topics/dash-edit")
        assert "set retention.ms=3600000 on dash-edit" in submit("Set config", config="retention.ms", value="3600000")
        browser.get(base + "/topics/dash-edit")
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table tr")]
        assert "retention.ms 3600000 topic" in rows
        chromium.shot(browser, "admin-topic-config")
        browser.get(base + "/topics/dash-edit")
        refused = submit("Set config", config="retention.ms", value="soon")
        assert "Invalid value soon for configuration retention.ms" in refused
        browser.get(base + "/topics/dash-edit")
        assert "Unknown topic config name: no.such" in submit("Set config", config="no.such", value="1")
        browser.get(base + "/topics/dash-edit")
        assert "type the topic's name" in submit("Delete topic", delete="dash-other")
        browser.get(base + "/topics/dash-edit")
        assert "deleted topic dash-edit" in submit("Delete topic", delete="dash-edit")
        browser.get(base + "/topics/dash-edit")
        assert "No topic dash-edit." in chromium.main_text(browser, "No topic")
    finally:
        browser.quit()
    assert "dash-edit" not in {t["topic"] for t in json.loads(request(gw, "/api/topics")[1])}


@chromium.needs_chromium
def test_security_page_for_admins_only(gw):
    """Users, access keys and ACLs made with `python -m security` show to a signed-in admin, never
    their secrets; others are asked to sign in."""
    import subprocess
    import sys
    run = [sys.executable, "-m", "security", "--data-dir", gw.data_dir]
    subprocess.run([*run, "access-key", "set", "console-key", "--secret", "never-shown-1234", "--user", "bob"],
                   check=True, capture_output=True, timeout=60)
    subprocess.run([*run, "acl", "add", "--principal", "User:bob", "--topic", "dash-acl", "--operation", "READ"],
                   check=True, capture_output=True, timeout=60)
    time.sleep(1.2)  # re-read within a second
    status, page, _ = request(gw, "/security")
    assert status == 200 and "Sign in" in page and "console-key" not in page
    assert "console-key" not in request(gw, "/security", ("bob", "bob-secret"))[1]
    with signed_in(gw) as browser:
        browser.get(f"http://{gw.host}/security")
        text = chromium.main_text(browser, "ACLs")
        chromium.shot(browser, "security")
    assert "User:bob" in text and "SCRAM-SHA-256" in text
    assert "console-key bob" in text  # the key and its user
    assert "User:bob * READ ALLOW TOPIC dash-acl LITERAL" in text
    assert "never-shown-1234" not in text and "bob-secret" not in text


@chromium.needs_chromium
def test_admin_manages_users_and_acls_in_the_browser(gw):
    """From the Security page an admin creates a user with SCRAM credentials and adds then removes an
    ACL, through security.commands (python -m security's parser and checks): the files the CLI lists
    show the change, and a bad ACL is refused with the parser's message."""
    import subprocess
    import sys
    pytest.importorskip("selenium")

    def submit(browser, form: str, values: dict[str, str], expected: str) -> None:
        submit_security(browser, gw, form, values, expected)

    acl = {"principal": "User:carol", "resource": "topic", "name": "carol-orders", "operation": "write"}
    with signed_in(gw) as browser:
        submit(browser, "/security/users", {"name": "carol", "password": "carol-secret"},
               "user carol: SCRAM-SHA-256 credentials set (4096 iterations)")
        submit(browser, "/security/acls", acl,
               "ACL added: ALLOW User:carol WRITE on TOPIC 'carol-orders' (literal) from host *")
        listed = json.loads(subprocess.run([sys.executable, "-m", "security", "--data-dir", gw.data_dir, "list"],
                                           check=True, capture_output=True, text=True, timeout=60).stdout)
        assert [m for m, _n in listed["users"]["carol"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert {"principal": "User:carol", "name": "carol-orders"}.items() <= \
            next(a for a in listed["acls"] if a["principal"] == "User:carol").items()
        submit(browser, "/security/acls", {**acl, "change": "remove"},
               "ACL removed: ALLOW User:carol WRITE on TOPIC 'carol-orders' (literal)")
        submit(browser, "/security/acls", {**acl, "operation": "FLY"}, "argument --operation: invalid choice")
        chromium.shot(browser, "admin-acl-refused")
    assert "carol-orders" not in request(gw, "/security", ADMIN)[1]
    assert CredentialStore(os.path.join(gw.data_dir, "config")).describe("carol")


def test_admin_forms_with_bad_fields_answer_400_never_500(gw):
    """Every POST form, as the signed-in admin with a good token, with fields of garbage."""
    import random
    rng = random.Random(31)
    csrf = token(gw, ADMIN)
    with Admin(gw.namesrv, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        admin.create_topic("dash-fuzz", queues=1)
    bad = ["", "-1", "0", "99999999999999999999", "abc", "\x00", "%", "a" * 3000, "1e3", "NaN", "earliest ",
           "retention.ms", "<b>", "𝄞"]
    fields = ["name", "queues", "config", "value", "delete", "topic", "to", "msg_id", "half_offset", "decision",
              "password", "change", "principal", "resource", "operation", "permission", "key", "user", "secret"]
    for path in ["/topics", "/topics/dash-fuzz", "/topics/no-such", "/groups/no-such", "/dlq/no-such",
                 "/transactions", "/delay", "/security/users", "/security/acls", "/security/access-keys",
                 "/security/access-keys/delete"]:
        for _ in range(40):
            form = {rng.choice(fields): rng.choice(bad) for _ in range(rng.randrange(1, 4))}
            form.pop("delete", None)  # the topic stays for the next rounds
            status, page, _ = request(gw, path, ADMIN, data={**form, "csrf": csrf})
            assert status in (200, 400), (path, form, status, page[-300:])
    assert request(gw, "/healthz")[0] == 200
    made = {t["topic"] for t in json.loads(request(gw, "/api/topics")[1])}
    assert not {"<b>", "\x00", "%", "a" * 3000, "𝄞"} & made  # no topic of an illegal name was created
