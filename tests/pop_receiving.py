"""Receiving with RocketMQ's native SimpleConsumer (client/) in POP tests."""
from __future__ import annotations


def receive_all(consumer, n: int, invisible: float = 30.0, rounds: int = 20) -> list:
    """Messages of up to `rounds` receives, stopping once at least `n` came."""
    got = []
    for _ in range(rounds):
        got += consumer.receive(max_messages=32, invisible_duration=invisible)
        if len(got) >= n:
            break
    return got
