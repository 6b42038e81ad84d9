"""schema_decode: decode a schema-registry framed Avro topic with from_avro, filter, write framed Avro back.

A batch job over a topic whose values are Confluent-framed Avro (magic byte 0, 4-byte schema id,
payload), as AvroSerializer writes them. The distinct schema ids are read from the frames; each id's
writer schema comes from the registry (`GET /schemas/ids/{id}`), and its rows are decoded with Spark's
stock `from_avro` (spark-avro) into the reader schema: the latest version of `--subject` (default
`<topic>-value`), so records written with older compatible versions get its defaults. `--where` keeps
the rows a Spark SQL condition over the decoded fields accepts; the rows are written with `to_avro` to
`--target`, framed with the reader schema's id registered under `<target>-value`. Keys and headers are
kept.
"""
from __future__ import annotations

import json
import urllib.request

from pyspark.sql import functions as F

from spark import source
from spark.admin import Admin, PipelineError
from spark.pipelines import common

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    """The few registry calls the pipeline makes, over plain HTTP (the gateway's --schema-registry-port)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _call(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": CONTENT_TYPE})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            raise PipelineError(f"schema registry {path}: HTTP {exc.code} {exc.read()[:200]!r}") from None
        except OSError as exc:
            raise PipelineError(f"schema registry at {self.url} unreachable: {exc}") from None

    def schema(self, schema_id: int) -> str:
        found = self._call(f"/schemas/ids/{schema_id}")
        if found.get("schemaType", "AVRO") != "AVRO":
            raise PipelineError(f"schema id {schema_id} is {found.get('schemaType')}, not AVRO")
        return found["schema"]

    def latest(self, subject: str) -> dict:
        return self._call(f"/subjects/{subject}/versions/latest")

    def register(self, subject: str, schema: str) -> int:
        return self._call(f"/subjects/{subject}/versions", {"schema": schema})["id"]


def build_parser():
    p = common.parser("schema_decode", __doc__.splitlines()[0])
    p.add_argument("--topic", required=True, help="source topic of framed Avro values")
    p.add_argument("--target", required=True, help="topic to write framed Avro to (created if missing)")
    p.add_argument("--registry", required=True, metavar="URL", help="the schema registry, e.g. http://127.0.0.1:8081")
    p.add_argument("--subject", default=None, help="reader schema: latest version of this subject (default <topic>-value)")
    p.add_argument("--where", default=None, help="Spark SQL condition over the decoded fields, e.g. 'age >= 18'")
    return p


def frame_header(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big", signed=True)


def run(argv=None) -> None:
    from pyspark.sql.avro.functions import from_avro, to_avro

    args = build_parser().parse_args(argv)
    registry = Registry(args.registry)
    reader = registry.latest(args.subject or f"{args.topic}-value")["schema"]
    spark = common.start(args, "schema_decode", [args.topic])
    with Admin(spark, args.bootstrap) as admin:
        admin.ensure_topic(args.target, admin.partitions(args.topic))
    raw = source.read(spark, args.bootstrap, args.topic).where(F.col("value").isNotNull()).select(
        "key", "value", "headers",
        F.when(F.substring("value", 1, 1) == F.lit(b"\x00"),
               F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("long")).alias("schema_id")).cache()
    ids = sorted(r["schema_id"] for r in raw.select("schema_id").distinct().collect())
    if None in ids:
        raise PipelineError(f"{args.topic} holds values that are not framed with a schema id")
    decoded = None
    for schema_id in ids:  # each writer schema resolved into the one reader schema
        part = raw.where(F.col("schema_id") == schema_id).select(
            "key", "headers", from_avro(F.expr("substring(value, 6, length(value) - 5)"), registry.schema(schema_id),
                                        {"avroSchema": reader, "mode": "FAILFAST"}).alias("record"))
        decoded = part if decoded is None else decoded.unionByName(part)
    if decoded is None:
        print(f"no records in {args.topic}", flush=True)
        return
    fields = decoded.select("record.*").columns
    flat = decoded.select("key", "headers", "record.*")
    if args.where:
        flat = flat.where(F.expr(args.where))
    out_id = registry.register(f"{args.target}-value", reader)
    framed = F.concat(F.lit(frame_header(out_id)), to_avro(F.struct(*[F.col(f"`{f}`") for f in fields]), reader))
    written = flat.select("key", "headers", framed.alias("value"))
    written.write.format("kafka").option("kafka.bootstrap.servers", args.bootstrap).option(
        "topic", args.target).save()
    print(f"decoded {raw.count()} records of {args.topic} (schema ids {ids}), wrote {written.count()} to "
          f"{args.target} with schema id {out_id}", flush=True)
    raw.unpersist()


if __name__ == "__main__":
    common.main(run)
