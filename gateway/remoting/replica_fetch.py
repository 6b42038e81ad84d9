"""Replication over the remoting port: private request codes a follower sends its leader, and the
role request the cluster layer (or a test) sends to set a queue's role without etcd.

- REPLICA_FETCH (topic, queueId, offset, epoch, replica, maxBytes, maxWaitMs, highWatermark):
  long-polled like a pull until there are entries past `offset` or the leader's high watermark
  is above the follower's; the answer's body is the entries from `offset` in the stored layout (codec.remoting.message,
  what PULL_MESSAGE returns), each recording its queue offset; ext fields error, epoch,
  highWatermark, logEnd, logStart and epochs (the leader's epoch table, JSON). An offset below
  logStart is OFFSET_OUT_OF_RANGE: the follower starts its queue there. Entries below the leader's
  local start come from its tier (gateway.tier_reads: the answer waits, off the event loop, for
  the segments' download, up to maxWaitMs).
- REPLICA_EPOCH_END (topic, queueId, epoch, replica, currentEpoch): OffsetsForLeaderEpoch, answers
  error, epoch, endOffset (an error, and fencing, when currentEpoch is not the leader's, as a fetch).
- REPLICA_ROLE (JSON body {topic, queueId, role: leader|follower|none, epoch, replicas, isr,
  leader, queues}): the hook the cluster layer drives (ReplicaManager.become_leader / ...).
- REPLICA_STATE (topic, queueId): the queue's role, epoch, ISR, high watermark and log end (JSON).
"""
from __future__ import annotations

import json

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting import message as M
from gateway import tier_reads
from gateway.remoting.common import DEFERRED, handles
from gateway.remoting.headers import RequestError, optional_int, optional_long, optional_str, queue_id
from semantics.replication import FetchAnswer, FetchRequest, StaleEpoch
from semantics.replication.contract import NONE

# Private request codes (codec.remoting.RequestCode; a RocketMQ client never sends them).
REPLICA_FETCH, REPLICA_EPOCH_END = RC.REPLICA_FETCH, RC.REPLICA_EPOCH_END
REPLICA_ROLE, REPLICA_STATE = RC.REPLICA_ROLE, RC.REPLICA_STATE
MAX_FETCH_BYTES = 8 << 20  # inside the 16 MiB frame cap
MAX_WAIT_MS = 5000


# ---------------------------------------------------------------------- wire form (both sides)

def fetch_command(r: FetchRequest) -> RemotingCommand:
    return RemotingCommand(code=REPLICA_FETCH, ext_fields={
        "topic": r.topic, "queueId": str(r.queue_id), "offset": str(r.offset), "epoch": str(r.epoch),
        "replica": r.replica, "maxBytes": str(r.max_bytes), "maxWaitMs": str(r.max_wait_ms),
        "highWatermark": str(r.high_watermark)})


def fetch_answer(resp: RemotingCommand) -> FetchAnswer:
    """Decode a REPLICA_FETCH answer (raises MessageFormatError on a damaged body)."""
    f = resp.ext_fields
    entries, body, pos = [], resp.body, 0
    while pos < len(body):
        msg = M.decode(body, pos)
        entries.append(msg)
        pos += msg.size
    return FetchAnswer(f.get("error", "UNKNOWN"), int(f.get("epoch", -1)), int(f.get("highWatermark", 0)),
                       int(f.get("logEnd", 0)), entries, json.loads(f.get("epochs", "[]")), int(f.get("logStart", 0)))


def epoch_end_command(topic: str, qid: int, epoch: int, replica: str, current_epoch: int) -> RemotingCommand:
    return RemotingCommand(code=REPLICA_EPOCH_END, ext_fields={
        "topic": topic, "queueId": str(qid), "epoch": str(epoch), "replica": replica,
        "currentEpoch": str(current_epoch)})


# ---------------------------------------------------------------------- the leader's handlers

def _fetch_request(req) -> FetchRequest:
    return FetchRequest(optional_str(req, "topic"), queue_id(req), max(optional_long(req, "offset", 0), 0),
                        optional_int(req, "epoch", -1), optional_str(req, "replica"),
                        min(optional_int(req, "maxBytes", 1 << 20, 1), MAX_FETCH_BYTES),
                        min(optional_int(req, "maxWaitMs", 500, 0), MAX_WAIT_MS),
                        optional_long(req, "highWatermark", 0))


@handles(REPLICA_FETCH)
def replica_fetch(channel, req):
    app = channel.app
    fr = _fetch_request(req)

    async def long_poll():
        deadline = trio.current_time() + fr.max_wait_ms / 1000
        while True:
            error, role = app.replication.on_fetch(fr)
            end = app.store.max_offset(fr.topic, fr.queue_id)
            remaining = deadline - trio.current_time()
            if error != NONE or fr.offset < end or remaining <= 0 or role.high_watermark > fr.high_watermark:
                body = b""
                if error == NONE and fr.offset < end:  # below the local start: from this leader's tier
                    result = await tier_reads.read(app.store.read, fr.topic, fr.queue_id, fr.offset, max_count=1024,
                                                   max_bytes=fr.max_bytes, deadline=deadline)
                    body = b"".join(m.raw for q, m in result.entries if q >= fr.offset)
                return _fetch_response(app, req, fr, error, role, end, body)
            await app.arrivals.wait_any([(fr.topic, fr.queue_id)], remaining)
    channel.spawn(req, long_poll)
    return DEFERRED


def _fetch_response(app, req, fr: FetchRequest, error: str, role, end: int, body: bytes) -> RemotingCommand:
    m = app.replication
    fields = {"error": error, "epoch": role.epoch if role else -1,
              "highWatermark": role.high_watermark if role else 0, "logEnd": end,
              "logStart": app.store.min_offset(fr.topic, fr.queue_id),
              "epochs": json.dumps(m.epochs.entries(fr.topic, fr.queue_id))}
    return req.response(ResponseCode.SUCCESS if error == NONE else ResponseCode.SYSTEM_ERROR, fields, body=body)


@handles(REPLICA_EPOCH_END)
def replica_epoch_end(channel, req):
    app = channel.app
    topic, qid, epoch = optional_str(req, "topic"), queue_id(req), optional_int(req, "epoch", -1)
    error = app.replication.check_leader_epoch(topic, qid, optional_int(req, "currentEpoch", -1))
    if error != NONE:
        return req.response(ResponseCode.SYSTEM_ERROR, {"error": error, "epoch": -1, "endOffset": -1})
    found, end = app.replication.epochs.end_offset(topic, qid, epoch, app.store.max_offset(topic, qid))
    return req.response(ResponseCode.SUCCESS, {"error": NONE, "epoch": found, "endOffset": end})


@handles(REPLICA_ROLE)
def replica_role(channel, req):
    """Set a queue's role: the hook the cluster layer drives, and the tests' static assignment."""
    app = channel.app
    try:
        spec = json.loads(req.body or b"{}")
        topic, qid, role, epoch = spec["topic"], int(spec["queueId"]), spec["role"], int(spec.get("epoch", 0))
    except (ValueError, KeyError, TypeError) as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad REPLICA_ROLE body: {exc}") from None
    if role != "none" and app.store.topics.get(topic) is None:
        n = max(int(spec.get("queues", 0)), qid + 1)
        app.store.topics.create(topic, read_queues=n, write_queues=n)
    m = app.replication
    try:
        if role == "leader":
            m.become_leader(topic, qid, epoch, list(spec.get("replicas", [])), spec.get("isr"))
        elif role == "follower":
            m.become_follower(topic, qid, epoch, spec["leader"])
        elif role == "none":
            m.stop_replica(topic, qid)
        else:
            raise RequestError(ResponseCode.SYSTEM_ERROR, f"unknown role {role!r}")
    except StaleEpoch as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
    except KeyError as exc:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"bad REPLICA_ROLE body: missing {exc}") from None
    return req.response(ResponseCode.SUCCESS)


@handles(REPLICA_STATE)
def replica_state(channel, req):
    app = channel.app
    topic, qid = optional_str(req, "topic"), queue_id(req)
    r = app.replication.role(topic, qid)
    end = app.store.max_offset(topic, qid)
    state = {"role": "none", "logEnd": end, "epochs": app.replication.epochs.entries(topic, qid)}
    if r is not None:
        state.update(role=r.role, epoch=r.epoch, leader=r.leader, fenced=r.fenced,
                     highWatermark=app.replication.readable_end(topic, qid, end),
                     isr=sorted([r.leader, *r.isr]) if r.role == "leader" else None)
    return req.response(ResponseCode.SUCCESS, body=json.dumps(state).encode())
