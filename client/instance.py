"""ClientInstance: connections, topic routes, heartbeats and server-initiated requests shared by
the producers and consumers of one client (one clientID)."""
from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import time

import trio

from codec.remoting import JSON, PermName, RemotingCommand, RequestCode as RC, ResponseCode
from codec.remoting.bodies import dumps, loads
from client.errors import MQBrokerError, MQClientError
from client.model import MessageQueue
from client.remoting import Connection, SessionCredentials

log = logging.getLogger("rocketgate.client")
_instances = itertools.count()


@dataclasses.dataclass
class TopicRoute:
    topic: str
    brokers: dict[str, str]  # brokerName -> master address
    queue_datas: list[dict]
    _publish: list | None = dataclasses.field(default=None, repr=False, compare=False)

    def publish_queues(self) -> list[MessageQueue]:
        """The writable queues (computed once per route: every send asks)."""
        if self._publish is None:
            self._publish = [MessageQueue(self.topic, qd["brokerName"], q) for qd in self.queue_datas
                             if qd.get("perm", 0) & PermName.WRITE and qd["brokerName"] in self.brokers
                             for q in range(qd.get("writeQueueNums", 0))]
        return self._publish

    def subscribe_queues(self) -> list[MessageQueue]:
        return [MessageQueue(self.topic, qd["brokerName"], q) for qd in self.queue_datas
                if qd.get("perm", 0) & PermName.READ and qd["brokerName"] in self.brokers
                for q in range(qd.get("readQueueNums", 0))]


class ClientInstance:
    def __init__(self, namesrv: str, serialize_type: int = JSON, heartbeat_interval: float = 30.0,
                 request_timeout: float = 3.0, credentials: SessionCredentials | None = None) -> None:
        self.credentials = credentials  # signs every request (RocketMQ ACL) when set
        self.namesrv_addrs = [a.strip() for a in namesrv.split(";") if a.strip()]
        self.serialize_type = serialize_type
        self.heartbeat_interval = heartbeat_interval
        self.timeout = request_timeout
        self.client_ip = "127.0.0.1"
        self.client_id = f"{self.client_ip}@{os.getpid()}#{time.monotonic_ns()}{next(_instances)}"
        self.conns: dict[str, Connection] = {}
        self._connect_locks: dict[str, trio.Lock] = {}
        self.routes: dict[str, TopicRoute] = {}
        self.brokers: dict[str, str] = {}
        self.producer_groups: set[str] = set()
        self.consumers: dict[str, object] = {}     # group -> consumer (heartbeat_data, rebalance_soon)
        self.transaction_producers: dict[str, object] = {}  # group -> producer with check_state
        self.nursery: trio.Nursery | None = None

    @classmethod
    def with_options(cls, namesrv: str, serialize_type: int = JSON, *, access_key: str | None = None,
                     secret_key: str | None = None, security_token: str | None = None) -> "ClientInstance":
        """The instance a producer/consumer/admin makes for itself: their `**credentials` options
        access_key/secret_key (and security_token) sign every request (RocketMQ ACL)."""
        return cls(namesrv, serialize_type,
                   credentials=SessionCredentials.of(access_key, secret_key, security_token))

    # ------------------------------------------------------------ lifecycle
    async def start(self, parent: trio.Nursery) -> None:
        await parent.start(self._run)

    async def _run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            task_status.started()
            nursery.start_soon(self._heartbeat_loop)
            await trio.sleep_forever()

    async def shutdown(self) -> None:
        for group in self.producer_groups:
            await self._unregister(producer_group=group)
        for group in list(self.consumers):
            await self._unregister(consumer_group=group)
        for conn in list(self.conns.values()):
            await conn.close()
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    async def _unregister(self, producer_group=None, consumer_group=None) -> None:
        for addr in set(self.brokers.values()):
            try:
                await self.invoke(addr, RC.UNREGISTER_CLIENT, {"clientID": self.client_id,
                                  "producerGroup": producer_group, "consumerGroup": consumer_group})
            except MQClientError:
                pass

    # ------------------------------------------------------------ transport
    async def connection(self, addr: str) -> Connection:
        conn = self.conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        lock = self._connect_locks.setdefault(addr, trio.Lock())
        async with lock:
            conn = self.conns.get(addr)
            if conn is None or conn.closed:
                conn = await Connection.open(addr, self.nursery, self.serialize_type, self._on_request,
                                             self.credentials)
                self.conns[addr] = conn
        return conn

    async def invoke(self, addr: str, code: int, fields: dict | None = None, body: bytes = b"",
                     timeout: float | None = None, ok: tuple[int, ...] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        """Request/response; raises MQBrokerError when the answer's code is not in `ok`."""
        conn = await self.connection(addr)
        cmd = RemotingCommand(code=code, ext_fields={k: v for k, v in (fields or {}).items() if v is not None},
                              body=body)
        resp = await conn.request(cmd, timeout or self.timeout)
        if resp.code not in ok:
            raise MQBrokerError(resp.code, resp.remark, code)
        return resp

    async def oneway(self, addr: str, code: int, fields: dict | None = None, body: bytes = b"") -> None:
        conn = await self.connection(addr)
        await conn.oneway(RemotingCommand(code=code, ext_fields={k: v for k, v in (fields or {}).items()
                                                                 if v is not None}, body=body))

    async def invoke_namesrv(self, code: int, fields: dict | None = None, body: bytes = b"",
                             ok: tuple[int, ...] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        last: Exception | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self.invoke(addr, code, fields, body, ok=ok)
            except MQBrokerError:
                raise
            except MQClientError as exc:
                last = exc
        raise last or MQClientError("no name server address")

    # ------------------------------------------------------------ routes
    async def route(self, topic: str, refresh: bool = False) -> TopicRoute:
        route = self.routes.get(topic)
        if route is not None and not refresh:
            return route
        resp = await self.invoke_namesrv(RC.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if not resp.body:
            raise MQClientError(f"empty route for topic {topic}")
        data = loads(resp.body)
        brokers = {bd["brokerName"]: bd["brokerAddrs"].get("0") or bd["brokerAddrs"].get(0)
                   for bd in data.get("brokerDatas") or [] if bd.get("brokerAddrs")}
        brokers = {k: v for k, v in brokers.items() if v}
        route = TopicRoute(topic, brokers, data.get("queueDatas") or [])
        self.routes[topic] = route
        self.brokers.update(brokers)
        return route

    async def broker_addr(self, broker_name: str, topic: str | None = None) -> str:
        addr = self.brokers.get(broker_name)
        if addr is None and topic is not None:
            await self.route(topic, refresh=True)
            addr = self.brokers.get(broker_name)
        if addr is None:
            raise MQClientError(f"broker {broker_name} not found")
        return addr

    async def queue_broker(self, mq: MessageQueue) -> str:
        """The address of the broker holding `mq`."""
        return await self.broker_addr(mq.broker_name, mq.topic)

    # ------------------------------------------------------------ heartbeat
    def heartbeat_data(self) -> dict:
        return {"clientID": self.client_id,
                "consumerDataSet": [c.heartbeat_data() for c in self.consumers.values()],
                "producerDataSet": [{"groupName": g} for g in sorted(self.producer_groups)]}

    async def send_heartbeat(self) -> None:
        body = dumps(self.heartbeat_data())
        for addr in set(self.brokers.values()):
            try:
                await self.invoke(addr, RC.HEART_BEAT, body=body)
            except MQClientError as exc:
                log.warning("heartbeat to %s failed: %s", addr, exc)

    async def _heartbeat_loop(self) -> None:
        while True:
            await trio.sleep(self.heartbeat_interval)
            for topic in list(self.routes):
                try:
                    await self.route(topic, refresh=True)
                except MQClientError:
                    pass
            await self.send_heartbeat()

    # ------------------------------------------------------------ server-initiated requests
    def _on_request(self, conn: Connection, cmd: RemotingCommand) -> None:
        if cmd.code == RC.NOTIFY_CONSUMER_IDS_CHANGED:
            consumer = self.consumers.get(cmd.get_str("consumerGroup") or "")
            if consumer is not None:
                consumer.rebalance_soon()
        elif cmd.code == RC.CHECK_TRANSACTION_STATE:
            self.nursery.start_soon(self._check_transaction, conn, cmd)
        elif cmd.code == RC.GET_CONSUMER_RUNNING_INFO and not cmd.is_oneway:
            consumer = self.consumers.get(cmd.get_str("consumerGroup") or "")
            resp = (cmd.response(body=consumer.running_info()) if consumer is not None else
                    cmd.response(ResponseCode.SYSTEM_ERROR, remark="the consumer's running info is not exist"))
            self.nursery.start_soon(conn.reply, resp)
        elif cmd.code in (RC.RESET_CONSUMER_CLIENT_OFFSET, RC.GET_CONSUMER_STATUS_FROM_CLIENT):
            consumer = self.consumers.get(cmd.get_str("group") or "")
            if consumer is not None:  # client/consumer.py applies resets and reports its offsets
                self.nursery.start_soon(consumer.on_offset_request, conn, cmd)
        elif not cmd.is_oneway:
            self.nursery.start_soon(conn.reply, cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                             remark=f"request {cmd.code} not supported"))

    async def _check_transaction(self, conn: Connection, cmd: RemotingCommand) -> None:
        from client.model import decode_messages
        try:
            msg = decode_messages(cmd.body)[0]
        except Exception:
            return
        producer = self.transaction_producers.get(msg.properties.get("PGROUP", ""))
        if producer is not None:
            await producer.check_state(conn.addr, cmd, msg)
