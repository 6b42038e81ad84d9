"""gateway/kafka/access.py without a server: an API with no rule is served to principals with ALTER on
the cluster only (others are refused, which closes their connection); without --authorizer acl every
handler runs unchanged."""
from __future__ import annotations

import types

import pytest
import trio

import gateway.kafka.access as access
from gateway.kafka.registry import RequestContext
from security import Security

NEW_API = 9999  # an API some later change adds without an authorization rule


async def _handler(ctx):
    return {"served": True}


def _ctx(security, principal: str) -> RequestContext:
    app = types.SimpleNamespace(security=security)
    return RequestContext(app, 0, {}, "c", "10.0.0.1", 9092, principal)


def test_an_api_without_a_rule_needs_alter_on_the_cluster(tmp_path):
    sec = Security(str(tmp_path), super_users=["User:admin"], environ={})
    assert trio.run(access.guarded, NEW_API, _handler, _ctx(sec, "User:admin")) == {"served": True}
    with pytest.raises(access.Refused):
        trio.run(access.guarded, NEW_API, _handler, _ctx(sec, "User:alice"))


def test_without_security_every_handler_runs():
    assert trio.run(access.guarded, NEW_API, _handler, _ctx(None, "User:ANONYMOUS")) == {"served": True}
    assert trio.run(access.guarded, 12, _handler, _ctx(None, "User:ANONYMOUS")) == {"served": True}
