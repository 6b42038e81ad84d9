"""CLUSTER_TXN_MARKERS (private remoting code 9206; docs/cluster.md, "Kafka transactions"): a Kafka
transaction's decided end, sent by the gateway completing it to the leader of some of its partitions,
which ends its halves of that producer there (`gateway.cluster.txns.ClusterTxns.markers`), as Kafka's
WriteTxnMarkers. Sent to the gateway that led each partition when it joined the transaction (it holds
the halves): a commit of a queue it no longer leads is forwarded to the leader as a due message
(gateway.cluster.delivery). Body JSON {txn, pid, epoch, commit, coord (the end's number, as Kafka's
coordinator epoch: gateway.cluster.txn_fence), partitions}; answered once the ends are
durable (and in the in-sync replicas where it leads). Signed with the inter-broker credential."""
from __future__ import annotations

import json
import logging

import trio

from codec.remoting import RemotingCommand, RequestCode as RC, ResponseCode
from gateway.remoting.common import DEFERRED, handles
from gateway.remoting.replica_client import RemotingReplicaTransport

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 10.0


class MarkerTransport(RemotingReplicaTransport):
    """One connection per leader for the ends."""

    async def call(self, address: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._call((address, "txn-markers"), address, cmd, ANSWER_TIMEOUT_S)


@handles(RC.CLUSTER_TXN_MARKERS)
def txn_markers(channel, req):
    """A coordinator's end of a transaction for partitions whose halves this gateway holds."""
    app = channel.app
    txns = app.kafka.cluster_txns
    try:
        body = json.loads(req.body or b"")
        txn_id, pid, epoch, commit = str(body["txn"]), int(body["pid"]), int(body["epoch"]), bool(body["commit"])
        partitions = [(str(t), int(p)) for t, p in body["partitions"]]
        coord = None if body.get("coord") is None else int(body["coord"])
    except (ValueError, KeyError, TypeError) as exc:
        return req.response(ResponseCode.SYSTEM_ERROR, remark=f"bad CLUSTER_TXN_MARKERS body: {exc}")
    if txns is None:
        return req.response(ResponseCode.NO_PERMISSION, remark="not a cluster member")

    async def ended():
        try:
            await txns.markers(txn_id, pid, epoch, commit, partitions, coord)
        except Exception as exc:  # noqa: BLE001 - the coordinator retries
            return req.response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        return req.response(ResponseCode.SUCCESS)
    channel.spawn(req, ended, after_effects=True)
    return DEFERRED



async def deliver_all(by_leader: dict, deliver_to) -> list:
    """A coordinator's end to every leader in `by_leader` (leader -> partitions; -1: none to end) at
    once, one round trip instead of one per leader (`deliver_to(leader, partitions) -> taken`): the
    partition lists taken. A local error is raised as itself once every leader has answered."""
    took, errors = [], []

    async def one(leader, tps):
        try:
            if leader == -1 or await deliver_to(leader, tps):
                took.append(tps)
        except Exception as exc:  # noqa: BLE001 - raised below, not inside the nursery's exception group
            errors.append(exc)
    async with trio.open_nursery() as nursery:
        for leader, tps in by_leader.items():
            nursery.start_soon(one, leader, tps)
    if errors:
        raise errors[0]
    return took


async def deliver_round(left: set, targets, taken: set, deliver_to) -> set:
    """One round of a coordinator's end: each partition in `left` to every gateway `targets(tp)` names
    that has not taken it yet (`taken`: (gateway, partition) pairs, added to). The partitions still owed
    an end somewhere."""
    by_gateway: dict[int, list] = {}
    for tp in left:
        for gateway in targets(tp):
            if (gateway, tp) not in taken:
                by_gateway.setdefault(gateway, []).append(tp)
    took = await deliver_all(by_gateway, deliver_to)
    for gateway, tps in by_gateway.items():
        if any(t is tps for t in took):
            taken.update((gateway, tp) for tp in tps)
    return {tp for tp in left if any((gateway, tp) not in taken for gateway in targets(tp))}


async def deliver_until(left: set, targets, deliver_to, deadline_s: float, retry_s: float) -> set:
    """`deliver_round` again every `retry_s` until every partition took its end or `deadline_s`
    passed (a holder down: Kafka's markers wait for an offline partition too); what is still owed."""
    taken: set = set()
    with trio.move_on_after(deadline_s):
        while left:
            left = await deliver_round(left, targets, taken, deliver_to)
            if left:
                await trio.sleep(retry_s)
    return left


def end_targets(held: list, leader: int, commit: bool, layout: bool) -> set[int]:
    """Where an end of a partition goes (-1: deleted, nothing to end): the holder of its halves
    (`held`: [node, epoch] when it joined); an abort also to its `leader` now, which took the
    producer's batches after the partition moved there (left undecided, a later v1 commit of the same
    epoch there would commit them; a commit after a move is an abort). Kafka's layout (`layout`):
    the current leader appends the marker."""
    if leader < 0 or layout:
        return {leader}
    return {held[0] if held[0] >= 0 else leader} | (set() if commit else {leader})


async def send_markers(transport, address: str, leader: int, txn_id, end: tuple, commit, tps) -> bool:
    """Whether the gateway at `address` (node `leader`) wrote the end of `tps` (a CLUSTER_TXN_MARKERS);
    `end`: (producer id, epoch, the end's number or None: `txn_fence`)."""
    pid, epoch, coord = end
    body = json.dumps({"txn": txn_id, "pid": pid, "epoch": epoch, "commit": commit, "coord": coord,
                       "partitions": [list(tp) for tp in tps]}).encode()
    try:
        resp = await transport.call(address, RemotingCommand(code=RC.CLUSTER_TXN_MARKERS, body=body))
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
        log.info("cluster: transaction markers to node %d failed: %s", leader, exc)
        return False
    return resp.code == ResponseCode.SUCCESS
