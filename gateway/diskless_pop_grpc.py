"""gRPC ReceiveMessage, AckMessage and ChangeInvisibleDuration of a diskless queue on a gateway
that does not own POP of the bucket (docs/diskless.md, "POP through several gateways"): sent to the
owner as the remoting POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME it serves for
remoting clients (gateway.diskless_pop_owner forwards them), and its answer turned back into gRPC.

Why: the gRPC route names the owner, but an SDK keeps the route it fetched for up to 30 s. After a
take-over, a consumer whose route names the old owner received nothing there until its refresh,
and its acks were applied to the old owner's pop state, so the new owner handed the acked messages
out again after their invisible time. A receipt handle is the same in both faces (queue id, offset,
pop time, topic: the engine's Receipt), so the owner's receipts ack there whichever face made them.

None from these functions: serve here (this gateway owns POP, knows no owner, or the owner could not
be reached: as remoting POPs, it serves here for the lease's take-over time).

A forwarded receive keeps what a local one gives: FIFO message groups (the POP asks for `order`,
gateway.fifo_hold) and, for an auto-renew receive, server-side lease renewal (gateway.grpc.renew
renews the owner's leases through `change_invisible`)."""
from __future__ import annotations

from codec.remoting import RequestCode as RC, ResponseCode
from codec.remoting import message as smsg
from codec.remoting.extra_info import ExtraInfo, retry_mark
from codec.remoting.command import RemotingCommand
from gateway.grpc.common import Code, RpcError
from semantics import lite
from semantics.diskless import is_diskless
from semantics.pop import INIT_MIN, Receipt

_FAILED = {ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS, ResponseCode.NO_PERMISSION: Code.FORBIDDEN}


async def _forward(app, topic: str, code: int, fields: dict, timeout_s: float) -> RemotingCommand | None:
    """The owner's answer to a remoting request `code` with `fields` about `topic`; None: serve here."""
    owner = getattr(app.pop_remoting, "owner", None)
    if owner is None or app.diskless is None or not is_diskless(app.store.topics.get(topic)):
        return None
    await owner.fresh()  # an owner whose beats stalled learns first whether it still is one
    req = RemotingCommand(code=code, ext_fields={k: str(v) for k, v in fields.items()})
    if owner.remote(req) is None:
        return None
    return await owner.forward(req, timeout_s)


def _failure(resp: RemotingCommand) -> RpcError:
    return RpcError(_FAILED.get(resp.code, Code.INTERNAL_SERVER_ERROR),
                    f"[diskless] the bucket's POP owner answered {resp.code}: {resp.remark or ''}")


def _receipt_fields(receipt: Receipt) -> dict:
    info = ExtraInfo(receipt.offset, receipt.pop_time, 0, 0, retry_mark(receipt.topic), "diskless", receipt.queue_id,
                     receipt.offset)
    return {"consumerGroup": receipt.group, "topic": receipt.topic, "queueId": receipt.queue_id,
            "offset": receipt.offset, "extraInfo": str(info)}


async def ack(app, receipt: Receipt) -> int | None:
    """1 if the owner acknowledged `receipt`, 0 if it names nothing in flight there; None: serve here."""
    if lite.GROUP_SEPARATOR in receipt.group:
        return None
    resp = await _forward(app, receipt.topic, RC.ACK_MESSAGE, _receipt_fields(receipt), 0)
    if resp is None:
        return None
    if resp.code not in (ResponseCode.SUCCESS, ResponseCode.NO_MESSAGE):
        raise _failure(resp)
    return int(resp.code == ResponseCode.SUCCESS)


async def change_invisible(app, receipt: Receipt, invisible_ms: int) -> bool | None:
    """True if the owner changed `receipt`'s invisible time, False if it names nothing in flight
    there; None: serve here."""
    if lite.GROUP_SEPARATOR in receipt.group:
        return None
    fields = {**_receipt_fields(receipt), "invisibleTime": invisible_ms}
    resp = await _forward(app, receipt.topic, RC.CHANGE_MESSAGE_INVISIBLETIME, fields, 0)
    if resp is None:
        return None
    if resp.code not in (ResponseCode.SUCCESS, ResponseCode.NO_MESSAGE):
        raise _failure(resp)
    return resp.code == ResponseCode.SUCCESS


async def receive(app, group: str, topic: str, max_n: int, invisible_ms: int, poll_s: float,
                  filter_kind: str, expression: str) -> tuple[int, list] | None:
    """The owner's POP of every queue of `topic` (long-polling up to `poll_s`): (its pop time, the
    messages as stored, queue id, offset and reconsume times set); None: serve here."""
    fields = {"consumerGroup": group, "topic": topic, "queueId": -1, "maxMsgNums": max_n,
              "invisibleTime": invisible_ms, "pollTime": int(poll_s * 1000),  # no bornTime: the clocks may differ
              "initMode": INIT_MIN, "expType": filter_kind, "exp": expression,
              "order": "true"}  # FIFO message groups held there as a local receive holds them (gateway.fifo_hold)
    resp = await _forward(app, topic, RC.POP_MESSAGE, fields, poll_s)
    if resp is None:
        return None
    if resp.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_TIMEOUT):
        return 0, []
    if resp.code != ResponseCode.SUCCESS:
        raise _failure(resp)
    messages, at, body = [], 0, resp.body
    try:
        while at < len(body):
            m = smsg.decode(body, at)
            if m.size <= 0:
                raise ValueError("an entry of size 0")
            messages.append(m)
            at += m.size
        pop_time = int(resp.ext_fields["popTime"])
    except (smsg.MessageFormatError, KeyError, ValueError) as exc:
        raise RpcError(Code.INTERNAL_SERVER_ERROR, f"[diskless] unreadable answer of the POP owner: {exc}") from None
    return pop_time, messages
