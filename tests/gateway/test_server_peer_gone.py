"""A connection that ends because its peer went away is not logged as a failure, also when its
pipelining tasks report that inside an ExceptionGroup (the fault harness saw tracebacks for resets)."""
from __future__ import annotations

import trio

from gateway.server import _peer_gone


def test_a_reset_is_the_peer_gone_alone_or_in_a_group():
    reset = trio.BrokenResourceError("socket connection broken: [Errno 104] Connection reset by peer")
    assert _peer_gone(reset)
    assert _peer_gone(ConnectionResetError())
    assert _peer_gone(ExceptionGroup("tasks", [reset, trio.ClosedResourceError()]))
    assert _peer_gone(ExceptionGroup("outer", [ExceptionGroup("inner", [ConnectionResetError()])]))


def test_a_bug_is_not_the_peer_gone_even_next_to_a_reset():
    assert not _peer_gone(ValueError("a handler bug"))
    assert not _peer_gone(ExceptionGroup("tasks", [trio.BrokenResourceError(), KeyError("bug")]))
