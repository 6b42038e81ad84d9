"""The feature levels (KIP-584) ApiVersions advertises: each one a promise the gateway keeps.

`group.version` 1 is the KIP-848 consumer group protocol (ConsumerGroupHeartbeat), `share.version` 1
KIP-932 share groups, `streams.version` 1 KIP-1071 streams groups: all served. `transaction.version` is 1
(KIP-890 part 1 semantics, no implicit partition add): level 2 would make Java 4.x producers use
Produce v12 / EndTxn v5, which the gateway does not serve yet. `metadata.version` is the level of
Kafka 4.3 (30): clients only display it.
"""
from __future__ import annotations

# name -> (supported min, supported max, finalized level)
FEATURES = {
    "group.version": (0, 1, 1),
    "metadata.version": (7, 30, 30),
    "share.version": (0, 1, 1),
    "streams.version": (0, 1, 1),
    "transaction.version": (0, 1, 1),
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
