"""Every console page (each GET route of gateway.ops.pages, so a new page without an entry here fails)
on a gateway with data in each view (`--authorizer acl`: topics, messages, a committed group, a dead
letter, a delayed message, a pending transaction, a registered schema), not signed in and signed in
as the admin in headless chromium: 200 and none of the console's error texts."""
from __future__ import annotations

import json
import os
import time
import urllib.request
from types import SimpleNamespace

import pytest

import chromium
from client import Admin, Message, Producer, TransactionProducer, TransactionState
from gateway.ops.pages import routes
from gateway_process import GatewayProcess, free_port, wait_port
from security.credentials import CredentialStore
from test_dashboard_admin import ADMIN, _populate, request, signed_in

pytestmark = chromium.needs_chromium

# Each GET route -> the page visited and a text it shows once the view has data.
PAGES = {"/": ("/", "CommitLog"), "/login": ("/login", "Signed in as admin"), "/topics": ("/topics", "dash-acl"),
         "/topics/{name:path}": ("/topics/dash-acl", "dash-acl"), "/groups": ("/groups", "acl-billing"),
         "/groups/{name:path}": ("/groups/acl-billing", "dash-acl"),
         "/messages": ("/messages?topic=dash-acl", "v3"), "/dlq": ("/dlq", "acl-cg"),
         "/dlq/{name:path}": ("/dlq/acl-cg", "dash-acl-native"), "/delay": ("/delay", "every-delay"),
         "/transactions": ("/transactions", "every-tx"), "/schemas": ("/schemas", "every-value"),
         "/cluster": ("/cluster", "dash-acl"), "/grpc": ("/grpc", "Clients"), "/security": ("/security", "admin")}
ERRORS = ["Bad request", "Not allowed", "Internal Server Error", "Traceback", "No topic", "No group"]


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    data = str(tmp_path_factory.mktemp("every-page") / "data")
    http_port, registry_port, grpc_port = free_port(), free_port(), free_port()
    os.environ["ROCKETGATE_ADMIN_PASSWORD"] = ADMIN[1]
    try:
        g = GatewayProcess(data, extra_args=["--authorizer", "acl", "--super-users", "User:admin",
                                             "--http-port", str(http_port), "--schema-registry-port",
                                             str(registry_port), "--grpc-port", str(grpc_port)]).start()
    finally:
        del os.environ["ROCKETGATE_ADMIN_PASSWORD"]
    try:
        g.host = f"127.0.0.1:{http_port}"
        CredentialStore(os.path.join(data, "config")).set_password("bob", "bob-secret")
        wait_port(registry_port)
        _populate(g)
        _more_data(g, f"http://127.0.0.1:{registry_port}")
        yield g
    finally:
        g.stop()


def _more_data(gw, registry: str) -> None:
    """A delayed message, a transaction left pending, a registered schema."""
    creds = {"access_key": ADMIN[0], "secret_key": ADMIN[1]}
    with Admin(gw.namesrv, **creds) as admin:
        admin.create_topic("every-delay", queues=1)
        admin.create_topic("every-tx", queues=1)
    with Producer("every-pg", gw.namesrv, **creds) as prod:
        prod.send(Message("every-delay", b"in two hours", delay_level=18))
    unknown = lambda *_: TransactionState.UNKNOWN  # noqa: E731
    with TransactionProducer("every-txp", gw.namesrv, local_transaction=unknown, check_listener=unknown, **creds) as tp:
        tp.send_in_transaction(Message("every-tx", b"undecided"))
    import base64
    body = json.dumps({"schema": json.dumps({"type": "string"})}).encode()
    req = urllib.request.Request(f"{registry}/subjects/every-value/versions", data=body, headers={
        "Content-Type": "application/vnd.schemaregistry.v1+json",
        "Authorization": "Basic " + base64.b64encode(f"{ADMIN[0]}:{ADMIN[1]}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def get_routes() -> list[str]:
    app = SimpleNamespace()
    return [r.path for r in routes(app, SimpleNamespace(ring=None)) if "GET" in (r.methods or {"GET"})]


def test_every_page_is_listed():
    assert sorted(get_routes()) == sorted(PAGES)


def test_every_page_not_signed_in(gw):
    for route, (path, _shows) in PAGES.items():
        status, page, _ = request(gw, path)
        if route == "/login":
            assert status == 401  # asks for the admin's credentials
            continue
        assert status == 200, (path, page[-500:])
        assert not [e for e in ERRORS if e in page], (path, page[-500:])
        assert "Signed in as" not in page


def test_every_page_signed_in(gw):
    with signed_in(gw) as browser:
        for route, (path, shows) in PAGES.items():
            assert request(gw, path, ADMIN)[0] == 200, path
            browser.get(f"http://{gw.host}{path}")
            text = chromium.main_text(browser, shows)
            assert shows in text, (path, text)
            assert not [e for e in ERRORS if e in text], (path, text)
