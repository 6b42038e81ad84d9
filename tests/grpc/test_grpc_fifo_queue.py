"""A message group's queue in a cluster (gateway/grpc/fifo_queue.py) is the RocketMQ 5 Java SDK's own
pick: Guava's SipHash-2-4 of the group, as a signed 64-bit value, modulo the queue count. The
expected values were printed by the Java SDK 5.2.0 jar's (shaded) Guava:
`Hashing.sipHash24().hashBytes(group.getBytes(UTF_8)).asLong()` and `LongMath.mod(h, 6 / 7)`."""
import pytest

from gateway.grpc.fifo_queue import group_queue, siphash24

JAVA = [("", 8246050544436514353, 3, 5), ("a", 3144613055062689994, 4, 0),
        ("group-1", -5837133000586362806, 4, 5), ("abcdefgh", -4383729067672451984, 4, 3),
        ("abcdefghi", -5572674830125372252, 2, 4), ("ünï", -4590878765893699154, 4, 6),
        ("order-42", -7687897554513327571, 5, 0)]


@pytest.mark.parametrize("group,hashed,of6,of7", JAVA)
def test_the_queue_of_a_group_is_the_java_sdks(group, hashed, of6, of7):
    assert siphash24(group.encode()) == hashed % (1 << 64)
    assert (group_queue(group, 6), group_queue(group, 7)) == (of6, of7)
