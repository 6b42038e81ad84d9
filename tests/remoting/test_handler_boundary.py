"""The handler boundary of a remoting connection, in process: a RequestError is the client's
mistake (answered, the connection goes on); any other exception is a bug (not answered, the
connection ends and the exception reaches the server's connection task, which logs it)."""
import types

import pytest
import trio

from codec.remoting import FrameReader, RemotingCommand, ResponseCode, encode
from gateway.cluster.ownership import SINGLE_NODE
from gateway.remoting import handle_connection, headers
from gateway.remoting.common import DEFERRED, HANDLERS
from semantics.rocketmq_clients import ClientRegistry

CLIENT_MISTAKE, BUG, DEFERRED_BUG, PROBE, GET_INT = 9101, 9102, 9103, 9104, 9105


def _client_mistake(channel, req):
    headers.required_str(req, "consumerGroup")
    return req.response()


def _bug(channel, req):
    return {}[req.code]  # a KeyError that no client input explains


def _deferred_bug(channel, req):
    async def later():
        raise TypeError("deferred handler bug")
    channel.spawn(req, later)
    return DEFERRED


@pytest.fixture
def test_handlers(monkeypatch):
    monkeypatch.setitem(HANDLERS, CLIENT_MISTAKE, _client_mistake)
    monkeypatch.setitem(HANDLERS, BUG, _bug)
    monkeypatch.setitem(HANDLERS, DEFERRED_BUG, _deferred_bug)
    monkeypatch.setitem(HANDLERS, GET_INT, lambda channel, req: req.response(ext_fields={"n": req.get_int("n")}))
    monkeypatch.setitem(HANDLERS, PROBE, lambda channel, req: req.response(ext_fields={"ok": "yes"}))


def _exchange(requests: list[int]) -> tuple[list[RemotingCommand], list[BaseException]]:
    """Send `requests` on one connection; the answers received until the server closed it (or
    answered them all), and what the server's connection task raised."""
    no_topic_changes = types.SimpleNamespace(topics=types.SimpleNamespace(submission=0))
    app = types.SimpleNamespace(config=types.SimpleNamespace(remoting_max_parked_requests=100),
                                rocketmq_clients=ClientRegistry(), security=None,
                                store=no_topic_changes, ownership=SINGLE_NODE)
    raised: list[BaseException] = []

    async def serve(stream):
        try:
            await handle_connection(stream, app)
        except Exception as exc:
            raised.append(exc)
        finally:
            await stream.aclose()

    async def main():
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        answers = []
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, serve, listeners)
            client = await trio.open_tcp_stream("127.0.0.1", port)
            reader = FrameReader()
            with trio.fail_after(10):
                for opaque, code in enumerate(requests, 1):
                    await client.send_all(encode(RemotingCommand(code=code, opaque=opaque)))
                    while (resp := reader.next_command()) is None:
                        data = await client.receive_some(65536)
                        if not data:
                            break
                        reader.feed(data)
                    if resp is None:
                        break
                    answers.append(resp)
            await client.aclose()
            await trio.sleep(0.05)  # let the server side see the close
            nursery.cancel_scope.cancel()
        return answers

    return trio.run(main), raised


def test_client_mistake_is_answered_and_the_connection_goes_on(test_handlers):
    answers, raised = _exchange([CLIENT_MISTAKE, GET_INT, PROBE])
    assert [a.code for a in answers] == [ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_ERROR, ResponseCode.SUCCESS]
    assert answers[0].remark == "the custom field <consumerGroup> is null"
    assert "'n'" in answers[1].remark  # RemotingCommand.get_int's own error is the client's mistake too
    assert answers[2].ext_fields == {"ok": "yes"}
    assert raised == []


@pytest.mark.parametrize("code, kind", [(BUG, KeyError), (DEFERRED_BUG, TypeError)])
def test_handler_bug_is_not_answered_and_ends_the_connection(test_handlers, code, kind):
    answers, raised = _exchange([PROBE, code, PROBE])
    assert [a.ext_fields for a in answers] == [{"ok": "yes"}]  # closed without an answer to the bug
    assert len(raised) == 1
    error = raised[0]
    while isinstance(error, BaseExceptionGroup):
        (error,) = error.exceptions
    assert isinstance(error, kind)
    assert f"while handling remoting request {code}" in error.__notes__
