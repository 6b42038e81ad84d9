"""Start, health-check and stop the systems under comparison as subprocesses on loopback.

    with KafkaBroker(tmpdir) as k:        k.bootstrap           # Apache Kafka, KRaft single node
    with RocketMQBroker(tmpdir) as r:     r.namesrv             # Apache RocketMQ namesrv + broker
    RocketMQCluster(tmpdir, proxy=True)   .namesrv, .broker_ports, .grpc_endpoint  # namesrv + 2 brokers (+ proxy)
    with Gateway(tmpdir, flush="async") as g: g.bootstrap, g.namesrv

Each keeps its data and logs under the given directory, listens on free loopback ports, and reports a
failed start as `BrokerError` with the tail of its log (never hidden). The JVM brokers run from the jars
that `make bench-jars` (mk/bench.mk) resolves into bench/jars/ with Maven.
"""
from __future__ import annotations

import atexit
import base64
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

from bench.procstat import thread_cpu_ns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JARS = os.path.join(ROOT, "bench", "jars")
# The brokers share 2 cores and 24 GiB with the load generators: 2 GiB heap each.
JVM_HEAP = os.environ.get("BENCH_JVM_HEAP", "2g")


class BrokerError(RuntimeError):
    """A system did not start or did not become healthy; the message carries its log tail."""


def free_port(span: int = 1) -> int:
    """A loopback port p such that p..p+span-1 all look free (RocketMQ's broker also binds p-2, p+1)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + span >= 65535:
            continue
        if all(_port_free(base + i) for i in range(1, span)):
            return base
    raise BrokerError("no free port range")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def java_classpath(system: str) -> str:
    """Classpath of one system's jars (bench/jars/<system>/*); resolves them with Maven if missing."""
    folder = os.path.join(JARS, system)
    if not glob.glob(os.path.join(folder, "*.jar")):
        subprocess.run(["make", "-s", "bench-jars"], cwd=ROOT, check=True)
    return os.path.join(folder, "*")


def private_memory(pid: int) -> int:
    """Private anonymous resident bytes of a process (heap, stacks, malloc; not file-backed pages
    such as mmapped store files, which are page cache). 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


_LIVE: set["_Process"] = set()


@atexit.register
def _kill_leftovers() -> None:
    """A harness that exits without stopping its systems must not leave 2 GiB JVMs behind."""
    for p in list(_LIVE):
        p.kill9()


class _Process:
    """One subprocess with a log file under the work dir (in its own session, so that a Ctrl-C
    reaches the harness, which stops it, rather than the broker directly)."""

    def __init__(self, name: str, cmd: list[str], log_path: str, env: dict | None = None, cwd: str = ROOT):
        self.name, self.cmd, self.log_path, self.env, self.cwd = name, cmd, log_path, env, cwd
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%H:%M:%S')} start: {' '.join(self.cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode(errors="replace")
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        _LIVE.discard(self)

    def kill9(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        _LIVE.discard(self)


class System:
    """Base of the three systems: processes, health check, restart on the same ports and data, and a
    memory sampler (peak private memory since start, summed over the system's processes)."""

    name = "system"
    start_timeout = 90.0

    def __init__(self, workdir: str):
        self.workdir = os.path.abspath(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.processes: list[_Process] = []
        self._prepared = False
        self.peak_memory = 0
        self._sampler: threading.Thread | None = None
        self._sampling = False

    # -- subclasses -------------------------------------------------------------------------
    def _prepare(self) -> None:
        """One-time set-up of config and data dirs (called by the first start only)."""

    def _launch(self) -> None:
        """Start the processes and wait until each is healthy (raise BrokerError otherwise)."""
        raise NotImplementedError

    # -- common -----------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], env: dict | None = None, cwd: str = ROOT) -> _Process:
        p = _Process(name, cmd, os.path.join(self.workdir, f"{name}.log"), env=env, cwd=cwd)
        p.start()
        self.processes.append(p)
        return p

    def _wait(self, proc: _Process, ready, what: str, timeout: float | None = None) -> None:
        """Poll `ready()` until true; fail with the log tail if the process dies or time runs out."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        while time.monotonic() < deadline:
            if not proc.alive():
                raise BrokerError(f"{self.name}: {proc.name} exited during start ({what})\n{proc.log_tail()}")
            try:
                if ready():
                    return
            except Exception:  # noqa: BLE001 - not ready yet, whatever the client says
                pass
            time.sleep(0.1)
        raise BrokerError(f"{self.name}: {proc.name} not ready after {timeout or self.start_timeout:.0f}s "
                          f"({what})\n{proc.log_tail()}")

    def start(self) -> "System":
        if not self._prepared:
            self._prepare()
            self._prepared = True
        self.processes = []
        try:
            self._launch()
        except BaseException:
            self.stop()
            raise
        self._start_sampler()
        return self

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes if p.pid is not None]

    def memory(self) -> int:
        """Current private memory, summed over the system's processes."""
        return sum(private_memory(pid) for pid in self.pids())

    def cpu_sample(self) -> dict[int, int]:
        """CPU ns per thread over all the system's processes (tids are unique across processes);
        `procstat.cpu_used(a, b)` turns two samples into the seconds used in between."""
        sample = {}
        for pid in self.pids():
            sample.update(thread_cpu_ns(pid))
        return sample

    def _start_sampler(self) -> None:
        self._sampling = True

        def run() -> None:
            while self._sampling:
                self.peak_memory = max(self.peak_memory, self.memory())
                time.sleep(0.25)

        self._sampler = threading.Thread(target=run, daemon=True, name=f"mem-{self.name}")
        self._sampler.start()

    def _stop_sampler(self) -> None:
        self._sampling = False
        if self._sampler is not None:
            self._sampler.join()
            self._sampler = None

    def stop(self) -> None:
        self._stop_sampler()
        for p in reversed(self.processes):
            p.stop()
        self.processes = []

    def kill9(self) -> None:
        """Kill every process of the system with SIGKILL (crash test)."""
        self._stop_sampler()
        for p in reversed(self.processes):
            p.kill9()
        self.processes = []

    def restart(self) -> "System":
        self.stop()
        return self.start()

    def renew(self, seed=None) -> "System":
        """Restart on the same ports with an empty store: the full plan writes tens of GB, more than
        the shared disk can hold, so the runner renews a system whose data has grown too large.
        `seed()` runs on the empty data dir before the start (e.g. writes a credential store)."""
        self.kill9()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self._prepared = False
        if seed is not None:
            seed()
        return self.start()

    def data_bytes(self) -> int:
        total = 0
        for folder, _dirs, files in os.walk(self.data_dir):
            for f in files:
                try:
                    total += os.stat(os.path.join(folder, f)).st_blocks * 512  # sparse files count as used
                except OSError:
                    pass  # deleted meanwhile
        return total

    def log_tail(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log_tail()}" for p in self.processes)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _java(heap: str) -> list[str]:
    return [shutil.which("java") or "java", f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]


def _kafka_metadata_ready(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
    return bool(md.brokers)


class KafkaBroker(System):
    """Apache Kafka 4.x, one KRaft node with broker+controller roles. Durability is Kafka's default:
    acknowledged writes live in the page cache (no fsync per message: log.flush.interval.messages is
    unbounded); `flush="sync"` sets log.flush.interval.messages=1 (fsync before ack)."""

    name = "kafka"

    def __init__(self, workdir: str, flush: str = "async", heap: str = JVM_HEAP, extra: dict | None = None,
                 format_args: list[str] | None = None, classpath: str | None = None):
        super().__init__(workdir)
        self.flush, self.heap, self.extra = flush, heap, extra or {}
        self.format_args = format_args or []  # e.g. --add-scram (SCRAM users exist from the start)
        self.classpath = classpath  # extra classes (a metrics reporter plugin), ahead of Kafka's jars
        self.port = free_port()
        self.controller_port = free_port()
        self.config_path = os.path.join(self.workdir, "server.properties")
        self.data_dir = os.path.join(self.workdir, "kafka-logs")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _prepare(self) -> None:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.data_dir,
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "3",
            "num.io.threads": "8",
            "log.segment.bytes": str(1 << 30),
            "message.max.bytes": str(8 << 20),
        }
        if self.flush == "sync":
            props["log.flush.interval.messages"] = "1"
        props.update(self.extra)
        with open(self.config_path, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in props.items())
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        cmd = [*_java("256m"), "-cp", java_classpath("kafka"), "kafka.tools.StorageTool", "format",
               f"--cluster-id={cluster_id}", "-c", self.config_path, *self.format_args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise BrokerError(f"kafka storage format failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-3000:]}")

    def _launch(self) -> None:
        cp = java_classpath("kafka") if self.classpath is None else f"{self.classpath}:{java_classpath('kafka')}"
        cmd = [*_java(self.heap), f"-Dkafka.logs.dir={self.workdir}", "-cp", cp, "kafka.Kafka", self.config_path]
        p = self._spawn("kafka", cmd)
        self._wait(p, lambda: _port_open(self.port) and _kafka_metadata_ready(self.bootstrap), "metadata")


def _rocketmq_broker_conf(name: str, port: int, namesrv: str, store: str, flush: str = "async") -> dict:
    """A master broker's broker.conf entries (cluster DefaultCluster) listening on `port`."""
    return {
        "brokerClusterName": "DefaultCluster",
        "brokerName": name,
        "brokerId": "0",
        "brokerRole": "ASYNC_MASTER",
        "listenPort": str(port),
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv,
        "storePathRootDir": store,
        "storePathCommitLog": os.path.join(store, "commitlog"),
        "flushDiskType": "SYNC_FLUSH" if flush == "sync" else "ASYNC_FLUSH",
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "defaultTopicQueueNums": "8",
        "fileReservedTime": "48",
        "diskMaxUsedSpaceRatio": "95",
        "maxMessageSize": str(8 << 20),
    }


class RocketMQBroker(System):
    """Apache RocketMQ 5.x: a name server and one master broker (remoting protocol), store under the
    work dir, ASYNC_FLUSH by default or SYNC_FLUSH with `flush="sync"`."""

    name = "rocketmq"

    def __init__(self, workdir: str, flush: str = "async", heap: str = JVM_HEAP, extra: dict | None = None):
        super().__init__(workdir)
        self.flush, self.heap, self.extra = flush, heap, extra or {}
        self.namesrv_port = free_port()
        # the broker binds listenPort, listenPort-2 (fast/VIP channel) and listenPort+1 (HA)
        self.broker_port = free_port(span=4) + 2
        self.data_dir = os.path.join(self.workdir, "store")

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def _prepare(self) -> None:
        conf = {**_rocketmq_broker_conf("broker-a", self.broker_port, self.namesrv, self.data_dir, self.flush),
                **self.extra}
        with open(os.path.join(self.workdir, "broker.conf"), "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in conf.items())
        with open(os.path.join(self.workdir, "namesrv.conf"), "w") as f:
            f.write(f"listenPort={self.namesrv_port}\n")

    def _env(self) -> dict:
        return {**os.environ, "ROCKETMQ_HOME": self.workdir}

    def _launch(self) -> None:
        # user.home: RocketMQ's logback writes ~/logs/rocketmqlogs; keep those under the work dir.
        common = [f"-Duser.home={self.workdir}", f"-Drocketmq.home.dir={self.workdir}",
                  "-cp", java_classpath("rocketmq")]
        ns = self._spawn("namesrv", [*_java("512m"), *common, "org.apache.rocketmq.namesrv.NamesrvStartup",
                                     "-c", os.path.join(self.workdir, "namesrv.conf")], env=self._env())
        self._wait(ns, lambda: _port_open(self.namesrv_port), "namesrv port")
        br = self._spawn("broker", [*_java(self.heap), *common, "org.apache.rocketmq.broker.BrokerStartup",
                                    "-c", os.path.join(self.workdir, "broker.conf")], env=self._env())
        self._wait(br, lambda: _port_open(self.broker_port), "broker port")
        self._wait(br, self._registered, "broker registered with namesrv")

    def _registered(self) -> bool:
        """The broker is in the name server's cluster table (so clients can route to it)."""
        from bench import remoting_probe

        return remoting_probe.cluster_has_broker(self.namesrv, "broker-a")


class RocketMQCluster(System):
    """Apache RocketMQ 5.x as a cluster on this machine: one name server and one master broker per
    name in `brokers` (same brokerClusterName, each with its own store and ports), and with
    `proxy=True` the 5.x proxy in cluster mode (gRPC, routing through the name server) in front of
    them: the reference the multi-gateway tests are checked against (tests/cluster/reference_sides.py)."""

    name = "rocketmq-cluster"

    def __init__(self, workdir: str, brokers=("broker-1", "broker-2"), heap: str = "512m", proxy: bool = False,
                 extra: dict | None = None):
        super().__init__(workdir)
        self.heap, self.with_proxy, self.extra = heap, proxy, extra or {}  # extra: more broker.conf entries
        self.namesrv_port = free_port()
        self.broker_ports = {name: free_port(span=4) + 2 for name in brokers}  # see RocketMQBroker
        self.grpc_port, self.proxy_remoting_port = free_port(), free_port()
        self.data_dir = os.path.join(self.workdir, "stores")

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def _conf(self, name: str) -> str:
        return os.path.join(self.workdir, f"{name}.conf")

    def _prepare(self) -> None:
        for name, port in self.broker_ports.items():
            conf = {**_rocketmq_broker_conf(name, port, self.namesrv, os.path.join(self.data_dir, name)), **self.extra}
            with open(self._conf(name), "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in conf.items())
        with open(self._conf("namesrv"), "w") as f:
            f.write(f"listenPort={self.namesrv_port}\n")
        with open(os.path.join(self.workdir, "proxy.json"), "w") as f:
            f.write(json.dumps({"rocketMQClusterName": "DefaultCluster", "namesrvAddr": self.namesrv,
                                "grpcServerPort": self.grpc_port, "remotingListenPort": self.proxy_remoting_port,
                                "proxyMode": "cluster"}))

    def _launch(self) -> None:
        from bench import remoting_probe

        env = {**os.environ, "ROCKETMQ_HOME": self.workdir}
        common = [f"-Duser.home={self.workdir}", f"-Drocketmq.home.dir={self.workdir}"]
        rocketmq = [*common, "-cp", java_classpath("rocketmq")]
        ns = self._spawn("namesrv", [*_java("256m"), *rocketmq, "org.apache.rocketmq.namesrv.NamesrvStartup",
                                     "-c", self._conf("namesrv")], env=env)
        self._wait(ns, lambda: _port_open(self.namesrv_port), "namesrv port")
        started = [(name, self._spawn(name, [*_java(self.heap), *rocketmq, "org.apache.rocketmq.broker.BrokerStartup",
                                             "-c", self._conf(name)], env=env)) for name in self.broker_ports]
        for name, br in started:
            self._wait(br, lambda: _port_open(self.broker_ports[name]), "broker port")
            self._wait(br, lambda: remoting_probe.cluster_has_broker(self.namesrv, name), "registered with namesrv")
        if self.with_proxy:
            from compat.jvm import classpath

            proxy = self._spawn("proxy", [*_java(self.heap), *common, "-cp", classpath("rocketmqproxy"),
                                          "org.apache.rocketmq.proxy.ProxyStartup", "-pm", "cluster",
                                          "-pc", os.path.join(self.workdir, "proxy.json")], env=env)
            self._wait(proxy, lambda: _port_open(self.grpc_port), "proxy gRPC port", timeout=180)


class Gateway(System):
    """The rocketgate server, `python -m gateway`, with the same flush policy as the reference. `tree`
    is the checkout whose code runs: the process starts with cwd = tree, which precedes the editable
    install on sys.path (so another checkout can be compared with this one in the same venv)."""

    name = "gateway"
    start_timeout = 60.0

    def __init__(self, workdir: str, flush: str = "async", extra_args: list[str] | None = None, tree: str = ROOT):
        super().__init__(workdir)
        self.flush, self.extra_args, self.tree = flush, extra_args or [], os.path.abspath(tree)
        self.kafka_port = free_port()
        self.remoting_port = free_port()
        self.data_dir = os.path.join(self.workdir, "data")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.remoting_port}"

    def _launch(self) -> None:
        cmd = [sys.executable, "-m", "gateway", "--data-dir", self.data_dir, "--host", "127.0.0.1",
               "--kafka-port", str(self.kafka_port), "--remoting-port", str(self.remoting_port),
               "--flush", self.flush, "--log-level", "WARNING",
               # as RocketMQ's diskMaxUsedSpaceRatio above: a shared disk past the default 75 % must
               # not make one system refuse writes while the others keep going
               "--disk-max-used-space-ratio", "95", *self.extra_args]
        p = self._spawn("gateway", cmd, cwd=self.tree)
        self._wait(p, lambda: _port_open(self.kafka_port) and _port_open(self.remoting_port), "listen ports")


SYSTEMS = {"kafka": KafkaBroker, "rocketmq": RocketMQBroker, "gateway": Gateway}
