"""One set of users, access keys, ACLs and delegation tokens for every shard of `--shards N`
(docs/shards.md "Users and ACLs"). Each gateway keeps them in its config dir's files
(security.credentials, security.acl, security.tokens), which it re-reads within a second when they
change; the shards are separate gateways, so without this a user made through one shard was unknown
to the others. Each file's whole content is mirrored under `security/<file>` in the etcd the shards
share: at start etcd's copy wins (the supervisor seeds it from shard 0's files, `seed`), a change
from etcd's watch is written to the local file (and re-read at once), and a local change (an admin
request, `python -m security` on that shard's dir) is put to etcd. The unit is the file: two changes
made through two shards within the same half second keep the later file, the other is lost."""
from __future__ import annotations

import logging
import os

import trio

from cluster.etcd import Etcd, EtcdError, compare_version, op_put
from security import acl, credentials, tokens
from store.config import atomic_write

log = logging.getLogger("rocketgate.cluster")

PREFIX = b"security/"
FILES = (credentials.FILE, acl.FILE, tokens.FILE)
POLL_S = 0.5  # how often the local files are checked for changes to publish
RETRY_S = 1.0  # after etcd broke the watch or did not answer


def _key(name: str) -> bytes:
    return PREFIX + name.encode()


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


async def seed(etcd: Etcd, config_dir: str) -> None:
    """Put each file of `config_dir` that etcd does not hold yet (the supervisor: shard 0's, which
    holds a one-process gateway's users after the move into shard-0)."""
    for name in FILES:
        data = _read(os.path.join(config_dir, name))
        if data is not None:
            await etcd.txn([compare_version(_key(name), 0)], [op_put(_key(name), data)])


def seed_sync(etcd_url: str, config_dir: str) -> None:
    """`seed` from a process without a trio loop (the supervisor, before it starts the shards)."""
    async def run() -> None:
        etcd = Etcd.from_url(etcd_url)
        try:
            await seed(etcd, config_dir)
        finally:
            await etcd.aclose()
    trio.run(run)


class SharedSecurity:
    """The mirror of one gateway's security files (`authentication`: its security.Authentication)."""

    def __init__(self, etcd: Etcd, config_dir: str, authentication) -> None:
        self.etcd = etcd
        self.config_dir = config_dir
        self.authentication = authentication
        self.known: dict[str, bytes | None] = {}  # each file's content as last agreed with etcd

    def _path(self, name: str) -> str:
        return os.path.join(self.config_dir, name)

    def _take(self, name: str, data: bytes) -> None:
        """etcd's content of `name` becomes the local file."""
        self.known[name] = data
        if _read(self._path(name)) != data:
            os.makedirs(self.config_dir, exist_ok=True)
            atomic_write(self._path(name), data, mode=0o600)
            self.authentication.reread()

    async def sync(self) -> int:
        """etcd's files here, this gateway's where etcd has none; the revision to watch after."""
        kvs, revision = await self.etcd.get_prefix(PREFIX)
        held = {kv.key[len(PREFIX):].decode(): kv.value for kv in kvs}
        for name in FILES:
            if name in held:
                self._take(name, held[name])
                continue
            data = _read(self._path(name))
            self.known[name] = data
            if data is not None:
                await self.etcd.txn([compare_version(_key(name), 0)], [op_put(_key(name), data)])
        return revision

    async def _on_events(self, events) -> None:
        for event in events:
            name = event.kv.key[len(PREFIX):].decode()
            if event.type == "PUT" and name in FILES:
                self._take(name, event.kv.value)

    async def _watch(self, revision: int) -> None:
        while True:
            try:
                await self.etcd.watch(PREFIX, revision + 1, self._on_events)
            except EtcdError as exc:
                log.warning("shared security: etcd watch broke (%s); syncing again", exc)
            await trio.sleep(RETRY_S)
            try:
                revision = await self.sync()
            except EtcdError:
                continue

    async def _publish_local_changes(self) -> None:
        while True:
            await trio.sleep(POLL_S)
            for name in FILES:
                data = _read(self._path(name))
                if data is None or data == self.known.get(name):
                    continue
                try:
                    await self.etcd.put(_key(name), data)
                    self.known[name] = data
                except EtcdError as exc:
                    log.warning("shared security: could not publish %s (%s); trying again", name, exc)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        while True:
            try:
                revision = await self.sync()
                break
            except EtcdError as exc:
                log.warning("shared security: etcd did not answer (%s); trying again", exc)
                await trio.sleep(RETRY_S)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch, revision)
            nursery.start_soon(self._publish_local_changes)
            task_status.started()
