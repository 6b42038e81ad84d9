"""Where a table topic's Iceberg files live: the data dir (`file://DATA_DIR/tables/warehouse`) or, with
the object-storage tier (--tier-url), the tier's bucket under `--tables-url` (default: the tier's prefix + `tables/`) + `warehouse/` — data
files, manifests and metadata files alike (docs/tables.md, "Warehouse"). Also what the REST catalog
tells readers about reaching that bucket (endpoint, addressing, region and, when the gateway is told
to vend them, the credentials)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

WAREHOUSE_KEY = "warehouse"  # under the tables' prefix (--tables-url, default the tier's + tables/)


@dataclass(frozen=True)
class Warehouse:
    url: str  # file:///... or s3://BUCKET/PREFIX/tables/warehouse
    io: dict = field(default_factory=dict)  # pyiceberg FileIO properties (the writer's)
    readers: dict = field(default_factory=dict)  # what /iceberg hands readers with each table (its `config`)

    @property
    def local(self) -> bool:
        return self.url.startswith("file://")


def local_warehouse(data_dir: str) -> Warehouse:
    root = os.path.abspath(os.path.join(data_dir, "tables", "warehouse"))
    os.makedirs(root, exist_ok=True)
    return Warehouse(f"file://{root}")


def directory_warehouse(root: str) -> Warehouse:
    """The warehouse beside a catalog in a local directory (store.objstore.directory: the shards of
    `--shards N` share `DATA_DIR/shared-tables`, docs/shards.md)."""
    path = os.path.join(os.path.abspath(root), WAREHOUSE_KEY)
    os.makedirs(path, exist_ok=True)
    return Warehouse(f"file://{path}")


def s3_warehouse(object_store, vend_credentials: bool = False) -> Warehouse:
    """The warehouse on the tier's server (`object_store`: store.objstore.s3.S3ObjectStore at the
    tables' bucket and prefix)."""
    loc, access = object_store.location, object_store.access()
    url = f"s3://{loc.bucket}/{loc.key(WAREHOUSE_KEY)}"
    common = {"s3.region": access["region"]}
    if access["endpoint"]:
        common["s3.endpoint"] = access["endpoint"]
    path_style = access["addressing"] == "path"
    secrets = {"s3.access-key-id": access["access_key_id"], "s3.secret-access-key": access["secret_access_key"]}
    if access["session_token"]:
        secrets["s3.session-token"] = access["session_token"]
    io = {**common, **secrets, "s3.force-virtual-addressing": str(not path_style).lower()}
    # pyiceberg reads s3.force-virtual-addressing; Iceberg Java's S3FileIO s3.path-style-access and
    # client.region; DuckDB takes the endpoint, region and keys (docs/tables.md)
    readers = {**common, "client.region": access["region"], "s3.path-style-access": str(path_style).lower(),
               "s3.force-virtual-addressing": str(not path_style).lower()}
    if vend_credentials:
        readers.update(secrets)
    return Warehouse(url, io, readers)
