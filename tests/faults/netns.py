"""Network namespaces for the fault harness: one per node, each joined by a veth pair to a bridge in
the root namespace (10.77.0.0/24, the harness's own test hosts; nothing is routed off the machine).
Partitions are blackhole routes inside the namespaces (only `ip` is needed). Every name starts with
PREFIX, so `cleanup()` removes exactly what a previous run left, even after a crash of the harness."""
from __future__ import annotations

import os
import shutil
import subprocess

PREFIX = "rgf"
BRIDGE = f"{PREFIX}br0"
SUBNET = "10.77.0"
CLIENT_ADDR = f"{SUBNET}.1"  # the bridge's address: the client (root namespace)


class HarnessRefused(SystemExit):
    """Not root or no network namespaces: exit 2 with one line."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def require_root_and_netns() -> None:
    if os.geteuid() != 0:
        raise HarnessRefused("faults: needs root (network namespaces, veth, routes)")
    if shutil.which("ip") is None or not os.path.exists("/proc/self/ns/net"):
        raise HarnessRefused("faults: needs iproute2 `ip` and network namespaces")


def ns_name(node: str) -> str:
    return f"{PREFIX}-{node}"


def cleanup() -> None:
    """Delete every namespace and link this harness creates (by prefix); others are never touched."""
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(f"{PREFIX}-"):
            ip("netns", "delete", name, check=False)
    for line in ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(PREFIX):
            ip("link", "delete", name, check=False)


class Network:
    """Nodes by name -> address; `exec_prefix(node)` runs a command inside the node's namespace."""

    def __init__(self, nodes: list[str]) -> None:
        self.addr = {node: f"{SUBNET}.{10 + i}" for i, node in enumerate(nodes)}
        self.blocked: set[tuple[str, str]] = set()

    def create(self) -> "Network":
        cleanup()  # leftovers of a crashed run
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{CLIENT_ADDR}/24", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")
        for i, (node, addr) in enumerate(self.addr.items()):
            ns, host_end = ns_name(node), f"{PREFIX}v{i}"
            ip("netns", "add", ns)
            ip("link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("link", "set", host_end, "master", BRIDGE)
            ip("link", "set", host_end, "up")
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")
        return self

    def exec_prefix(self, node: str) -> list[str]:
        return ["ip", "netns", "exec", ns_name(node)]

    def block(self, a: str, b: str) -> None:
        """Drop a's packets to b (one way): a blackhole route in a's namespace."""
        if (a, b) not in self.blocked:
            ip("-n", ns_name(a), "route", "add", "blackhole", f"{self.addr[b]}/32")
            self.blocked.add((a, b))

    def partition(self, *groups: list[str]) -> None:
        """No traffic between nodes of different groups (both ways); the client reaches everyone."""
        for g in groups:
            for h in groups:
                if g is not h:
                    for a in g:
                        for b in h:
                            self.block(a, b)

    def heal(self) -> None:
        for a, b in list(self.blocked):
            ip("-n", ns_name(a), "route", "del", "blackhole", f"{self.addr[b]}/32", check=False)
        self.blocked.clear()
