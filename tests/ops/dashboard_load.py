"""Benchmark (not a test): how long each console page and /metrics take with 1 000 topics and
10 000 consumer groups (offsets committed on every group), in-process, and one sample of the
console's history (gateway.ops.history) over them.

    python tests/ops/dashboard_load.py [--topics 1000] [--groups 10000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import urllib.request

import trio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gateway.app import build_app  # noqa: E402
from gateway.config import GatewayConfig  # noqa: E402
from gateway.ops.http import HttpService  # noqa: E402
from gateway_process import free_port  # noqa: E402
from store import Message  # noqa: E402

PAGES = ["/", "/topics", "/topics/topic-0", "/groups", "/groups/group-0", "/dlq", "/delay", "/transactions",
         "/messages?topic=topic-0&queue=0&offset=0", "/messages?topic=topic-0&tag=none", "/cluster", "/grpc",
         "/security", "/schemas", "/metrics", "/api/groups"]


def fetch(url: str) -> tuple[float, int]:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as resp:
        size = len(resp.read())
    return time.perf_counter() - began, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=10000)
    args = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = GatewayConfig(data_dir=tmp, http_port=port, commitlog_file_size=64 << 20)

        async def run():
            app = build_app(cfg)
            try:
                for t in range(args.topics):
                    app.store.topics.create(f"topic-{t}", 4, 4)
                    app.store.append(Message(topic=f"topic-{t}", queue_id=0, body=b"x" * 100))
                for g in range(args.groups):
                    app.offsets.commit(f"group-{g}", f"topic-{g % args.topics}", 0, 0)
                first = app.store.read("topic-0", 0, 0, 1).entries[0][1]
                pages = PAGES + [f"/messages?msg_id={first.msg_id}"]  # one message with its trace
                app.stats.listeners_up = True
                from gateway.ops.history import History
                began = time.perf_counter()
                History(app).sample()
                print(f"{'one history sample':45s} {(time.perf_counter() - began) * 1000:8.1f} ms")
                async with trio.open_nursery() as nursery:
                    await nursery.start(HttpService(app).run)
                    for page in pages:
                        await trio.to_thread.run_sync(fetch, f"http://127.0.0.1:{port}{page}")  # warm-up
                        seconds, size = await trio.to_thread.run_sync(fetch, f"http://127.0.0.1:{port}{page}")
                        print(f"{page:45s} {seconds * 1000:8.1f} ms {size:>10,} bytes")
                    nursery.cancel_scope.cancel()
            finally:
                app.store.close()

        trio.run(run)


if __name__ == "__main__":
    main()
