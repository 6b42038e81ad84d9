"""The command-line tools tests/compat drives: Kafka's (kafka-topics, console producer/consumer,
kafka-consumer-groups from the Kafka 4.x jars), RocketMQ's mqadmin, and kcat."""
from __future__ import annotations

import json
import shutil
import subprocess

from compat.jvm import KAFKA_TOOLS, MQADMIN, run_tool


def kafka_tool(tool: str, args: list[str], log_dir: str, input: str | None = None, timeout: float = 120):
    """`kafka-topics ...` etc.: the tool's main class run from the kafkatools classpath."""
    return run_tool("kafkatools", KAFKA_TOOLS[tool], args, log_dir, input=input, timeout=timeout)


def mqadmin(args: list[str], log_dir: str, timeout: float = 120):
    """`mqadmin SUBCOMMAND ...` from rocketmq-tools 5.x."""
    return run_tool("rocketmqtools", MQADMIN, args, log_dir, timeout=timeout)


def kcat(args: list[str], input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    exe = shutil.which("kcat") or shutil.which("kafkacat")
    if exe is None:
        raise RuntimeError("kcat is not installed: run `make compat-kcat` (Debian package kcat)")
    return subprocess.run([exe, *args], input=input, capture_output=True, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


def kcat_json_lines(out: bytes) -> list[dict]:
    """kcat -J prints one JSON object per message (and may print plain status lines)."""
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def table(text: str, first_column: str) -> list[dict]:
    """Rows of a whitespace-aligned table whose header line starts with `first_column`."""
    rows, header = [], None
    for line in text.splitlines():
        cols = line.split()
        if cols and cols[0] == first_column:
            header = cols
        elif header and len(cols) == len(header):
            rows.append(dict(zip(header, cols)))
    return rows
