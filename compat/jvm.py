"""Run the Maven-resolved Java clients and tools (compat/java) as subprocesses.

`make compat-jars` (mk/compat.mk) compiles the scenario programs and writes each module's runtime
classpath to compat/java/<module>/target/classpath.txt; this module only reads those files.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAVA_DIR = os.path.join(ROOT, "compat", "java")

KAFKA_CLIENTS = {"3.9": "kafka39", "4": "kafka4"}
ROCKETMQ_CLIENTS = {"4.9": "rocketmq49", "5": "rocketmq5"}

# Kafka 4.x moved every command-line tool we use into kafka-tools (org.apache.kafka.tools).
KAFKA_TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
}
MQADMIN = "org.apache.rocketmq.tools.command.MQAdminStartup"

# Short-lived client JVMs: small heap, quick start, little CPU taken from the gateway under test.
JVM_FLAGS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err"]


class CompatError(RuntimeError):
    """A Java program could not be run or did not finish; carries its output tail."""


ROCKETMQ55_JARS = os.path.join(ROOT, "bench", "jars", "rocketmq", "*")


def classpath(module: str) -> str:
    """The module's compiled classes (if any) followed by its Maven-resolved runtime classpath.
    "rocketmqtools55": compat.AdminBatch over mqadmin 5.5 (bench/jars/rocketmq: its lite commands)."""
    if module == "rocketmqtools55":
        return f"{os.path.join(JAVA_DIR, 'rocketmqtools', 'target', 'classes')}:{ROCKETMQ55_JARS}"
    path = os.path.join(JAVA_DIR, module, "target", "classpath.txt")
    if not os.path.exists(path):
        raise CompatError(f"{path} is missing: run `make compat-jars`")
    with open(path) as f:
        cp = f.read().strip()
    classes = os.path.join(JAVA_DIR, module, "target", "classes")
    return f"{classes}:{cp}" if os.path.isdir(os.path.join(classes, "compat")) else cp


def java_command(module: str, main: str, args: list[str], log_dir: str) -> list[str]:
    """RocketMQ clients log to files under user.home/logs; keep those in the test's directory."""
    props = [f"-Duser.home={log_dir}", f"-Drocketmq.client.logRoot={log_dir}", "-Drocketmq.client.logLevel=WARN"]
    return [shutil.which("java") or "java", *JVM_FLAGS, *props, "-cp", classpath(module), main, *args]


def run_tool(module: str, main: str, args: list[str], log_dir: str, input: str | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs one command-line tool to completion; stdout and stderr are returned as text. It runs in
    `log_dir`, because some tools (mqadmin consumerStatus) write dump folders into their cwd."""
    os.makedirs(log_dir, exist_ok=True)
    return subprocess.run(java_command(module, main, args, log_dir), input=input, capture_output=True,
                          text=True, timeout=timeout, cwd=log_dir,
                          stdin=None if input is not None else subprocess.DEVNULL)


def run_admin_batch(phases: list[list[list[str]]], log_dir: str, timeout: float = 120,
                    tools: str = "rocketmqtools") -> list[dict]:
    """mqadmin commands (each its argument list) in one JVM (compat.AdminBatch): the commands of a
    phase at the same time, phases one after the other. Each mqadmin JVM spends seconds in its
    client's shutdown; this pays that once a phase. One {"ok", "output"} per command, in order.
    `tools="rocketmqtools55"`: mqadmin of RocketMQ 5.5 (its lite topic commands)."""
    lines = "\n\n".join("\n".join("\t".join(argv) for argv in phase) for phase in phases if phase)
    r = run_tool(tools, "compat.AdminBatch", [], log_dir, input=lines + "\n", timeout=timeout)
    found = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            doc = json.loads(line)
            found[doc["index"]] = doc
    count = sum(len(phase) for phase in phases)
    if r.returncode != 0 or len(found) != count:
        raise CompatError(f"compat.AdminBatch ran {len(found)} of {count} commands (exit {r.returncode}):\n"
                          f"{r.stderr[-3000:]}")
    return [found[i] for i in range(count)]


class ScenarioRun:
    """One JVM running several scenarios of KafkaCompat/RocketCompat; results keyed by scenario name.

    `on_pause` runs when the program reaches a `pause` scenario (e.g. to restart the gateway); the
    program goes on when it returns.
    """

    def __init__(self, module: str, main: str, args: list[str], log_dir: str, on_pause=None, timeout: float = 840):
        os.makedirs(log_dir, exist_ok=True)
        self.stderr_path = os.path.join(log_dir, f"{module}-{main.rsplit('.', 1)[-1]}.stderr")
        self.results: dict[str, dict] = {}
        self.finished = False
        with open(self.stderr_path, "wb") as err:
            proc = subprocess.Popen(java_command(module, main, args, log_dir), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, text=True, cwd=log_dir)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                result = json.loads(line)
                name = result["scenario"]
                if name == "pause":
                    if on_pause is not None:
                        on_pause()
                    proc.stdin.write("\n")
                    proc.stdin.flush()
                elif name == "end":
                    self.finished = True
                else:
                    self.results[name] = result
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def stderr_tail(self, chars: int = 3000) -> str:
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")[-chars:]

    def __getitem__(self, scenario: str) -> dict:
        """The scenario's observations; a failed or missing scenario raises with its stack trace."""
        r = self.results.get(scenario)
        if r is None:
            raise AssertionError(f"scenario {scenario} produced no result (finished={self.finished}); "
                                 f"stderr tail:\n{self.stderr_tail()}")
        if not r.get("ok"):
            trace = "\n".join(r.get("error", []))
            raise AssertionError(f"scenario {scenario} failed in the Java client:\n{trace}")
        return r
