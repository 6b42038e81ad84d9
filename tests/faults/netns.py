"""Network namespaces for the fault harness: one per node, each joined by a veth pair to a bridge in
the root namespace (by default 10.77.0.0/24, the harness's own test hosts; nothing is routed off the
machine). Faults inside a node's namespace:
- partitions: blackhole routes (only `ip`);
- one-way drops: an iptables INPUT rule in the receiver's namespace (the other direction still flows);
- a bad link: random loss (iptables `statistic`), a slow link (tc htb) and reordering (a random share of
  the packets classified into a much slower htb class, so they arrive after later ones). This kernel has
  no `netem` qdisc and no tc actions (checked: "Specified qdisc kind is unknown"), so htb + iptables
  stand in for `tc netem delay/loss/reorder`.
Every name starts with the network's prefix, so `cleanup(prefix)` removes exactly what a previous run
left, even after a crash of the harness, and never anything else."""
from __future__ import annotations

import os
import shutil
import subprocess

PREFIX = "rgf"
SUBNET = "10.77.0"
IPTABLES = shutil.which("iptables-legacy") or "iptables"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"  # Debian's faketime


class HarnessRefused(SystemExit):
    """Not root or no network namespaces: exit 2 with one line."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def missing_tools() -> list[str]:
    """What the harness needs and this machine lacks (empty: it can run)."""
    missing = [t for t in ("ip", "tc", IPTABLES, "etcd", "mount") if shutil.which(t) is None]
    if not os.path.exists(FAKETIME_LIB):
        missing.append(FAKETIME_LIB)
    if not os.path.exists("/proc/self/ns/net"):
        missing.append("network namespaces")
    return missing


def require_root_and_netns() -> None:
    if os.geteuid() != 0:
        raise HarnessRefused("faults: needs root (network namespaces, veth, routes)")
    if missing_tools():
        raise HarnessRefused(f"faults: needs {', '.join(missing_tools())} (make faults-tools installs them)")


def cleanup(prefix: str = PREFIX) -> None:
    """Delete every namespace and link this harness creates (by prefix); others are never touched."""
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(f"{prefix}-"):
            ip("netns", "delete", name, check=False)
    for line in ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(prefix):
            ip("link", "delete", name, check=False)


class Network:
    """Nodes by name -> address; `exec_prefix(node)` runs a command inside the node's namespace."""

    def __init__(self, nodes: list[str], prefix: str = PREFIX, subnet: str = SUBNET) -> None:
        self.prefix, self.subnet = prefix, subnet
        self.addr = {node: f"{subnet}.{10 + i}" for i, node in enumerate(nodes)}
        self.client_addr = f"{subnet}.1"  # the bridge's address: the client (root namespace)
        self.blocked: set[tuple[str, str]] = set()
        self.shaped: set[str] = set()  # nodes with iptables rules or a tc qdisc

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def create(self) -> "Network":
        cleanup(self.prefix)  # leftovers of a crashed run
        bridge = f"{self.prefix}br0"
        ip("link", "add", bridge, "type", "bridge")
        ip("addr", "add", f"{self.client_addr}/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        for i, (node, addr) in enumerate(self.addr.items()):
            ns, host_end = self.ns(node), f"{self.prefix}v{i}"
            ip("netns", "add", ns)
            ip("link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("link", "set", host_end, "master", bridge)
            ip("link", "set", host_end, "up")
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        return self

    def exec_prefix(self, node: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(node)]

    def _in(self, node: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        """`cmd` in `node`'s namespace. iptables waits for the xtables lock (`-w`), a file every
        namespace shares: a second harness (or anything else) holding it failed a rule, or a heal's flush."""
        if cmd[0] == IPTABLES:
            cmd = (IPTABLES, "-w", "30", *cmd[1:])
        return subprocess.run([*self.exec_prefix(node), *cmd], check=check, capture_output=True, text=True)

    def block(self, a: str, b: str) -> None:
        """Drop a's packets to b: a blackhole route in a's namespace (TCP both ways breaks: no answers)."""
        if (a, b) not in self.blocked:
            ip("-n", self.ns(a), "route", "add", "blackhole", f"{self.addr[b]}/32")
            self.blocked.add((a, b))

    def partition(self, *groups: list[str]) -> None:
        """No traffic between nodes of different groups (both ways); the client reaches everyone."""
        for g in groups:
            for h in groups:
                if g is not h:
                    for a in g:
                        for b in h:
                            self.block(a, b)

    def drop_inbound(self, node: str, sources: list[str]) -> None:
        """One-way: `node` receives nothing from `sources`; its own packets to them still arrive."""
        for src in sources:
            self._in(node, IPTABLES, "-A", "INPUT", "-s", self.addr[src], "-j", "DROP")
        self.shaped.add(node)

    def bad_link(self, node: str, loss: float, rate_kbit: int, reorder: float) -> None:
        """`node`'s link loses `loss` of its inbound packets, sends at `rate_kbit` (queueing delay), and
        sends a `reorder` share of its packets through a class 20x slower (they overtake each other)."""
        dev = ["dev", "eth0"]
        self._in(node, "tc", "qdisc", "add", *dev, "root", "handle", "1:", "htb", "default", "10")
        self._in(node, "tc", "class", "add", *dev, "parent", "1:", "classid", "1:10", "htb", "rate", f"{rate_kbit}kbit")
        self._in(node, "tc", "class", "add", *dev, "parent", "1:", "classid", "1:20", "htb",
                 "rate", f"{max(8, rate_kbit // 20)}kbit")
        self._in(node, IPTABLES, "-t", "mangle", "-A", "POSTROUTING", "-m", "statistic", "--mode", "random",
                 "--probability", str(reorder), "-j", "CLASSIFY", "--set-class", "1:20")
        self._in(node, IPTABLES, "-A", "INPUT", "-m", "statistic", "--mode", "random",
                 "--probability", str(loss), "-j", "DROP")
        self.shaped.add(node)

    def heal(self) -> None:
        for a, b in list(self.blocked):
            ip("-n", self.ns(a), "route", "del", "blackhole", f"{self.addr[b]}/32", check=False)
        self.blocked.clear()
        for node in list(self.shaped):
            self._in(node, IPTABLES, "-F", "INPUT", check=False)
            self._in(node, IPTABLES, "-t", "mangle", "-F", "POSTROUTING", check=False)
            self._in(node, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        self.shaped.clear()
