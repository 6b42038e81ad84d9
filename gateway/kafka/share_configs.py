"""Per-group configs on the GROUP config resource (`semantics.group_configs.CONFIGS`: KIP-932
`share.*`, KIP-1071 `streams.*`): described with their group value (source GROUP_CONFIG) or the
broker's default, altered by IncrementalAlterConfigs."""
from __future__ import annotations

import gateway.kafka.errors as errors
import logging

from cluster.etcd import EtcdError
from gateway.kafka.state import kafka_state
from semantics import topic_configs as tc
from semantics.group_configs import CONFIGS, STRINGS

SOURCE_GROUP = 8  # Kafka's ConfigSource GROUP_CONFIG
PREFIXES = ("share.", "streams.")
log = logging.getLogger("rocketgate.kafka")


def share_config_entries(app, group: str) -> list[tc.Entry]:
    """The share and streams configs of `group`; a default the gateway's flags changed is the
    broker's static config."""
    store = kafka_state(app).group_configs
    own = store.values.get(group, {})
    out = []
    for name, (kafka_default, synonym, _) in CONFIGS.items():
        ctype = tc.STRING if name in STRINGS else tc.INT
        default = store.defaults[name]
        source = tc.SOURCE_DEFAULT if default == kafka_default else tc.SOURCE_STATIC_BROKER
        if name in own:
            out.append(tc.Entry(name, own[name], SOURCE_GROUP, ctype, False,
                                ((name, own[name], SOURCE_GROUP), (synonym, default, source))))
        else:
            out.append(tc.Entry(name, default, source, ctype, False, ((synonym, default, source),)))
    return out


def is_group_config(name: str) -> bool:
    return name.startswith(PREFIXES)


def alter_share_configs(app, group: str, ops: list, validate_only: bool) -> tuple[int, str | None]:
    if not group:
        return errors.INVALID_REQUEST, "Group name must not be empty"
    why = kafka_state(app).group_configs.alter(group, ops, validate_only)
    return (errors.INVALID_CONFIG, why) if why else (errors.NONE, None)


async def publish(app, groups: list[str]) -> None:
    """In a cluster, put these groups' altered configs to etcd before the answer, so the leaders of
    the partitions a share group reads (other gateways, other shards) apply them."""
    shared = kafka_state(app).shared_group_configs
    if shared is None or not groups:
        return
    try:
        await shared.publish(groups)
    except EtcdError as exc:
        log.warning("cluster: group configs of %s not in etcd: %s", groups, exc)
