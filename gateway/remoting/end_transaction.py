"""End-transaction processor: END_TRANSACTION from the producer, and the check-back the broker
sends a producer (CHECK_TRANSACTION_STATE) for a half message nobody ended in time. In a cluster,
an end that may have reached another gateway than the half's is passed on (gateway.cluster.end_forward)."""
from __future__ import annotations

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from gateway.cluster import end_forward
from gateway.remoting.common import DEFERRED, after_durable, handles, registry
from gateway.remoting.headers import optional_int, required_long

_MISSED = ("NOT_FOUND", "MISMATCH")


@handles(RC.END_TRANSACTION, RC.CLUSTER_END_TRANSACTION)
def end_transaction(channel, req):
    """Commit (8) or roll back (12) a half message; 0 (unknown) leaves it to the check-back. On a slow
    disk the outcome is appended off the event loop (`app.flow`) and answered from its own task. A
    possibly misrouted end (or one another gateway passed on) decides only the same message (msgId)."""
    app = channel.app
    kind = optional_int(req, "commitOrRollback", 0)
    if kind not in (8, 12):
        return req.response()
    misrouted = end_forward.may_be_misrouted(app, req)
    uniq = req.get_str("msgId") if misrouted or req.code == RC.CLUSTER_END_TRANSACTION else None
    args = (required_long(req, "tranStateTableOffset"), kind == 8, req.get_str("producerGroup"),
            required_long(req, "commitLogOffset"))
    if app.flow.appends_inline(app.store):
        outcome, result = app.transactions.end(*args, uniq=uniq)
        if not (misrouted and outcome.name in _MISSED):
            return _answer(channel, req, outcome, result)

        async def passed_on():
            return req.response() if await end_forward.forward(app, req) else _answer(channel, req, outcome, None)
        channel.spawn(req, passed_on)
        return DEFERRED

    async def in_turn():
        outcome, result = await app.transactions.end_in_turn(app.flow, *args, uniq=uniq)
        if misrouted and outcome.name in _MISSED and await end_forward.forward(app, req):
            return req.response()
        resp = _answer(channel, req, outcome, result)
        return None if resp is DEFERRED else resp  # the durable wait answers it
    channel.spawn(req, in_turn)
    return DEFERRED


def _answer(channel, req, outcome, result):
    if outcome.name in _MISSED:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=outcome.value)
    if result is None:
        return req.response()
    return after_durable(channel, req, result.end_offset, req.response())


async def send_transaction_check(app, producer_group: str, half, body: bytes) -> bool:
    """Checker for semantics.transactions: CHECK_TRANSACTION_STATE (oneway) to a live producer."""
    channels = [c for c in registry(app).producer_channels(producer_group) if not c.closed]
    if not channels:
        return False
    uniq = half.properties.get("UNIQ_KEY")
    channels[0].send_oneway(RemotingCommand(code=RC.CHECK_TRANSACTION_STATE, flag=2, body=body, ext_fields={
        "tranStateTableOffset": str(half.queue_offset), "commitLogOffset": str(half.physical_offset),
        "msgId": uniq or "", "transactionId": uniq or "", "offsetMsgId": half.msg_id,
        "topic": half.properties.get("REAL_TOPIC", half.topic)}))
    return True
