"""One POP owner per bucket for diskless queues (docs/diskless.md, "POP through several gateways").

POP's state (leases, receipts, progress) is the serving gateway's pop log, so two gateways popping
one group on one diskless queue would each hand every message out. Gateways sharing a bucket
without a cluster therefore elect one POP owner: the holder of a lease of conditional objects
`diskless/pop/<term>` (the janitor's mechanism, store/diskless/janitor_lease.py, under its own
prefix and a 1 s beat) whose object names its remoting address. The others forward a diskless
queue's POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME to it unchanged
(so an ACL signature still holds) and relay its answer: a RocketMQ client sees one broker's POP
wherever it connects, whatever route it cached. gRPC clients are sent to the owner by the route
(gateway.grpc.route: QueryRoute / QueryAssignment of a diskless topic name the owner's gRPC
endpoint); a ReceiveMessage, AckMessage or ChangeInvisibleDuration that still reaches another
gateway (a route fetched before a take-over) goes to the owner as these remoting requests
(gateway.diskless_pop_grpc). In an etcd cluster none of this runs: the route and
the queue id translation already send a queue's POP to its leader (gateway.cluster.remoting_queues).
An owner that cannot be reached is not waited for: the request, and every POP and ack for the next
TTL_S, is served here (at-least-once, as a broker fail-over is), and a warning is logged.
The owner publishes its diskless queues' in-flight POP state at each beat (`HANDOVER`, when it
changed); a gateway that takes the lease, or serves here because the owner stopped answering, adopts
it first (semantics.pop_handover): what was in flight at the old owner stays invisible until its time
and its receipts still ack it."""
from __future__ import annotations

import logging

import trio

from codec.remoting import RemotingCommand
from semantics import pop_handover
from semantics.diskless import is_diskless
from gateway.cluster.ownership import clustered
from gateway.diskless import until_active
from gateway.rate_log import RateLimitedWarning
from gateway.remoting.replica_client import RemotingReplicaTransport, outgoing
from store.diskless.janitor_lease import JanitorLease, term_key
from store.objstore.api import NotFound, ObjectStoreError

log = logging.getLogger(__name__)

PREFIX = "diskless/pop/"
HANDOVER = "diskless/pop-inflight/"  # + the owner's term: its in-flight POP state of diskless queues, rewritten when it changes
INTERVAL_S = 1.0
TTL_S = 5.0  # the owner's object unchanged this long (3+ looks): another gateway takes the lease
FORWARDED = "rocketgate: forwarded to the diskless POP owner"  # the request's remark (outside any signature)
ANSWER_SLACK_S = 10.0  # beyond a forwarded pop's own long-poll time
WARN_EVERY_S = 30.0
FIRST_LOOK_S = 10.0  # how long a start waits for the store to name the owner (then it serves here until known)
FRESH_S = 2.0  # an owner whose last look began longer ago looks again before it serves (well under TTL_S)


class PopOwner:
    """Background service: every INTERVAL_S, hold or follow the bucket's POP lease (off the loop);
    `forward` relays a request to the owner when another gateway holds it."""

    def __init__(self, app) -> None:
        self.app = app
        address = f"{app.config.advertised}:{app.config.remoting_port}"
        info = {"remoting": address}
        if app.config.grpc_port:
            info["grpc"] = f"{app.config.advertised}:{app.config.grpc_port}"
        self.lease = JanitorLease(app.diskless.index.store, TTL_S, owner=str(app.config.node_id), prefix=PREFIX,
                                  info=info)
        self.address = address
        self.owner: str | None = None  # the owner's remoting address when another gateway holds the lease
        self.owner_grpc: str | None = None  # and its gRPC host:port (None: it has no gRPC port)
        self.transport = RemotingReplicaTransport(tls=outgoing(app.config)[1])  # unsigned: the client's signature stays
        self._next_key = 0
        self._idle: dict[str, list[tuple]] = {}  # owner -> keys of its connections no call uses now
        self._warning = RateLimitedWarning(log, WARN_EVERY_S)
        self._down: tuple[str, float] | None = None  # (owner, when a forward to it failed)
        self._held = False
        self._published = b""  # the in-flight state last written to HANDOVER by this owner
        self._pruned_term = -1  # the term whose publish deleted the older terms' states
        self._looked_at = float("-inf")  # when the last look that reached the store began
        self._looking = trio.Lock()  # one look at a time (the beat and a request's freshness check)
        self._adopted_from: str | None = None  # the owner whose published state was adopted last

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        if clustered(self.app):
            task_status.started()
            return  # the cluster's routes already send each queue's POP to its leader: no lease
        idle = not self.app.diskless.active.is_set()
        if idle:  # no diskless topic yet: no lease (a first forward looks at once, gateway.diskless.until_active)
            task_status.started()
            await until_active(self.app)
        with trio.move_on_after(FIRST_LOOK_S):  # before the listeners open: a first route or POP knows the owner
            while not await self._look():
                await trio.sleep(INTERVAL_S / 4)
        if not idle:
            task_status.started()
        while True:
            await trio.sleep(INTERVAL_S)
            await self._look()

    async def _look(self) -> bool:
        """Hold or follow the lease; False when the store could not be asked (the last view stays)."""
        async with self._looking:
            return await self._look_now()

    async def _look_now(self) -> bool:
        began = trio.current_time()
        try:
            held = await trio.to_thread.run_sync(self.lease.hold)
        except ObjectStoreError as exc:
            self._warning.warn("diskless POP lease not renewed (object store: %s)", exc)
            return False  # keep the last view: a store outage fails the pops' reads anyway
        self._looked_at = began
        holder = {} if held else self.lease.holder()
        owner = holder.get("remoting")
        owner = owner if isinstance(owner, str) and owner != self.address else None
        if held and not self._held:
            await self._adopt()  # before this gateway serves as the owner
        if held:
            await self._publish()
        else:
            self._published = b""
        if (owner, held) != (self.owner, self._held):
            log.info("diskless POP owner of the bucket: %s", "this gateway" if held else owner or "unknown")
        self.owner, self._held = owner, held
        grpc = holder.get("grpc")
        self.owner_grpc = grpc if self.owner is not None and isinstance(grpc, str) and ":" in grpc else None
        return True

    async def fresh(self) -> None:
        """Before serving as the owner: if this gateway's last look began FRESH_S ago or more (its
        beats stalled: load, a pause), look again, so an owner that lost the lease meanwhile (another
        gateway takes it after TTL_S without a beat) learns it before it serves from its own state."""
        if self._held and trio.current_time() - self._looked_at >= FRESH_S:
            async with self._looking:  # a look already under way (the beat's, another request's) counts
                if self._held and trio.current_time() - self._looked_at >= FRESH_S:
                    await self._look_now()

    def remote(self, req: RemotingCommand) -> str | None:
        """The owner's address if `req` is to be forwarded there (never a request forwarded here)."""
        if self.owner is None or req.remark == FORWARDED or clustered(self.app):
            return None
        if self._down is not None and self._down[0] == self.owner and trio.current_time() - self._down[1] < TTL_S:
            return None  # it failed moments ago: serve here (POP and acks alike) until it is back or replaced
        return self.owner

    async def forward(self, req: RemotingCommand, timeout_s: float) -> RemotingCommand | None:
        """The owner's answer to a copy of `req`; None when this gateway serves it itself (it owns
        the lease, or the owner could not be reached)."""
        if self._looked_at == float("-inf") and not clustered(self.app):  # a first diskless POP: who owns it
            self.app.diskless.active.set()
            await self._look()
        await self.fresh()
        owner = self.remote(req)
        if owner is None:
            return None
        copy = RemotingCommand(code=req.code, ext_fields=dict(req.ext_fields), body=req.body, remark=FORWARDED,
                               language=req.language, version=req.version, serialize_type=req.serialize_type)
        key = self._connection_key(owner)  # one connection per call in flight: a long poll holds its own
        try:
            resp = await self.transport.request(key, owner, copy, timeout_s + ANSWER_SLACK_S)
        except (OSError, trio.TooSlowError, ConnectionError) as exc:  # the transport dropped the connection
            self._down = (owner, trio.current_time())
            self._warning.warn("diskless POP owner %s unreachable (%s): serving the request here", owner, exc)
            if self._adopted_from != owner:  # its in-flight state, before serving its queues here
                self._adopted_from = owner
                await self._adopt()
            return None
        self._idle.setdefault(owner, []).append(key)
        return resp

    def _diskless(self, topic: str) -> bool:
        return is_diskless(self.app.store.topics.get(topic))

    async def _publish(self) -> None:
        """Write the in-flight state under this owner's term: a paused old owner that publishes after
        losing the lease writes under its own, older term, which no later owner reads."""
        data = pop_handover.inflight(self.app.pop, self._diskless)
        term, store = self.lease.term, self.app.diskless.index.store
        if data == self._published or term < 0:
            return
        try:
            await trio.to_thread.run_sync(store.put, term_key(term, HANDOVER), data)
            self._published = data
            if self._pruned_term != term:  # the older terms' states were adopted before serving
                await trio.to_thread.run_sync(self._prune, term)
                self._pruned_term = term
        except ObjectStoreError as exc:
            self._warning.warn("diskless POP in-flight state not published (object store: %s)", exc)

    def _terms(self) -> list[int]:
        """(worker thread) The terms with a published in-flight state, ascending."""
        n = len(HANDOVER)
        return sorted(int(i.key[n:]) for i in self.app.diskless.index.store.list(HANDOVER) if i.key[n:].isdigit())

    def _prune(self, term: int) -> None:
        for old in self._terms():
            if old < term:
                self.app.diskless.index.store.delete(term_key(old, HANDOVER))

    def _last_published(self) -> bytes:
        """(worker thread) The newest in-flight state published under a term below this gateway's
        (any term when it holds none); NotFound when there is none."""
        mine = self.lease.term
        terms = [t for t in self._terms() if mine < 0 or t < mine]
        if not terms:
            raise NotFound(HANDOVER)
        return self.app.diskless.index.store.get(term_key(terms[-1], HANDOVER))

    async def _adopt(self) -> None:
        """Take the last published in-flight state into this gateway's POP engine."""
        try:
            data = await trio.to_thread.run_sync(self._last_published)
        except NotFound:
            return
        except ObjectStoreError as exc:
            self._warning.warn("diskless POP in-flight state not read (object store: %s): "
                               "messages in flight at the old owner may come again at once", exc)
            return
        try:
            adopted = pop_handover.adopt(self.app.pop, data, self._diskless, self.app.clock.now_ms())
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("diskless POP in-flight state unreadable (%s): not adopted", exc)
            return
        log.info("diskless POP: adopted %d message(s) in flight at the previous owner", adopted)

    def _connection_key(self, owner: str) -> tuple:
        idle = self._idle.get(owner, [])
        while idle:
            key = idle.pop()
            if self.transport.connected(key):
                return key
        self._next_key += 1
        return (owner, "pop", self._next_key)
