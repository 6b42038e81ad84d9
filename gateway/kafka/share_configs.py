"""Share-group configs on the GROUP config resource (`semantics.share_groups.CONFIGS`): described
with their group value (source GROUP_CONFIG) or default, altered by IncrementalAlterConfigs."""
from __future__ import annotations

import gateway.kafka.errors as errors
from gateway.kafka.state import kafka_state
from semantics import topic_configs as tc
from semantics.share_groups import CONFIGS

SOURCE_GROUP = 8  # Kafka's ConfigSource GROUP_CONFIG
STRINGS = ("share.auto.offset.reset", "share.isolation.level")


def share_config_entries(app, group: str) -> list[tc.Entry]:
    sg = kafka_state(app).share_groups
    own = sg.configs.get(group, {})
    out = []
    for name, (default, synonym, _) in CONFIGS.items():
        ctype = tc.STRING if name in STRINGS else tc.INT
        if name in own:
            out.append(tc.Entry(name, own[name], SOURCE_GROUP, ctype, False,
                                ((name, own[name], SOURCE_GROUP), (synonym, default, tc.SOURCE_DEFAULT))))
        else:
            out.append(tc.Entry(name, default, tc.SOURCE_DEFAULT, ctype, False, ((synonym, default, tc.SOURCE_DEFAULT),)))
    return out


def alter_share_configs(app, group: str, ops: list, validate_only: bool) -> tuple[int, str | None]:
    if not group:
        return errors.INVALID_REQUEST, "Group name must not be empty"
    why = kafka_state(app).share_groups.alter_configs(group, ops, validate_only)
    return (errors.INVALID_CONFIG, why) if why else (errors.NONE, None)
