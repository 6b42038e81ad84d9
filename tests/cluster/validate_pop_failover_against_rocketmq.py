"""The scenario of test_cluster_pop_failover.py against a real Apache RocketMQ 5.5 master/slave pair in
controller mode (the project's jars: a name server with the embedded DLedger controller, two brokers
of one broker group `broker-a` with enableControllerMode, allAckInSyncStateSet, SYNC_FLUSH). The
native SimpleConsumer pops 30 of 40 messages of a one-queue topic and acks the odd-numbered ones;
the master is killed (-9); once the controller has elected the slave, the group pops the rest at it.
Prints whether RocketMQ meets the same checks (acknowledged never again, in-flight not before their
invisible time, none lost) and how long the election took.

    python tests/cluster/validate_pop_failover_against_rocketmq.py [--workdir DIR]

RocketMQ replicates POP offsets and the revive service's progress to the slave every 10 s
(SlaveSynchronize), so the scenario waits SYNC_WAIT after the acks before the kill, and uses a
long invisible time so the in-flight messages are still in flight at the kill.

Status: not yet run through. With RocketMQ 5.5.0's jars on JDK 17+ the controller embedded in the
name server starts (once java.lang is opened for its Hessian serializer), but both brokers keep
logging "Failed to init controller metadata, maybe the controllers in [<namesrv>] is not
available" and never register, so the pair never comes up (the controller address or a missing
controller setting is the suspect)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), os.path.dirname(HERE), HERE]

from bench.brokers import System, _java, _port_open, free_port, java_classpath  # noqa: E402
from bench import remoting_probe  # noqa: E402
from client import Message, Producer  # noqa: E402
from raw_kafka import remoting_call  # noqa: E402
from test_cluster_pop_failover import pop_and_ack_part, pop_rest  # noqa: E402

TOPIC, GROUP = "pop-failover", "pop-failover-g"
INVISIBLE = 90.0
SYNC_WAIT = 12.0  # SlaveSynchronize runs every 10 s


class ControllerPair(System):
    """A name server with the embedded controller and two brokers of group broker-a in controller mode."""

    name = "rocketmq-controller"
    start_timeout = 180.0

    def __init__(self, workdir: str) -> None:
        super().__init__(workdir)
        self.namesrv_port, self.controller_port = free_port(), free_port()
        self.broker_ports = {n: free_port(span=4) + 2 for n in ("a0", "a1")}  # listen-2, listen, listen+1 (HA)
        self.data_dir = os.path.join(self.workdir, "data")

    @property
    def namesrv(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def _prepare(self) -> None:
        ns = {"listenPort": self.namesrv_port, "enableControllerInNamesrv": "true",
              "controllerDLegerGroup": "g1", "controllerDLegerPeers": f"n0-127.0.0.1:{self.controller_port}",
              "controllerDLegerSelfId": "n0", "controllerStorePath": os.path.join(self.data_dir, "controller"),
              "enableElectUncleanMaster": "false", "notifyBrokerRoleChanged": "true"}
        self._write("namesrv.conf", ns)
        for n, port in self.broker_ports.items():
            store = os.path.join(self.data_dir, n)
            self._write(f"{n}.conf", {
                "brokerClusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "-1",
                "enableControllerMode": "true", "controllerAddr": self.namesrv, "namesrvAddr": self.namesrv,
                "allAckInSyncStateSet": "true", "listenPort": port, "haListenPort": port + 1,
                "brokerIP1": "127.0.0.1", "storePathRootDir": store,
                "storePathCommitLog": os.path.join(store, "commitlog"),
                "storePathEpochFile": os.path.join(store, "epochFileCheckpoint"),
                "storePathBrokerIdentity": os.path.join(store, "brokerIdentity"),
                "flushDiskType": "SYNC_FLUSH", "autoCreateTopicEnable": "true",
                "autoCreateSubscriptionGroup": "true", "fileReservedTime": "48", "diskMaxUsedSpaceRatio": "95"})

    def _write(self, name: str, conf: dict) -> None:
        with open(os.path.join(self.workdir, name), "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in conf.items())

    def _launch(self) -> None:
        env = {**os.environ, "ROCKETMQ_HOME": self.workdir}
        # the controller's Hessian serializer reflects into java.lang (JDK 17+ needs it opened)
        opens = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in ("java.lang", "java.util", "java.nio", "sun.nio.ch")]
        common = [*opens, f"-Duser.home={self.workdir}", f"-Drocketmq.home.dir={self.workdir}", "-cp",
                  java_classpath("rocketmq")]
        ns = self._spawn("namesrv", [*_java("512m"), *common, "org.apache.rocketmq.namesrv.NamesrvStartup",
                                     "-c", os.path.join(self.workdir, "namesrv.conf")], env=env)
        self._wait(ns, lambda: _port_open(self.namesrv_port), "namesrv port")
        for n, port in self.broker_ports.items():
            br = self._spawn(n, [*_java("512m"), *common, "org.apache.rocketmq.broker.BrokerStartup",
                                 "-c", os.path.join(self.workdir, f"{n}.conf")], env=env)
            self._wait(br, lambda p=port: _port_open(p), f"{n} port")
        self._wait(ns, lambda: len(self.addrs()) == 2, "a master and a slave registered")

    def addrs(self) -> dict[str, str]:
        """broker id ("0": the master) -> address, from the name server's cluster table."""
        table = json.loads(remoting_probe.request(self.namesrv, 106) or b"{}")
        return (table.get("brokerAddrTable", {}).get("broker-a") or {}).get("brokerAddrs", {})

    def process_at(self, addr: str):
        port = int(addr.rsplit(":", 1)[1])
        name = next(n for n, p in self.broker_ports.items() if p == port)
        return next(p for p in self.processes if p.name == name)


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--workdir", default=None)
    opts = args.parse_args()
    workdir = opts.workdir or tempfile.mkdtemp(prefix="rmq-pop-failover-")
    pair = ControllerPair(workdir)
    pair.start()
    try:
        master = pair.addrs()["0"]
        created = remoting_call(int(master.rsplit(":", 1)[1]), 17, {  # UPDATE_AND_CREATE_TOPIC, one queue
            "topic": TOPIC, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        print("topic created:", getattr(created, "code", created))
        time.sleep(SYNC_WAIT)  # the slave copies the topic table
        sent = {b"m%02d" % i for i in range(40)}
        with Producer("pop-failover-p", pair.namesrv) as p:
            for body in sorted(sent):
                p.send(Message(TOPIC, body))
        acked, due = pop_and_ack_part(pair.namesrv, TOPIC, GROUP, INVISIBLE)
        print(f"popped {len(acked) + len(due)}, acked {len(acked)}, in flight {sorted(due)}")
        time.sleep(SYNC_WAIT)
        killed = time.monotonic()
        pair.process_at(master).kill9()
        while (pair.addrs().get("0") in (None, master)) and time.monotonic() - killed < 120:
            time.sleep(0.2)
        print(f"new master {pair.addrs().get('0')} {time.monotonic() - killed:.1f} s after kill -9")
        try:
            pop_rest(pair.namesrv, TOPIC, GROUP, INVISIBLE, sent, acked, due, timeout=INVISIBLE + 120)
            print("RocketMQ: PASS (acknowledged never again, in-flight after their invisible time, none lost)")
        except AssertionError as exc:
            print(f"RocketMQ: FAIL: {exc}")
            return 1
        return 0
    finally:
        pair.stop()


if __name__ == "__main__":
    sys.exit(main())
