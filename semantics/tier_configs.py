"""Kafka's checks of a tiered topic's configs taken together (LogConfig.validateTopicLogConfigValues):
what stays local is at most what is kept at all, a compacted topic is not tiered, and remote storage
is not turned off without deleting the remote data. The per-config checks are topic_configs.problem."""
from __future__ import annotations

from semantics import topic_configs as tc

TURN_OFF = ("It is invalid to disable remote storage without deleting remote data. If you want to keep the "
            "remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. "
            "If you want to disable remote storage and delete all remote data, please set "
            "`remote.storage.enable=false,remote.log.delete.on.disable=true`.")


def _value(configs: dict, name: str) -> str:
    return str(configs.get(name, tc.TOPIC_CONFIGS[name].default)).strip()


def _local_problem(configs: dict, total: str, local: str, unlimited: int) -> str | None:
    whole, kept = int(_value(configs, total)), int(_value(configs, local))
    if whole > unlimited and kept != -2:
        if kept == -1:
            return f"Invalid value {kept} for configuration {local}: Value must not be -1 as {total} value is set as {whole}."
        if kept > whole:
            return f"Invalid value {kept} for configuration {local}: Value must not be more than {total} property value: {whole}"
    return None


def problem(existing: dict, configs: dict) -> str | None:
    """The INVALID_CONFIG message for a topic's new configs (each already valid alone), or None."""
    enabled = _value(configs, "remote.storage.enable").lower() == "true"
    if not enabled:
        was = _value(existing, "remote.storage.enable").lower() == "true"
        if was and _value(configs, "remote.log.delete.on.disable").lower() != "true":
            return TURN_OFF
        return None
    if "compact" in _value(configs, "cleanup.policy").lower():
        return "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list."
    return (_local_problem(configs, "retention.bytes", "local.retention.bytes", -1)
            or _local_problem(configs, "retention.ms", "local.retention.ms", -1)
            or _copy_disabled_problem(configs))


def _copy_disabled_problem(configs: dict) -> str | None:
    """With remote.log.copy.disable nothing more goes to the tier: the local limits are the total ones."""
    if _value(configs, "remote.log.copy.disable").lower() != "true":
        return None
    for kind in ("bytes", "ms"):
        local = int(_value(configs, f"local.retention.{kind}"))
        if local != -2 and local != int(_value(configs, f"retention.{kind}")):
            return (f"When `remote.log.copy.disable` is set to true, the `local.retention.{kind}` and "
                    f"`retention.{kind}` must be set to the identical value because there will be no more logs "
                    "copied to the remote storage.")
    return None
