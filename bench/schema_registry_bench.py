"""`python -m bench.schema_registry_bench [--n N]`: the schema registry's latency and throughput on this
machine, one keep-alive HTTP client against a real gateway (`--schema-registry-port`, async flush):
register (a new id each time), lookup by id (served from memory), lookup by subject + schema, and a
BACKWARD / FULL_TRANSITIVE compatibility check against a subject of 20 versions. Prints one JSON line."""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import httpx

from bench.brokers import Gateway, free_port


def record(i: int, fields: int = 1) -> dict:
    return {"schema": json.dumps({"type": "record", "name": "R", "namespace": f"n{i}", "fields": [
        {"name": f"f{k}", "type": "int", **({"default": 0} if k else {})} for k in range(fields)]})}


def measure(http: httpx.Client, n: int, call) -> dict:
    times = []
    began = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        answer = call(i)
        times.append(time.perf_counter() - t)
        assert answer.status_code == 200, answer.text
    wall = time.perf_counter() - began
    times.sort()
    return {"per_s": round(n / wall), "p50_ms": round(statistics.median(times) * 1000, 2),
            "p99_ms": round(times[int(n * 0.99) - 1] * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        gateway = Gateway(workdir, extra_args=["--schema-registry-port", str(port)]).start()
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
                http.put("/config/many", json={"compatibility": "NONE"})
                out = {"register": measure(http, args.n, lambda i: http.post("/subjects/many/versions",
                                                                                json=record(i)))}
                out["get_by_id"] = measure(http, args.n * 4, lambda i: http.get(f"/schemas/ids/{1 + i % args.n}"))
                out["lookup"] = measure(http, args.n, lambda i: http.post("/subjects/many", json=record(i % args.n)))
                for v in range(1, 21):
                    http.post("/subjects/evolving/versions", json=record(0, v))
                for level in ("BACKWARD", "FULL_TRANSITIVE"):
                    http.put("/config/evolving", json={"compatibility": level})
                    out[f"compat_{level.lower()}"] = measure(
                        http, args.n, lambda i: http.post("/compatibility/subjects/evolving/versions/latest"
                                                          if level == "BACKWARD" else
                                                          "/compatibility/subjects/evolving/versions",
                                                          json=record(0, 21)))
        finally:
            gateway.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
