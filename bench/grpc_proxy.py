"""Apache RocketMQ 5.x name server + proxy in local mode (the broker inside the proxy), from the
Maven-resolved classpath of compat/java/rocketmqproxy: the real gRPC endpoint the SDK tests were
validated against (tests/grpc with GRPC_TARGET=proxy) and the gRPC benchmark compares with."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

from bench.brokers import _port_open, free_port
from compat.jvm import classpath


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _port_open(port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"port {port} did not open")
        time.sleep(0.2)


# With ACL on, the proxy reads users and ACLs from its broker (in local mode the one in its JVM).
PROXY_AUTH_METADATA = {
    "authenticationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthorizationMetadataProvider"}


class RealProxy:
    def __init__(self, workdir: str, extra_args=None, auth: dict | None = None) -> None:
        self.workdir = workdir
        self.auth = auth or {}  # ACL 2.0 settings (compat.validate_acl.BROKER_ACL) for broker and proxy
        os.makedirs(workdir, exist_ok=True)
        self.namesrv_port, self.grpc_port, self.remoting_port = free_port(), free_port(), free_port()
        self.broker_port = free_port()
        self.procs: list[subprocess.Popen] = []

    @property
    def endpoints(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def _java(self, name: str, heap: str, main: str, args: list[str]) -> subprocess.Popen:
        cmd = [shutil.which("java") or "java", f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC",
               f"-Duser.home={self.workdir}", f"-Drocketmq.home.dir={self.workdir}",
               "-cp", classpath("rocketmqproxy"), main, *args]
        log = open(os.path.join(self.workdir, f"{name}.log"), "ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                env={**os.environ, "ROCKETMQ_HOME": self.workdir})
        log.close()
        self.procs.append(proc)
        return proc

    def start(self) -> "RealProxy":
        w = self.workdir
        with open(os.path.join(w, "namesrv.conf"), "w") as f:
            f.write(f"listenPort={self.namesrv_port}\n")
        store = os.path.join(w, "store")
        broker = {"brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "0",
                  "listenPort": str(self.broker_port), "brokerIP1": "127.0.0.1",
                  "namesrvAddr": f"127.0.0.1:{self.namesrv_port}", "storePathRootDir": store,
                  "storePathCommitLog": os.path.join(store, "commitlog"), "autoCreateTopicEnable": "true",
                  "autoCreateSubscriptionGroup": "true", "defaultTopicQueueNums": "4",
                  "transactionTimeOut": "8000", "transactionCheckInterval": "1000",
                  "diskMaxUsedSpaceRatio": "95", "enablePropertyFilter": "true",
                  "recallMessageEnable": "true", **self.auth}
        with open(os.path.join(w, "broker.conf"), "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in broker.items())
        proxy = {"rocketMQClusterName": "DefaultCluster", "namesrvAddr": f"127.0.0.1:{self.namesrv_port}",
                 "grpcServerPort": self.grpc_port, "remotingListenPort": self.remoting_port, "proxyMode": "local",
                 **self.auth, **(PROXY_AUTH_METADATA if self.auth else {})}
        with open(os.path.join(w, "proxy.json"), "w") as f:
            json.dump(proxy, f)
        self._java("namesrv", "512m", "org.apache.rocketmq.namesrv.NamesrvStartup",
                   ["-c", os.path.join(w, "namesrv.conf")])
        wait_port(self.namesrv_port, 60)
        self._java("proxy", "1g", "org.apache.rocketmq.proxy.ProxyStartup",
                   ["-pm", "local", "-pc", os.path.join(w, "proxy.json"), "-bc", os.path.join(w, "broker.conf")])
        wait_port(self.grpc_port, 120)
        time.sleep(5)  # the broker registers with the name server after the port opens
        return self

    def create_topics(self, topics: dict, fifo_groups=()) -> None:
        """A real 5.x broker creates no topic on a gRPC route query, and checks each topic's
        message.type: create them (name -> NORMAL/FIFO/DELAY/TRANSACTION) with mqadmin first, and a
        consumer group "<topic>-g" for each (orderly for `fifo_groups`)."""
        from compat.jvm import MQADMIN, run_tool
        ns, logs = f"127.0.0.1:{self.namesrv_port}", os.path.join(self.workdir, "mqadmin")
        for topic, kind in topics.items():
            r = run_tool("rocketmqtools", MQADMIN, ["updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", topic,
                                                    "-r", "4", "-w", "4", "-a", f"+message.type={kind}"], logs)
            assert r.returncode == 0, r.stdout + r.stderr
        for topic in topics:  # the broker registers the new topic with the name server a little later
            deadline = time.monotonic() + 90
            while run_tool("rocketmqtools", MQADMIN, ["topicRoute", "-n", ns, "-t", topic], logs).returncode != 0:
                assert time.monotonic() < deadline, f"topic {topic} never got a route"
                time.sleep(2)
        for group in [f"{t}-g" for t in topics]:
            r = run_tool("rocketmqtools", MQADMIN, ["updateSubGroup", "-n", ns, "-c", "DefaultCluster", "-g", group,
                                                    "-o", "true" if group in fifo_groups else "false"], logs)
            assert r.returncode == 0, r.stdout + r.stderr

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()
