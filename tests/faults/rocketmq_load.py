"""The RocketMQ workload: the repo's native client (client/, RemotingCommand) sends unique ints
synchronously to a topic replicated 3 ways (one queue per value mod 3, no client retries, so a
duplicate would be the server's; a send to a stale route's queue is refused and counted as fail). A send is ok only on SEND_OK (the in-sync replicas have it, the
SYNC_MASTER contract); FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE and timeouts are info (maybe written),
a broker refusal is fail. The final read goes through the Kafka protocol (one store), checked by
checker.check like the queue workload."""
from __future__ import annotations

import threading
import time

from client import Message, Producer, SendStatus
from client.errors import MQBrokerError, MQClientError

RMQ_TOPIC, RMQ_QUEUES = "faults-rmq", 3


class RocketMQWorkload:
    label = "RocketMQ sync producer (native client, remoting), SEND_OK = acknowledged, final read"

    def __init__(self, namesrv: str, now, topic: str = RMQ_TOPIC, label: str | None = None) -> None:
        self.namesrv, self.now, self.topic = namesrv, now, topic
        self.label = label or self.label
        self.history: list[dict] = []
        self.fatal: str | None = None
        self.producer = Producer(f"{topic}-producers", namesrv, send_timeout=5.0, retry_times=0)
        # routes re-read every 1 s (the Java client's pollNameServerInterval set to 1000), not 30 s: a
        # leader that moved is found within a second instead of refusing sends for half a minute
        self.producer._impl.instance.heartbeat_interval = 1.0

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _run(self, stop: threading.Event) -> None:
        self.producer.start()
        value = 0
        while not stop.is_set():
            self.history.append({"type": "invoke", "f": "send", "value": value, "time": self.now()})
            try:
                result = self.producer.send(Message(self.topic, str(value).encode()),
                                            selector=lambda queues, msg, arg: queues[arg % len(queues)], arg=value)
                # partition: the broker-local queue id (gateway.cluster.remoting_queues), so the broker
                # and the stored message id (its store host and CommitLog offset) say which gateway answered
                op = {"type": "ok" if result.status == SendStatus.SEND_OK else "info", "status": result.status.name,
                      "partition": result.queue.queue_id, "broker": result.queue.broker_name,
                      "msg_id": result.offset_msg_id, "offset": result.queue_offset}
            except MQBrokerError as e:
                op = {"type": "fail", "error": f"{e.code} {e.remark}"}
            except MQClientError as e:
                op = {"type": "info", "error": repr(e)}
            except Exception as e:  # the harness keeps going; the history says what happened
                op = {"type": "info", "error": repr(e)}
                time.sleep(0.5)
            self.history.append({**op, "f": "send", "value": value, "time": self.now()})
            value += 1
            time.sleep(0.01)

    def finish(self) -> None:
        self.producer.shutdown()
