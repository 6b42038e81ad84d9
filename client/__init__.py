"""Native Python RocketMQ client over codec/remoting: trio-based (`Async*` classes, started with
`await x.start(nursery)`) with a synchronous facade for scripts (one background trio thread):

    from client import Producer, PushConsumer, Message, ConsumeStatus

    with Producer("my-producers", "127.0.0.1:9876") as p:
        result = p.send(Message("Orders", b"...", tags="paid", keys=["order-42"]))
        p.send_async(Message("Orders", b"..."), callback=lambda fut: print(fut.result()))
        p.send(Message("Orders", b"..."), selector=lambda queues, msg, arg: queues[arg % len(queues)], arg=42)

    c = PushConsumer("my-consumers", "127.0.0.1:9876")
    c.subscribe("Orders", "paid || refunded")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)   # or orderly=True
    c.start()

Broker refusals raise `MQBrokerError` (`.code`, `.remark`); transport problems `MQClientError`.
`serialize_type=ROCKETMQ` switches the request headers to the binary form (JSON by default)."""
from client.admin import AsyncAdmin
from client.errors import MQBrokerError, MQClientError, RequestTimeout
from client.lite_pull_consumer import AsyncLitePullConsumer
from client.model import (ConsumeFrom, ConsumeStatus, Message, MessageExt, MessageModel, MessageQueue,
                          SendResult, SendStatus, TransactionState)
from client.producer import AsyncProducer, AsyncTransactionProducer
from client.push_consumer import AsyncPushConsumer
from client.rebalance import allocate_averagely
from client.simple_consumer import AsyncSimpleConsumer, SimpleConsumer
from client.sync import Admin, LitePullConsumer, Producer, PushConsumer, TransactionProducer
from codec.remoting import JSON, ROCKETMQ

__all__ = ["Admin", "AsyncAdmin", "AsyncLitePullConsumer", "AsyncProducer", "AsyncPushConsumer", "AsyncSimpleConsumer",
           "ConsumeFrom",
           "ConsumeStatus", "JSON", "LitePullConsumer", "MQBrokerError", "MQClientError", "Message", "MessageExt",
           "MessageModel", "MessageQueue", "Producer", "PushConsumer", "ROCKETMQ", "RequestTimeout", "SendResult",
           "SendStatus", "SimpleConsumer", "TransactionProducer", "TransactionState", "AsyncTransactionProducer",
           "allocate_averagely"]
