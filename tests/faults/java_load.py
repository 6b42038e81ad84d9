"""The Java workloads (compat/java/src/kafkafaults): kafka-clients 4.3.1 (bench/jars/kafka) as an
idempotent acks=all producer and as consumers in a classic and a KIP-848 group, and rocketmq-client
(remoting, compat/java/rocketmq5) as a SYNC_MASTER producer and as a push consumer. Each runs as its own JVM writing the
harness's history (invoke, then ok / fail / info) as JSON lines; closing its stdin ends it. Compiled
with javac into the run dir at the start of a run, as bench/txn_check.py compiles its workload."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = os.path.join(CHECKOUT, "compat", "java", "src", "kafkafaults", "compat")
KAFKA_JARS = os.path.join(CHECKOUT, "bench", "jars", "kafka", "*")
ROCKETMQ_CLASSPATH = os.path.join(CHECKOUT, "compat", "java", "rocketmq5", "target", "classpath.txt")
JAVA_TOPIC, JAVA_RMQ_TOPIC, JAVA_PARTITIONS = "faults-java", "faults-java-rmq", 3
JAVA_RMQ_GROUP = "faults-java-rmq-consumers"
GROUPS = {"classic": "faults-java-classic", "consumer": "faults-java-848"}


def rocketmq_classpath() -> str:
    with open(ROCKETMQ_CLASSPATH) as f:
        return f.read().strip()


def compile_java(run_dir: str) -> str:
    """The classes dir (once per run)."""
    classes = os.path.join(run_dir, "java-classes")
    if not os.path.exists(os.path.join(classes, "compat", "FaultsKafka.class")):
        sources = [os.path.join(SOURCES, n) for n in sorted(os.listdir(SOURCES)) if n.endswith(".java")]
        subprocess.run([shutil.which("javac"), "-nowarn", "-d", classes, "-cp",
                        os.pathsep.join([KAFKA_JARS, rocketmq_classpath()]), *sources],
                       check=True, capture_output=True, timeout=300)
    return classes


class ProcessWorkload:
    """One client process running a workload (a JVM, or a Go program: go_load.py) that writes the
    history as JSON lines and ends when its stdin closes; `history` is filled from its log by finish()."""

    def __init__(self, label: str, name: str, command: list[str], run_dir: str, t0: float, now,
                 more: tuple[str, ...] = ()) -> None:
        """The process: `command`, t0, the log's path, `more`."""
        self.label, self.now = label, now
        self.log_path = os.path.join(run_dir, f"{name}.jsonl")
        self.cmd = [*command, f"{t0:.6f}", self.log_path, *more]
        self.stderr_path = os.path.join(run_dir, f"{name}.log")
        self.history: list[dict] = []
        self.fatal: str | None = None
        self.proc: subprocess.Popen | None = None
        self.finish_timeout = 120.0  # its time to end once told to

    def start(self, stop: threading.Event) -> threading.Thread:
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=err, stderr=err)  # the client's warnings
        thread = threading.Thread(target=self._until, args=(stop,), daemon=True)
        thread.start()
        return thread

    def _until(self, stop: threading.Event) -> None:
        stop.wait()
        self.proc.stdin.close()

    def finish(self, timeout: float | None = None) -> None:
        """Wait for the process (it closes its clients, answering what is outstanding), read its history;
        a send that never completed is info ("no answer")."""
        timeout = self.finish_timeout if timeout is None else timeout
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.fatal = f"the process did not end in {timeout:.0f} s (killed)"
        if self.proc.returncode not in (0, None) and not self.fatal:
            self.fatal = f"the process exited {self.proc.returncode} (see {self.stderr_path})"
        with open(self.log_path) as f:
            self.history = [json.loads(line) for line in f if line.strip().endswith("}")]
        done = {op["value"] for op in self.history if op["type"] != "invoke"}
        for op in [op for op in self.history if op["type"] == "invoke" and op["value"] not in done]:
            self.history.append({**op, "type": "info", "time": self.now(), "error": "no answer"})


class JavaWorkload(ProcessWorkload):
    """One JVM running a workload."""

    def __init__(self, label: str, name: str, classpath: str, main: str, args: list[str], run_dir: str, t0: float,
                 now, more: tuple[str, ...] = (), log_level: str = "WARN") -> None:
        """The JVM's arguments: `args`, t0, the log's path, `more`; the client's log at `log_level`."""
        super().__init__(label, name, [shutil.which("java"), "-Xmx256m", "-XX:+UseSerialGC",
                                       f"-Dorg.apache.logging.log4j.level={log_level}", "-cp", classpath, main, *args],
                         run_dir, t0, now, more)


def java_queue(bootstrap: str, run_dir: str, t0: float, now) -> JavaWorkload:
    w = JavaWorkload("idempotent acks=all producer (Java kafka-clients 4.3.1), 3 partitions RF 3, final read",
                     "java-queue", os.pathsep.join([compile_java(run_dir), KAFKA_JARS]), "compat.FaultsKafka",
                     ["producer", bootstrap, JAVA_TOPIC, str(JAVA_PARTITIONS)], run_dir, t0, now)
    w.bootstrap, w.topic, w.partitions = bootstrap, JAVA_TOPIC, JAVA_PARTITIONS  # what check_queue reads back
    return w


def java_group(bootstrap: str, run_dir: str, t0: float, now, protocol: str) -> JavaWorkload:
    kind = "classic" if protocol == "classic" else "KIP-848"
    w = JavaWorkload(f"consumer group (Java kafka-clients 4.3.1, {kind}), synchronous offset commits",
                     f"java-group-{protocol}", os.pathsep.join([compile_java(run_dir), KAFKA_JARS]),
                     "compat.FaultsKafka", ["group", bootstrap, JAVA_TOPIC, str(JAVA_PARTITIONS)],
                     run_dir, t0, now, (protocol, GROUPS[protocol]), log_level="INFO")  # positions set and reset
    w.group = GROUPS[protocol]
    return w


def java_rocketmq(namesrv: str, run_dir: str, t0: float, now) -> JavaWorkload:
    w = JavaWorkload("RocketMQ sync producer (Java rocketmq-client 5.3.3, remoting), SEND_OK = acknowledged, final read",
                     "java-rocketmq", os.pathsep.join([compile_java(run_dir), rocketmq_classpath()]),
                     "compat.FaultsRocket", [namesrv, JAVA_RMQ_TOPIC], run_dir, t0, now)
    return w


def java_rocketmq_consumer(namesrv: str, run_dir: str, t0: float, now) -> JavaWorkload:
    """Reads what java_rocketmq writes; checked with checker.check_deliveries against the final read."""
    w = JavaWorkload("RocketMQ push consumer (Java rocketmq-client 5.3.3, remoting, orderly), every stored message "
                     "handed out", "java-rmq-consumer", os.pathsep.join([compile_java(run_dir), rocketmq_classpath()]),
                     "compat.FaultsRocketConsumer", [namesrv, JAVA_RMQ_TOPIC, JAVA_RMQ_GROUP], run_dir, t0, now)
    w.finish_timeout = 200.0  # it drains for up to 120 s after the stop
    return w


def wait_for_start(workloads: list[ProcessWorkload], timeout: float = 60) -> None:
    """Until each client process has logged its first operation (a JVM takes seconds to start on a busy machine)."""
    deadline = time.monotonic() + timeout
    for w in workloads:
        while time.monotonic() < deadline and not (os.path.exists(w.log_path) and os.path.getsize(w.log_path)):
            time.sleep(0.2)
