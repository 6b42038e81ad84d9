"""What every pipeline shares: the command line, pre-flight checks, progress lines, one-line errors."""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable

from spark.admin import Admin, PipelineError, check_reachable
from spark.session import ConnectorMissing


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m spark.pipelines.{prog}", description=description)
    p.add_argument("--bootstrap", required=True, metavar="HOST:PORT",
                   help="Kafka bootstrap address of the gateway (or any Kafka cluster)")
    p.add_argument("--master", default=None,
                   help="Spark master (default: $SPARK_MASTER or local[2])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration, repeatable")
    p.add_argument("--catalog", default=None, metavar="URI",
                   help="read the topic's Iceberg table instead of the Kafka connector: the gateway's "
                        "catalog http://HOST:HTTP_PORT/iceberg, or a Hadoop catalog's warehouse directory")
    return p


def catalog_name(uri: str) -> str:
    """The Spark catalog name for --catalog: one per URI, so pipelines run one after another in one
    session (the tests) never meet a catalog Spark already loaded for another gateway."""
    return "rg_" + hashlib.sha1(uri.encode()).hexdigest()[:10]


def catalog_conf(uri: str) -> dict[str, str]:
    """Spark configuration for --catalog: REST for an http(s) URI, else a Hadoop catalog directory."""
    from spark import tables

    name = catalog_name(uri)
    if uri.startswith(("http://", "https://")):
        return tables.catalog_conf(uri, name)
    return tables.catalog_conf(uri, name, type="hadoop", warehouse=uri)


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    out = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise PipelineError(f"--conf {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def start(args: argparse.Namespace, app: str, topics: list[str]):
    """Check the gateway answers and the topics exist, then build the session."""
    from spark import session

    check_reachable(args.bootstrap)
    conf = catalog_conf(args.catalog) if getattr(args, "catalog", None) else {}
    conf.update(spark_conf(args))
    spark = session.build(app, master=args.master, conf=conf)
    with Admin(spark, args.bootstrap) as admin:
        existing = admin.topics()
    for topic in topics:
        if topic not in existing:
            raise PipelineError(f"topic {topic!r} does not exist on {args.bootstrap}")
    if getattr(args, "catalog", None):
        check_tables(spark, args.catalog, topics)
    return spark


def check_tables(spark, uri: str, topics: list[str]) -> None:
    """Each topic has a table in the catalog (a topic with iceberg.mode=disabled has none)."""
    from spark import tables

    for topic in topics:
        try:
            found = spark.catalog.tableExists(tables.table_name(topic, catalog_name(uri)))
        except Exception as exc:  # the catalog unreachable or not a catalog: py4j/Spark errors
            raise PipelineError(f"catalog {uri}: {first_line(exc)}") from None
        if not found:
            raise PipelineError(f"topic {topic!r} has no Iceberg table in {uri} (is iceberg.mode set?)")


def read(spark, args, topic: str, *, stream: bool = False, options: dict[str, str] | None = None, **kafka):
    """The topic through the Kafka connector (`kafka`: source.read's offset/time arguments) or, with
    --catalog, its Iceberg table (`options`: Iceberg read options); the same columns either way."""
    from spark import source, tables

    if args.catalog:
        return tables.read(spark, topic, stream=stream, catalog=catalog_name(args.catalog), options=options)
    return source.read(spark, args.bootstrap, topic, stream=stream, options=options, **kafka)


def stream_options(args, max_rows: int | None = None) -> dict[str, str]:
    """The batch cap and starting point as the Kafka connector or (--catalog) Iceberg names them."""
    if not args.catalog:
        return {"maxOffsetsPerTrigger": str(max_rows)} if max_rows else {}
    options = {"streaming-max-rows-per-micro-batch": str(max_rows)} if max_rows else {}
    if args.starting == "latest":
        options["stream-from-timestamp"] = str(int(time.time() * 1000))
    return options


def _offsets(obj) -> dict[str, int]:
    """Spark's Kafka offset JSON ({"topic": {"0": n}}) flattened to {"topic/0": n}."""
    if isinstance(obj, str):
        obj = json.loads(obj) if obj else {}
    return {f"{t}/{p}": int(o) for t, parts in (obj or {}).items() for p, o in parts.items()}


def _snapshot(obj) -> str:
    """An Iceberg stream offset ({"snapshot_id", "position", ...}) as snapshot/position."""
    if isinstance(obj, str):
        obj = json.loads(obj) if obj else {}
    return f"{obj['snapshot_id']}/{obj['position']}" if obj else "-"


def progress_line(progress: dict) -> str:
    """One line per micro-batch: rows, the offset range read and how far behind the latest it is
    (for an Iceberg table: the snapshot positions read)."""
    ranges, lag = [], 0
    for src in progress.get("sources", []):
        if "snapshot_id" in str(src.get("endOffset")):
            ranges.append(f"snapshots {_snapshot(src.get('startOffset'))}..{_snapshot(src.get('endOffset'))}")
            continue
        start, end = _offsets(src.get("startOffset")), _offsets(src.get("endOffset"))
        latest = _offsets(src.get("latestOffset"))
        for tp in sorted(end):
            ranges.append(f"{tp}:{start.get(tp, '-')}..{end[tp]}")
            lag += max(0, latest.get(tp, end[tp]) - end[tp])
    return (f"batch {progress.get('batchId')}: {progress.get('numInputRows', 0)} rows, "
            f"offsets {' '.join(ranges) or '-'}, lag {lag}")


def watch(query, out=None, poll_s: float = 0.5) -> None:
    """Print each new micro-batch's progress line until the query ends (re-raising its error)."""
    out = out or sys.stdout
    last = -1

    def drain() -> None:
        nonlocal last
        for p in query.recentProgress:
            prog = json.loads(p.json)
            if prog["batchId"] > last:
                last = prog["batchId"]
                print(progress_line(prog), file=out, flush=True)

    try:
        while not query.awaitTermination(poll_s):
            drain()
    except KeyboardInterrupt:
        query.stop()
    drain()
    if query.exception() is not None:
        raise query.exception()


def first_line(exc: BaseException) -> str:
    """The informative line of a (possibly Java) exception."""
    text = str(getattr(exc, "desc", None) or exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("JVM stacktrace", "at ", "Traceback")):
            return line
    return type(exc).__name__


def main(run: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """Run a pipeline; user-facing failures end with `error: <one line>` and exit status 2."""
    try:
        run(argv)
    except (PipelineError, ConnectorMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:  # Spark/py4j errors: one line, not a JVM stack trace
        print(f"error: {type(exc).__name__}: {first_line(exc)}", file=sys.stderr)
        sys.exit(1)
