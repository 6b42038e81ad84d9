"""The registry's tables, rebuilt from `_schemas` records and nothing else (`apply` one record at a
time, in log order): schemas by global id, each subject's versions, compatibility and mode settings.

This is the lookup API the REST layer and the broker's validation read:
`schema_by_id(id)`, `subject_has_id(subject, id)`, `latest(subject)`, `version(subject, v)`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from codec import schema_registry as wire

log = logging.getLogger("rocketgate.schema_registry")

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
MODES = ("READWRITE", "READONLY", "IMPORT")


@dataclass(frozen=True)
class Schema:
    """A schema as registered under its global id (the same for every subject that has it)."""

    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple = ()  # ((name, subject, version), ...)

    @property
    def identity(self) -> tuple:
        return self.schema_type, self.schema, self.references


@dataclass(frozen=True)
class Version:
    subject: str
    version: int
    schema: Schema
    deleted: bool = False

    @property
    def id(self) -> int:
        return self.schema.id


class RegistryState:
    def __init__(self) -> None:
        self.schemas: dict[int, Schema] = {}
        self.subjects: dict[str, dict[int, Version]] = {}
        self.by_identity: dict[tuple, int] = {}
        self.configs: dict[str | None, str] = {}  # None: the global level
        self.modes: dict[str | None, str] = {}
        self.max_id = 0
        self.skipped = 0  # records that were not Confluent's format (logged, ignored)

    # --- lookups ---------------------------------------------------------------------------------

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return self.schemas.get(schema_id)

    def subject_has_id(self, subject: str, schema_id: int) -> bool:
        """Whether a live (not soft-deleted) version of `subject` has schema `schema_id`."""
        return any(v.id == schema_id and not v.deleted for v in self.subjects.get(subject, {}).values())

    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        return [v for _, v in sorted(self.subjects.get(subject, {}).items()) if deleted or not v.deleted]

    def deleted_versions(self, subject: str) -> list[Version]:
        """The soft-deleted versions (Confluent's `deletedOnly`)."""
        return [v for v in self.versions(subject, True) if v.deleted]

    def latest(self, subject: str, deleted: bool = False) -> Version | None:
        live = self.versions(subject, deleted)
        return live[-1] if live else None

    def version(self, subject: str, version: int) -> Version | None:
        return self.subjects.get(subject, {}).get(version)

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def deleted_subject_names(self) -> list[str]:
        """Subjects whose every version is soft-deleted (Confluent's `deletedOnly`)."""
        return sorted(s for s in self.subjects if self.versions(s, True) and not self.versions(s))

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[Version]:
        return [v for s in sorted(self.subjects) for v in self.versions(s, deleted) if v.id == schema_id]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas whose references name (subject, version)."""
        return sorted({v.id for versions in self.subjects.values() for v in versions.values() if not v.deleted
                       and any(r[1] == subject and r[2] == version for r in v.schema.references)})

    def compatibility(self, subject: str | None) -> str:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, DEFAULT_MODE)

    # --- the log ---------------------------------------------------------------------------------

    def apply(self, key_bytes: bytes | None, value_bytes: bytes | None) -> None:
        """Apply one `_schemas` record; a record that is not Confluent's format is logged and skipped."""
        try:
            key = wire.decode_key(key_bytes)
            value = wire.decode_value(value_bytes)
            getattr(self, f"_apply_{key.keytype.lower()}")(key, value)
        except wire.RecordError as exc:
            self.skipped += 1
            log.warning("_schemas record skipped: %s", exc)

    def _apply_noop(self, key, value) -> None:
        pass

    def _apply_schema(self, key: wire.Key, value: dict | None) -> None:
        versions = self.subjects.setdefault(key.subject, {})
        if value is None:  # permanent delete of the version
            gone = versions.pop(key.version, None)
            if not versions:
                del self.subjects[key.subject]
            self._forget_unused([gone] if gone else [])
            return
        v = wire.decode_schema_value(value)
        if v.subject != key.subject or v.version != key.version:
            raise wire.RecordError(f"SCHEMA value {v.subject}/{v.version} under key {key.subject}/{key.version}")
        schema = self.schemas.get(v.id)
        if schema is None:
            schema = Schema(v.id, v.schema, v.schema_type, v.references)
            self.schemas[v.id] = schema
            self.by_identity.setdefault(schema.identity, v.id)
        self.max_id = max(self.max_id, v.id)
        versions[v.version] = Version(v.subject, v.version, schema, v.deleted)

    def _apply_delete_subject(self, key: wire.Key, value: dict | None) -> None:
        upto = (value or {}).get("version")
        versions = self.subjects.get(key.subject, {})
        for n, v in list(versions.items()):
            if not isinstance(upto, int) or n <= upto:
                versions[n] = Version(v.subject, v.version, v.schema, True)

    def _apply_clear_subject(self, key: wire.Key, value: dict | None) -> None:
        versions = self.subjects.get(key.subject, {})
        gone = [versions.pop(n) for n in [n for n, v in versions.items() if v.deleted]]
        if not versions:
            self.subjects.pop(key.subject, None)
        self._forget_unused(gone)

    def _forget_unused(self, gone: list[Version]) -> None:
        """Schemas no version names any more are gone by id too (their ids are never given again)."""
        used = {v.id for versions in self.subjects.values() for v in versions.values()}
        for v in gone:
            if v.id not in used and self.schemas.pop(v.id, None) is not None:
                self.by_identity.pop(v.schema.identity, None)

    def _apply_config(self, key: wire.Key, value: dict | None) -> None:
        _set(self.configs, key.subject, value, "compatibilityLevel", LEVELS)

    def _apply_mode(self, key: wire.Key, value: dict | None) -> None:
        _set(self.modes, key.subject, value, "mode", MODES)


def _set(table: dict, subject: str | None, value: dict | None, field: str, allowed: tuple) -> None:
    """A CONFIG or MODE record: the setting `field` of `value`, removed by a tombstone."""
    setting = (value or {}).get(field)
    if setting is None:
        table.pop(subject, None)
    elif isinstance(setting, str) and setting.upper() in allowed:
        table[subject] = setting.upper()
    else:
        raise wire.RecordError(f"unknown {field} {setting!r}")
