"""Table topics tests: a gateway with its HTTP port (the REST catalog at /iceberg), helpers to make
table topics, produce, and read the tables back through pyiceberg's RestCatalog and DuckDB."""
from __future__ import annotations

import os
import time

import pytest

from gateway_process import GatewayProcess, free_port, stop_all, wait_port

COMMIT_MS = "300"


class TableGateway(GatewayProcess):
    def __init__(self, data_dir: str, extra_args: list[str] | None = None) -> None:
        self.http_port = free_port()
        super().__init__(data_dir, extra_args=["--http-port", str(self.http_port), *(extra_args or [])])

    def start(self) -> "TableGateway":
        super().start()
        wait_port(self.http_port, proc=self.proc)
        return self

    @property
    def catalog_uri(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/iceberg"


@pytest.fixture
def table_gateway(tmp_path):
    started: list[TableGateway] = []

    def make(extra_args=None) -> TableGateway:
        g = TableGateway(str(tmp_path / "data"), extra_args)
        started.append(g)
        return g.start()

    yield make
    stop_all(started)


def create_table_topic(gw, topic: str, partitions: int = 2, **configs) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=gw.kafka_bootstrap)
    try:
        cfg = {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": COMMIT_MS}
        cfg.update({k.replace("_", "."): v for k, v in configs.items()})
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=cfg)])
    finally:
        admin.close()


def rest_catalog(gw):
    from pyiceberg.catalog.rest import RestCatalog
    return RestCatalog("rocketgate", uri=gw.catalog_uri)


def read_rows(gw, table: str) -> list[dict]:
    """Every row of rocketgate.<table> through pyiceberg's RestCatalog ([] while it does not exist)."""
    from pyiceberg.exceptions import NoSuchTableError
    try:
        t = rest_catalog(gw).load_table(("rocketgate", table))
    except NoSuchTableError:
        return []
    return t.scan().to_arrow().to_pylist()


def wait_rows(gw, table: str, count: int, timeout: float = 60.0) -> list[dict]:
    """The table's rows once it has at least `count` (AssertionError with what it has after `timeout`)."""
    deadline = time.monotonic() + timeout
    rows = []
    while time.monotonic() < deadline:
        rows = read_rows(gw, table)
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"table {table} has {len(rows)} rows, not {count}:\n{gw.log()}")


def duckdb_connection(gw):
    """A DuckDB connection with the iceberg extension loaded from its PyPI package (no network) and
    the gateway's catalog attached as `rg`."""
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for package, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_httpfs, "httpfs"),
                          (duckdb_extension_iceberg, "iceberg")):
        con.load_extension(os.path.join(os.path.dirname(package.__file__), "extensions", f"v{duckdb.__version__}",
                                        f"{name}.duckdb_extension"))
    con.execute(f"ATTACH 'rocketgate' AS rg (TYPE iceberg, ENDPOINT '{gw.catalog_uri}', AUTHORIZATION_TYPE 'none')")
    return con
