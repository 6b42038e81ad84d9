"""`make cluster-reference`: the multi-broker tests whose bodies are shared between our gateways and
the real systems (reference_sides.py) run on both, one test at a time, and the results table of
docs/cluster-reference.md (between its `results` markers; the rest of the page is prose) is
rewritten with what passed where, with the versions of the real systems.

    python tests/cluster/reference_report.py [docs/cluster-reference.md]
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = ["tests/cluster/test_cluster_pop.py", "tests/cluster/test_cluster_grpc.py", "tests/cluster/test_cluster_spark.py"]
SIDES = "gateways or rocketmq or kafka"  # the fixture parameters of the shared bodies
BEGIN, END = "<!-- results -->", "<!-- /results -->"


def versions() -> str:
    jars = [os.path.basename(j) for j in glob.glob(os.path.join(ROOT, "bench", "jars", "*", "*.jar"))]
    spark = [os.path.basename(j) for j in glob.glob(os.path.join(ROOT, "spark", "jars", "spark-sql-kafka*.jar"))]

    def version(prefix: str, names) -> str:
        found = sorted(n[len(prefix):-4] for n in names if n.startswith(prefix))
        return found[0] if found else "?"
    try:
        with open(os.path.join(ROOT, "compat", "java", "rocketmqproxy", "target", "classpath.txt")) as f:
            proxy = re.search(r"rocketmq-proxy-([\w.]+)\.jar", f.read())
    except OSError:
        proxy = None
    return (f"Apache Kafka {version('kafka_2.13-', jars)} (3 KRaft nodes), Apache RocketMQ "
            f"{version('rocketmq-broker-', jars)} (name server + 2 brokers), RocketMQ proxy "
            f"{proxy.group(1) if proxy else '?'} (cluster mode), Spark connector {version('spark-sql-kafka-0-10_2.13-', spark)}")


def run() -> list[tuple[str, str, str, float]]:
    """(test, side, outcome, seconds) of every shared test, both sides."""
    out = []
    env = {**os.environ, "CLUSTER_REFERENCE": "1", "CLUSTER_LONG": "1"}
    for path in FILES:
        xml = os.path.join(tempfile.mkdtemp(prefix="cluster-reference-"), "junit.xml")
        subprocess.run([sys.executable, "-m", "pytest", path, "-k", SIDES, "-p", "no:cacheprovider", "-q", "-rfE",
                        f"--junitxml={xml}"], cwd=ROOT, env=env)
        if not os.path.exists(xml):  # pytest itself failed (a collection error)
            out.append((os.path.basename(path), "-", "FAIL", 0.0))
            continue
        for case in ET.parse(xml).getroot().iter("testcase"):
            name, side = re.match(r"(\w+)\[(.+)\]", case.get("name")).groups()
            failed = case.find("failure") is not None or case.find("error") is not None
            outcome = "skipped" if case.find("skipped") is not None else "FAIL" if failed else "pass"
            out.append((f"{os.path.basename(path)}::{name}", side, outcome, float(case.get("time", 0))))
    return out


def table(results) -> str:
    rows = ["| test | side | result | seconds (with start and stop) |", "|---|---|---|---|"]
    rows += [f"| `{test}` | {side} | {outcome} | {seconds:.0f} |" for test, side, outcome, seconds in results]
    return "\n".join([f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {versions()}.", "", *rows])


def main(doc: str = os.path.join(ROOT, "docs", "cluster-reference.md")) -> int:
    results = run()
    with open(doc) as f:
        text = f.read()
    head, rest = text.split(BEGIN, 1)
    with open(doc, "w") as f:
        f.write(f"{head}{BEGIN}\n{table(results)}\n{END}{rest.split(END, 1)[1]}")
    print(table(results))
    return 1 if any(outcome == "FAIL" for _, _, outcome, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
