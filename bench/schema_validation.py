"""Benchmark of schema validation at the broker (issue 23), two parts:

1. End to end: librdkafka produces the same framed Avro records to an unvalidated topic and to one with
   `confluent.value.schema.validation=true` (and `=full`), in interleaved rounds (A B, B A, ...), on one
   gateway with --schema-registry-port. Per round: records/s and the gateway's CPU µs per record; the
   verdict is the median of the per-round ratios validated / unvalidated with its confidence interval
   (records/s, and the gateway's CPU per record, steadier on a loaded machine).
2. In process: the produce path's validation step alone (`record_errors.schema_record_errors` on real batches of
   100 records): µs per record at the id level, and µs per KiB of payload at the full level.

    python -m bench.schema_validation [--records 20000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import types

from bench import rounds
from bench.brokers import Gateway, free_port, _port_open
from bench.procstat import cpu_used, thread_cpu_ns

SCHEMA = {"type": "record", "name": "Event", "namespace": "bench",
          "fields": [{"name": "id", "type": "long"}, {"name": "text", "type": "string"}]}


def _wait(port: int) -> None:
    deadline = time.monotonic() + 30
    while not _port_open(port):
        if time.monotonic() > deadline:
            raise TimeoutError(f"port {port} did not open")
        time.sleep(0.1)


def framed_values(url: str, topic: str, size: int, count: int = 64) -> list[bytes]:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    serialize = AvroSerializer(SchemaRegistryClient({"url": url}), json.dumps(SCHEMA))
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [serialize({"id": i, "text": "x" * size}, ctx) for i in range(count)]


def produce(bootstrap: str, topic: str, values: list[bytes], count: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    failed = []
    for i in range(count):
        while True:
            try:
                p.produce(topic, values[i % len(values)], partition=0,
                          on_delivery=lambda err, _m: err is not None and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)
    if failed:
        raise RuntimeError(f"{len(failed)} records failed on {topic}: {failed[0]}")


def end_to_end(args) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    with tempfile.TemporaryDirectory(prefix="rocketgate-srbench-") as tmp:
        port = free_port()
        g = Gateway(tmp, extra_args=["--schema-registry-port", str(port)]).start()
        try:
            _wait(port)
            url = f"http://127.0.0.1:{port}"
            levels = {"unvalidated": "false", "id": "true", "full": "full"}
            admin = AdminClient({"bootstrap.servers": g.bootstrap})
            futures = admin.create_topics([NewTopic(f"t-{name}", 1, 1, config={
                "confluent.value.schema.validation": level}) for name, level in levels.items()])
            for f in futures.values():
                f.result(30)
            # one schema, registered under each topic's subject (the same id)
            values = {name: framed_values(url, f"t-{name}", args.value_bytes) for name in levels}
            per_record: dict[str, list[float]] = {n: [] for n in levels}
            rate: dict[str, list[float]] = {n: [] for n in levels}
            for name in levels:  # warm-up
                produce(g.bootstrap, f"t-{name}", values[name], args.records // 4)
            for i in range(args.rounds):
                for name in rounds.order(i, tuple(levels)):
                    before = thread_cpu_ns(g.pids()[0])
                    began = time.perf_counter()
                    produce(g.bootstrap, f"t-{name}", values[name], args.records)
                    took = time.perf_counter() - began
                    cpu = cpu_used(before, thread_cpu_ns(g.pids()[0]))
                    rate[name].append(args.records / took)
                    per_record[name].append(cpu / args.records * 1e6)
            print(f"\n{args.records} records of {len(values['id'][0])} bytes per run, {args.rounds} rounds\n")
            print("| topic | records/s (median) | gateway CPU µs/record (median) | ratio to unvalidated (records/s) "
                  "| 90 % interval | gateway CPU per record / unvalidated's (90 % interval) |")
            print("|---|---|---|---|---|---|")
            for name in levels:
                ratios = [a / b for a, b in zip(rate[name], rate["unvalidated"])]
                lo, hi, _ = rounds.median_interval(ratios)
                cpu = [a / b for a, b in zip(per_record[name], per_record["unvalidated"])]
                cpu_lo, cpu_hi, _ = rounds.median_interval(cpu)
                print(f"| {name} | {rounds.median(rate[name]):,.0f} | {rounds.median(per_record[name]):.2f} | "
                      f"{rounds.median(ratios):.3f} | {lo:.3f}–{hi:.3f} | {rounds.median(cpu):.2f} "
                      f"({cpu_lo:.2f}–{cpu_hi:.2f}) |", flush=True)
        finally:
            g.kill9()


def _stub_registry():
    """A registry holding SCHEMA as id 1 under t-value (the lookups the validator makes, no store)."""
    from codec import schema_registry as wire
    from semantics.schema_formats import module
    from semantics.schema_registry import RegistryState
    state = RegistryState()
    text = json.dumps(SCHEMA)
    state.apply(wire.encode_key(wire.Key("SCHEMA", "t-value", 1)),
                wire.encode_schema_value(wire.SchemaValue("t-value", 1, 1, text)))
    parsed = module("AVRO").parse(text, {})
    return types.SimpleNamespace(state=state, log=types.SimpleNamespace(applied=1), fresh=lambda: state,
                                 parsed=lambda _schema: parsed)


def _done(coro):
    """The value of a coroutine that never suspends (every id is known: no leader lookup), without a loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the validation step suspended")


def in_process(args) -> None:
    import fastavro
    import io
    from codec.kafka import records
    from codec.schema_registry import frame
    from gateway.kafka.record_errors import schema_record_errors
    from semantics.schema_validation import SchemaValidation
    validation = SchemaValidation(_stub_registry())
    app = types.SimpleNamespace(schema_validation=validation)
    parsed = fastavro.parse_schema(SCHEMA)
    print("\n| level | value bytes | µs per record | µs per KiB |")
    print("|---|---|---|---|")
    for level in ("true", "full"):
        rule = validation.rule(types.SimpleNamespace(name="t", attributes={
            "confluent.value.schema.validation": level}))
        for size in (100, 1024, 16 * 1024):
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, {"id": 7, "text": "x" * size})
            value = frame(1, out.getvalue())
            batches = records.parse_batches(records.build_batch([(0, None, value, [])] * 100))
            assert _done(schema_record_errors(app, rule, batches, "t")) == []
            best = float("inf")
            for _ in range(args.repeat):
                began = time.perf_counter()
                for _ in range(20):
                    _done(schema_record_errors(app, rule, batches, "t"))
                best = min(best, (time.perf_counter() - began) / 2000)
            print(f"| {level} | {len(value)} | {best * 1e6:.2f} | {best * 1e6 / (len(value) / 1024):.2f} |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.schema_validation")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    in_process(args)
    if not args.skip_e2e:
        end_to_end(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
