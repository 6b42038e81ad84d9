"""The columns of a table topic (docs/tables.md) as an Iceberg schema, rows as an Arrow table, and
the topic's partition spec (semantics.table_configs syntax) as an Iceberg one."""
from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.transforms import (BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform,
                                  TruncateTransform, YearTransform)
from pyiceberg.types import (BinaryType, IntegerType, ListType, LongType, MapType, NestedField, StringType,
                             StructType, TimestamptzType)

from semantics.table_configs import parse_partition_spec

# Columns of every table topic, before the value (field ids are assigned again at table creation).
META_FIELDS = [
    ("key", BinaryType()),
    ("headers", MapType(101, "string", 102, BinaryType(), value_required=False)),
    ("timestamp", TimestamptzType()),
    ("partition", IntegerType()),
    ("offset", LongType()),
    ("tags", StringType()),
    ("keys", ListType(103, StringType(), element_required=False)),
    ("properties", MapType(104, "string", 105, StringType(), value_required=False)),
    ("protocol", StringType()),
    ("msg_id", StringType()),
]
DLQ_FIELDS = [("value", BinaryType()), ("reason", StringType())]


def table_schema(value_type=None) -> Schema:
    """key_value (value binary), a schema mode (value a struct of the decoded fields) or, with
    value_type "dlq", the DLQ table (value binary plus reason)."""
    extra = DLQ_FIELDS if value_type == "dlq" else [("value", BinaryType() if value_type is None else value_type)]
    fields = [NestedField(i + 1, name, typ, required=False) for i, (name, typ) in enumerate(META_FIELDS + extra)]
    return Schema(*fields)


def arrow_table(rows, arrow_schema: pa.Schema, values=None, reasons=None) -> pa.Table:
    """The rows as an Arrow table of `arrow_schema` (the Iceberg table's current schema);
    `values`: decoded values (dicts) in place of the rows' bytes; `reasons`: the DLQ's column."""
    columns = {
        "key": [r.key for r in rows],
        "headers": [r.headers for r in rows],
        "timestamp": [r.timestamp * 1000 for r in rows],
        "partition": [r.partition for r in rows],
        "offset": [r.offset for r in rows],
        "tags": [r.tags for r in rows],
        "keys": [r.keys for r in rows],
        "properties": [r.properties for r in rows],
        "protocol": [r.protocol for r in rows],
        "msg_id": [r.msg_id for r in rows],
        "value": values if values is not None else [r.value for r in rows],
    }
    if reasons is not None:
        columns["reason"] = reasons
    arrays = [pa.array(columns[f.name], type=f.type) for f in arrow_schema]
    return pa.Table.from_arrays(arrays, schema=arrow_schema)


def _transform(name: str, width: int | None):
    return {"identity": IdentityTransform(), "year": YearTransform(), "month": MonthTransform(),
            "day": DayTransform(), "hour": HourTransform()}.get(name) or (
        BucketTransform(width) if name == "bucket" else TruncateTransform(width))


def apply_spec(table, spec_text: str) -> None:
    """Make the table's partition spec the topic's (fields added and removed; data already written
    keeps its old spec, as Iceberg's partition evolution does)."""
    wanted = {f"{column}_{name}" if name != "identity" else column: (name, width, column)
              for name, width, column in parse_partition_spec(spec_text)}
    have = {f.name for f in table.spec().fields}
    if set(wanted) == have:
        return
    with table.update_spec() as update:
        for name in have - set(wanted):
            update.remove_field(name)
        for field_name, (name, width, column) in wanted.items():
            if field_name not in have:
                update.add_field(column, _transform(name, width), field_name)


def is_struct(value_type) -> bool:
    return isinstance(value_type, StructType)
