"""One set of group configs (KIP-932 `share.*`, KIP-1071 `streams.*`, `semantics.group_configs`)
for every gateway of a cluster, so every shard of `--shards N`. A group's configs are set through
whichever gateway the admin client asks (any broker), but the share partitions that read them
(`share.auto.offset.reset`, the lock duration, the delivery limit) live on each partition's leader:
without this a share group set to `earliest` at shard 0 started at the end on shard 1.

Each group's configs are a key `group-configs/<group>` (JSON {name: value}) in the cluster's etcd;
an alter is answered once etcd has it (`publish`), every gateway follows the key through the view's
watch and keeps its copy in its store's `config/shareGroupConfigs.json` as one process does. At
start etcd's copy wins; a group etcd does not hold is published from the local file (a one-process
data dir moved into shard 0)."""
from __future__ import annotations

import json
import logging

from cluster import model

log = logging.getLogger("rocketgate.cluster")

PREFIX = model.PREFIX + b"group-configs/"


def _key(group: str) -> bytes:
    return PREFIX + group.encode()


class SharedGroupConfigs:
    """Keeps `configs` (a GroupConfigs) and the cluster's etcd in step."""

    def __init__(self, configs, etcd) -> None:
        self.configs, self.etcd = configs, etcd

    async def load(self) -> None:
        """Take etcd's configs over the local ones; publish local groups etcd does not hold."""
        kvs, _revision = await self.etcd.get_prefix(PREFIX)
        held = set()
        for kv in kvs:
            group = kv.key[len(PREFIX):].decode()
            held.add(group)
            self.follow(kv.key, kv.value)
        await self.publish([g for g, values in self.configs.values.items() if values and g not in held])

    def follow(self, key: bytes, value: bytes | None) -> None:
        """A group's key changed in etcd (None: deleted): the local copy follows."""
        group = key[len(PREFIX):].decode()
        values = json.loads(value) if value else {}
        if self.configs.values.get(group, {}) != values:
            self.configs.values[group] = values
            self.configs.persist()

    async def publish(self, groups) -> None:
        """Put these groups' local configs to etcd (deleted when none are left)."""
        for group in groups:
            values = self.configs.values.get(group) or {}
            if values:
                await self.etcd.put(_key(group), json.dumps(values, sort_keys=True).encode())
            else:
                await self.etcd.delete(_key(group))
