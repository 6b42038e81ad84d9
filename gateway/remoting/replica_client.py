"""The follower's transport to its leader (semantics.replication.ReplicaTransport): the private
remoting requests of gateway.remoting.replica_fetch over one connection per followed queue, one
request at a time (each queue's follower task waits for its answer before the next fetch).
Also the connection cache of gateway.cluster.delivery. Both sign their requests with the cluster's
inter-broker credential and speak TLS to TLS-only remoting ports (`outgoing`; docs/security.md,
"Between gateways")."""
from __future__ import annotations

import functools

import trio

from codec.remoting import FrameReader, RemotingCommand, encode
from gateway.remoting.replica_fetch import epoch_end_command, fetch_answer, fetch_command
from gateway.tls import client_context
from semantics.replication import FetchAnswer, FetchRequest

CONNECT_TIMEOUT_S = 3.0
ANSWER_SLACK_S = 10.0  # beyond the fetch's own long-poll time


class _Connection:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader()
        self.opaque = 0
        self.lock = trio.Lock()  # one request at a time (a re-set role's task may overlap the old one's)

    async def call(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        async with self.lock:
            return await self._call(cmd, timeout)

    async def _call(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.opaque += 1
        cmd.opaque = self.opaque
        with trio.fail_after(timeout):
            await self.stream.send_all(encode(cmd))
            while True:
                resp = self.reader.next_command()
                if resp is not None:
                    if resp.opaque == cmd.opaque and resp.is_response:
                        return resp
                    continue
                data = await self.stream.receive_some(1 << 20)
                if not data:
                    raise ConnectionError("the leader closed the connection")
                self.reader.feed(data)


def outgoing(config) -> tuple:
    """(credential, TLS context factory) of this gateway's requests to the others: the same flags on
    every gateway of a cluster (their remoting ports are all TLS-only, or none is)."""
    if config is None:
        return None, None
    tls = functools.partial(client_context, config.tls_cert, config.tls_key, config.tls_ca) \
        if config.remoting_tls else None
    return config.inter_broker, tls


class RemotingReplicaTransport:
    def __init__(self, credential=None, tls=None) -> None:
        self._connections: dict[tuple, _Connection] = {}
        self.credential = credential  # signs every request (security.inter_broker); None: unsigned
        self.tls = tls  # () -> client SSLContext when the peers' remoting ports are TLS-only; None: plaintext

    async def _open(self, host: str, port: int):
        context = self.tls() if self.tls is not None else None
        stream = await trio.open_tcp_stream(host, port)
        if context is None:
            return stream
        tls = trio.SSLStream(stream, context, server_hostname=host)
        try:
            await tls.do_handshake()
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return tls

    async def _call(self, key: tuple, leader: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        conn = self._connections.get(key)
        if conn is None:
            host, _, port = leader.rpartition(":")
            with trio.fail_after(CONNECT_TIMEOUT_S):
                stream = await self._open(host, int(port))
            conn = self._connections[key] = _Connection(stream)
        if self.credential is not None:
            self.credential.sign(cmd)
        try:
            return await conn.call(cmd, timeout)
        except BaseException:
            if self._connections.get(key) is conn:  # a failed or cancelled call leaves the stream unusable
                del self._connections[key]
            await trio.aclose_forcefully(conn.stream)
            raise

    async def request(self, key: tuple, address: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """`cmd`'s answer from `address` over the connection named `key` (opened when needed)."""
        return await self._call(key, address, cmd, timeout)

    def connected(self, key: tuple) -> bool:
        return key in self._connections

    async def fetch(self, leader: str, request: FetchRequest) -> FetchAnswer:
        resp = await self._call((leader, request.topic, request.queue_id), leader, fetch_command(request),
                                request.max_wait_ms / 1000 + ANSWER_SLACK_S)
        return fetch_answer(resp)

    async def epoch_end(self, leader: str, topic: str, queue_id: int, epoch: int, replica: str,
                        current_epoch: int) -> tuple[str, int, int]:
        cmd = epoch_end_command(topic, queue_id, epoch, replica, current_epoch)
        resp = await self._call((leader, topic, queue_id), leader, cmd, ANSWER_SLACK_S)
        f = resp.ext_fields
        return f.get("error", "UNKNOWN"), int(f.get("epoch", -1)), int(f.get("endOffset", -1))
