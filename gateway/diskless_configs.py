"""Retention changes of diskless topics reach every gateway sharing the bucket (docs/diskless.md,
"Retention changes"): each gateway's janitor applies the retention of its own topic table, so a
`retention.ms` / `retention.bytes` change made through one gateway (Kafka AlterConfigs) is published
as a new version in the bucket (store.diskless.configs) and adopted into the topic table of every
other gateway at its next look, every `interval_s`."""
from __future__ import annotations

import logging

import trio

from semantics.diskless import is_diskless
from store.diskless import configs
from store.objstore.api import ObjectStoreError

log = logging.getLogger("rocketgate")


def _value(v) -> str | None:
    return None if v is None else str(v).strip()


class RetentionSync:
    """Background service: publish this gateway's retention changes of diskless topics, adopt the
    others'. `known[topic]` = (version, configs) last published or adopted here; a change is a
    local value that differs from it, a newer version in the bucket wins over a local change."""

    def __init__(self, app, interval_s: float = 2.0) -> None:
        self.app, self.interval_s = app, interval_s
        self.known: dict[str, tuple[int, dict]] = {}

    def local(self) -> dict[str, dict]:
        out = {}
        for name in self.app.store.topics.names():
            cfg = self.app.store.topics.get(name)
            if is_diskless(cfg):
                out[name] = {k: _value((cfg.attributes or {}).get(k)) for k in configs.KEYS}
        return out

    def sync(self, local: dict[str, dict]) -> dict[str, dict]:
        """(worker thread) Publish the local changes; the configs to adopt, by topic."""
        store, adopt = self.app.diskless.index.store, {}
        for topic, mine in local.items():
            version, remote = configs.latest(store, topic)
            known = self.known.get(topic)
            if remote is not None and (known is None or version > known[0]):
                self.known[topic] = (version, remote)
                if remote != mine:
                    adopt[topic] = remote
            elif known is None:  # nothing in the bucket yet: this gateway's configs are the first version
                if all(v is None for v in mine.values()):
                    self.known[topic] = (0, mine)
                elif configs.publish(store, topic, 1, mine):
                    self.known[topic] = (1, mine)
            elif mine != known[1] and configs.publish(store, topic, known[0] + 1, mine):
                self.known[topic] = (known[0] + 1, mine)  # (lost the version: the winner is adopted next)
        return adopt

    def apply(self, adopt: dict[str, dict]) -> None:
        topics = self.app.store.topics
        for topic, remote in adopt.items():
            cfg = topics.get(topic)
            if cfg is None:
                continue
            attributes = {k: v for k, v in (cfg.attributes or {}).items() if k not in configs.KEYS}
            attributes.update({k: v for k, v in remote.items() if v is not None})
            cfg.attributes = attributes
            topics.update(cfg)
            log.info("diskless topic %s: retention configs from the bucket %s", topic, remote)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(self.interval_s)
            try:
                adopt = await trio.to_thread.run_sync(self.sync, self.local())
            except ObjectStoreError:
                continue  # the store is down: tried again at the next look
            self.apply(adopt)
