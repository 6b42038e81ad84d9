"""The feature levels (KIP-584) ApiVersions advertises: each one a promise the gateway keeps.

`group.version` 1 is the KIP-848 consumer group protocol (ConsumerGroupHeartbeat), `share.version` 1
KIP-932 share groups, `streams.version` 1 KIP-1071 streams groups: all served. `transaction.version` 2
is KIP-890 part 2: Java 4.x producers then add partitions implicitly by Produce v12+, add offsets by
TxnOffsetCommit v5 and end with EndTxn v5, which bumps the epoch (gateway/kafka/txn.py); older clients
keep v1 (AddPartitionsToTxn first, a produce to a partition not added refused). `metadata.version` is the level of
Kafka 4.3 (30): clients only display it.

UpdateFeatures (57) is answered as Kafka 4.3's controller answers it (its checks and messages, the whole
request refused at the first bad update), except that a level the gateway supports but has not finalized
is refused too: the levels are fixed, so only an update to the finalized level (a no-op) succeeds.
"""
from __future__ import annotations

import gateway.kafka.authz as authz
import gateway.kafka.errors as errors
from codec.kafka import apis
from gateway.kafka.registry import NODE_ID, RequestContext, handler
from security.acl import Operation as Op

# name -> (supported min, supported max, finalized level)
FEATURES = {
    "group.version": (0, 1, 1),
    "metadata.version": (7, 30, 30),
    "share.version": (0, 1, 1),
    "streams.version": (0, 1, 1),
    "transaction.version": (0, 2, 2),
}
FINALIZED_EPOCH = 1  # the levels never change while a gateway runs


def api_versions_features(version: int) -> dict:
    """The feature fields of an ApiVersions (v3+) answer. Below v4 a supported feature whose minimum is 0
    is left out, as Kafka does (KIP-1022: older clients cannot parse a 0 minimum)."""
    supported = [{"name": name, "min_version": lo, "max_version": hi}
                 for name, (lo, hi, _) in FEATURES.items() if version >= 4 or lo > 0]
    finalized = [{"name": name, "min_version_level": level, "max_version_level": level}
                 for name, (_, _, level) in FEATURES.items()]
    return {"supported_features": supported, "finalized_features_epoch": FINALIZED_EPOCH,
            "finalized_features": finalized}


UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # KIP-778 upgrade types (v1+)


def update_problem(name: str, level: int, upgrade_type: int) -> str | None:
    """Why the update of feature `name` to `level` is refused, in Kafka's words; None when it is the
    finalized level already."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if name not in FEATURES:
        return f"Local controller {NODE_ID} does not support this feature."
    lo, hi, finalized = FEATURES[name]
    if not lo <= level <= hi:
        return f"Local controller {NODE_ID} only supports versions {lo}-{hi}"
    if level < finalized and upgrade_type == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.")
    if level != finalized:
        return f"The gateway's feature levels are fixed: {name} stays at {finalized}."
    return None


@handler(apis.UPDATE_FEATURES)
async def update_features(ctx: RequestContext):
    updates = ctx.request["feature_updates"]
    code = authz.cluster_error(ctx, Op.ALTER)
    message = authz.MESSAGES.get(code)
    for u in updates if not code else ():
        # v0 has no upgrade type: Kafka 4.3 refuses its downgrades whatever allow_downgrade says
        problem = update_problem(u["feature"], u["max_version_level"], u["upgrade_type"] if ctx.version else UPGRADE)
        if problem is not None:
            code = errors.INVALID_UPDATE_VERSION
            message = ("The update failed for all features since the following feature had an error: Invalid "
                       f"update version {u['max_version_level']} for feature {u['feature']}. {problem}")
            break
    results = [] if code else [{"feature": u["feature"], "error_code": errors.NONE, "error_message": "NONE"}
                               for u in updates]
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "results": results}
