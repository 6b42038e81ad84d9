"""The Go RocketMQ workload (tests/faults/rmqgo: apache/rocketmq-client-go v2 from the Go module proxy,
remoting): a SYNC_MASTER producer of unique ints to `faults-go-rmq` (value mod 3 = queue, no client
retries; ok only on SEND_OK), run as its own process writing the harness's history as the Java
workloads do (java_load.ProcessWorkload). Built by `make faults-rmqgo` into ~/.cache/rocketgate/rmqgo/
(gobuild.py), never committed. Final read over Kafka, checked as the queue."""
from __future__ import annotations

from gobuild import go_binary
from java_load import ProcessWorkload

GO_RMQ_TOPIC, GO_RMQ_QUEUES = "faults-go-rmq", 3


def rmqgo_binary() -> str:
    """Built (the first time: minutes, the module proxy) before the run's clock starts."""
    return go_binary("rmqgo", "RMQGO_CACHE")


def go_rocketmq(namesrv: str, run_dir: str, t0: float, now) -> ProcessWorkload:
    return ProcessWorkload("RocketMQ sync producer (Go rocketmq-client-go v2, remoting), SEND_OK = acknowledged, "
                           "final read", "go-rocketmq", [rmqgo_binary(), namesrv, GO_RMQ_TOPIC], run_dir, t0, now)
