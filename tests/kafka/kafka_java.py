"""Java sources the Kafka tests compile against Apache Kafka 4.3.1's own jars (bench/jars/kafka): a broker
plugin, a client scenario. Skips the test when javac or the jars are missing."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from bench.brokers import JARS

KAFKA_JARS = os.path.join(JARS, "kafka")


def compile_against_kafka(source: str, classes: str) -> str:
    """Compile `source` into the directory `classes`; returns `classes`."""
    javac = shutil.which("javac")
    if javac is None or not os.path.isdir(KAFKA_JARS):
        pytest.skip("needs javac and bench/jars/kafka (make bench-jars)")
    subprocess.run([javac, "-nowarn", "-d", classes, "-cp", os.path.join(KAFKA_JARS, "*"), source], check=True,
                   timeout=300, capture_output=True)
    return classes
