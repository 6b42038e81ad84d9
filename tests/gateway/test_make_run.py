"""`make run` serves the HTTP port (dashboard, /metrics, health) and prints its URL; `make run ARGS=...`
passes any flag to the gateway. Runs the Makefile's real recipe with this interpreter's venv."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from gateway_process import ROOT, free_port, wait_port

VENV = os.path.dirname(os.path.dirname(sys.executable))
# -o install: never (re)install into the shared venv; VENV: this interpreter's venv, not ./.venv
MAKE = ["make", "-s", "-o", "install", f"VENV={VENV}"]


def test_make_run_recipe_turns_the_http_port_on_and_passes_args():
    out = subprocess.run([*MAKE, "-n", "run", "ARGS=--grpc-port 1234 --log-level DEBUG"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if "-m gateway" in line)
    assert "--http-port 8080" in line and "--schema-registry-port 8081" in line
    assert line.endswith("--grpc-port 1234 --log-level DEBUG")


def test_make_run_prints_the_dashboard_url_and_answers_health(tmp_path):
    http, kafka, remoting, registry = free_port(), free_port(), free_port(), free_port()
    args = (f"--data-dir {tmp_path / 'data'} --host 127.0.0.1 --kafka-port {kafka} --remoting-port {remoting} "
            f"--schema-registry-port {registry} --http-port {http}")
    log_path = tmp_path / "run.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([*MAKE, "run", f"ARGS={args}"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_port(http, proc=proc)
        wait_port(kafka, proc=proc)
        url = f"http://127.0.0.1:{http}"
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as resp:
            assert resp.status == 200
        deadline = time.monotonic() + 10
        while f"dashboard: {url}/" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        text = log_path.read_text()
        assert re.search(rf"dashboard: {re.escape(url)}/ .*metrics: {re.escape(url)}/metrics", text), text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
