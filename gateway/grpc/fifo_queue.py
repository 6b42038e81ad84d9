"""Which queue of a cluster topic a FIFO message group goes to over gRPC: one fixed by the group
alone, so that the group stays on one partition whichever gateway leads it now and whichever
gateway took the send (docs/cluster.md, "RocketMQ 5 gRPC").

The choice is the RocketMQ 5 Java SDK's own (`PublishingLoadBalancer.takeMessageQueueByMessageGroup`:
SipHash-2-4 of the group's UTF-8 bytes under Guava's default key, as a signed 64-bit value, taken
modulo the number of writable queues of the route). The gateway's route lists every queue of a
cluster topic in order, so the Java SDK's pick is this queue, at its leader's endpoint, and its
sends need no forwarding; other SDKs (the Python SDK hashes with SHA-256 and names no queue) reach
some gateway, which places the message the same way and forwards it to the leader."""
from __future__ import annotations

_MASK = (1 << 64) - 1
# Guava Hashing.sipHash24(): k0 = 0x0706050403020100, k1 = 0x0f0e0d0c0b0a0908 (bytes 0..15)
_K0, _K1 = 0x0706050403020100, 0x0F0E0D0C0B0A0908


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(data: bytes, k0: int = _K0, k1: int = _K1) -> int:
    """SipHash-2-4 (Aumasson and Bernstein, 2012) of `data`, an unsigned 64-bit value."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _MASK
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _MASK
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _MASK
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _MASK
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    whole = len(data) - len(data) % 8
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, whole, 8)]
    words.append(int.from_bytes(data[whole:], "little") | ((len(data) & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def group_queue(group: str, queues: int) -> int:
    """The queue (0..queues-1) of message group `group`: Java's LongMath.mod of the signed hash."""
    h = siphash24(group.encode("utf-8"))
    signed = h - (1 << 64) if h >> 63 else h
    return signed % queues
