"""The registry's operations: each read catches up with `_schemas` first; each write is decided on the
caught-up state, appended as records and applied from the log, one write at a time (`_writing`), so ids
come from exactly one writer per gateway. Refusals raise `RegistryError` with Confluent's codes."""
from __future__ import annotations

import trio

import semantics.schema_registry.errors as err
from codec import schema_registry as wire
from semantics.schema_formats import Parsed, SchemaError, module
import semantics.schema_registry.compatibility as compatibility
import semantics.schema_registry.references as references
from semantics.schema_registry.log import SchemasLog, ensure_topic
from semantics.schema_registry.state import LEVELS, MODES, RegistryState, Schema, Version

MAX_ID = 2**31 - 1


class Registry:
    def __init__(self, store, flow=None, durable=None, replicated=None) -> None:
        self.state = RegistryState()
        self.log = SchemasLog(store, self.state, flow, durable, replicated)
        self._writing = trio.Lock()
        self._parsed: dict[int, Parsed] = {}  # by schema id: parsing is the costly part

    def start(self, create: bool = True) -> None:
        """Replay `_schemas` (the registry's whole state), creating it first when `create` (alone; a
        cluster creates it at its first request, once the members are up to hold its replicas)."""
        if create:
            ensure_topic(self.log.store)
        self.log.catch_up()

    def fresh(self) -> RegistryState:
        """The state with every record in the log applied (a cluster peer may have written some)."""
        self.log.catch_up()
        return self.state

    # --- lookups the broker uses -------------------------------------------------------------------

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return self.fresh().schema_by_id(schema_id)

    def subject_has_id(self, subject: str, schema_id: int) -> bool:
        return self.fresh().subject_has_id(subject, schema_id)

    def latest(self, subject: str) -> Version | None:
        return self.fresh().latest(subject)

    def parsed(self, schema: Schema, refs: dict[str, str] | None = None) -> Parsed:
        """The schema parsed by its format (cached by id); SchemaError if it no longer parses. `refs`:
        its references resolved elsewhere (learnt from the registry leader), else from this state."""
        cached = self._parsed.get(schema.id)
        if cached is None:
            refs = references.resolve(self.state, schema.references) if refs is None else refs
            cached = _parse(schema.schema_type, schema.schema, refs)
            self._parsed[schema.id] = cached
        return cached

    # --- reads -----------------------------------------------------------------------------------

    def subject_versions(self, subject: str, deleted: bool = False, deleted_only: bool = False) -> list[Version]:
        """The subject's versions; `deleted_only` (winning over `deleted`, as Confluent's): the
        soft-deleted ones of a subject that exists, deleted versions counted."""
        state = self.fresh()
        versions = state.versions(subject, deleted or deleted_only)
        if not versions:
            raise err.subject_not_found(subject)
        return state.deleted_versions(subject) if deleted_only else versions

    def get_version(self, subject: str, version: str | int, deleted: bool = False) -> Version:
        state = self.fresh()
        if not state.versions(subject, deleted):  # a soft-deleted subject is not found, as Confluent's
            raise err.subject_not_found(subject)
        if version_number(version) == -1:
            found = state.latest(subject, deleted)
        else:
            found = state.version(subject, version_number(version))
            found = found if found is not None and (deleted or not found.deleted) else None
        if found is None:
            raise err.version_not_found(version)
        return found

    def lookup(self, subject: str, body: dict, normalize: bool, deleted: bool = False) -> Version:
        state = self.fresh()
        schema_type, text, refs = _schema_fields(body)
        refs = references.pin_latest(state, refs)
        parsed = _parse(schema_type, text, references.resolve(state, refs))
        if not state.versions(subject, deleted=True):
            raise err.subject_not_found(subject)
        found = self._matching(state.versions(subject, deleted), parsed, refs, normalize)
        if found is not None:
            return found
        raise err.schema_not_found()

    def _matching(self, versions: list[Version], parsed: Parsed, refs: tuple, normalize: bool) -> Version | None:
        """The first of `versions` whose schema is `parsed` (same text as stored, canonical or, with
        `normalize`, normalized; a stored text another registry wrote is parsed to compare)."""
        for v in versions:
            schema = v.schema
            if schema.schema_type != parsed.schema_type or schema.references != refs:
                continue
            if schema.schema in (parsed.canonical, parsed.normalized):
                return v
            try:
                mine = self.parsed(schema)
            except (SchemaError, err.RegistryError):
                continue
            if mine.canonical == parsed.canonical or (normalize and mine.normalized == parsed.normalized):
                return v
        return None

    # --- writes ----------------------------------------------------------------------------------

    async def register(self, subject: str, body: dict, normalize: bool = False) -> Version:
        """The version of `subject` that has `body`'s schema: the existing one, else a new one."""
        async with self._writing:
            state = self.fresh()
            mode = state.mode(subject)
            if mode == "READONLY":
                raise err.not_permitted(f"Subject {subject} is in read-only mode")
            schema_type, text, refs = _schema_fields(body)
            wanted_id, wanted_version = body.get("id"), body.get("version")
            if wanted_id is not None and mode != "IMPORT":
                raise err.not_permitted(f"Subject {subject} is not in import mode")
            refs = references.pin_latest(state, refs)
            parsed = _parse(schema_type, text, references.resolve(state, refs))
            stored = parsed.normalized if normalize else parsed.canonical
            identity = (parsed.schema_type, stored, refs)
            if mode == "IMPORT":
                return await self._import(subject, identity, wanted_id, wanted_version)
            live = state.versions(subject)
            found = self._matching(live, parsed, refs, normalize)
            if found is not None:
                return found
            problems = self._compat_errors(state.compatibility(subject), parsed, live)
            if problems:
                raise err.incompatible(problems)
            schema_id = state.by_identity.get(identity) or state.max_id + 1
            if schema_id > MAX_ID:
                raise err.store_error("schema ids exhausted")
            version = max(state.subjects.get(subject, {}) or [0]) + 1
            await self._write_schema(subject, version, Schema(schema_id, stored, parsed.schema_type, refs))
            return self.state.version(subject, version)

    async def _import(self, subject: str, identity: tuple, wanted_id, wanted_version) -> Version:
        state = self.state
        if wanted_id is None or isinstance(wanted_id, bool) or not isinstance(wanted_id, int) or \
                not 1 <= wanted_id <= MAX_ID:
            raise err.invalid_schema("IMPORT mode needs an integer schema id between 1 and 2^31-1")
        existing = state.schema_by_id(wanted_id)
        if existing is not None and existing.identity != identity:
            raise err.not_permitted(f"Overwrite new schema with id {wanted_id} is not permitted.")
        if wanted_version is None:
            version = max(state.subjects.get(subject, {}) or [0]) + 1
        else:
            version = version_number(wanted_version)
            if version == -1:
                raise err.invalid_version(wanted_version)
        old = state.version(subject, version)
        if old is not None and old.schema.identity != identity:
            raise err.not_permitted(f"Overwrite new schema with version {version} is not permitted.")
        schema_type, text, refs = identity
        await self._write_schema(subject, version, Schema(wanted_id, text, schema_type, refs))
        return self.state.version(subject, version)

    async def _write_schema(self, subject: str, version: int, schema: Schema, deleted: bool = False) -> None:
        key = wire.encode_key(wire.Key("SCHEMA", subject, version))
        value = wire.encode_schema_value(wire.SchemaValue(subject, version, schema.id, schema.schema,
                                                          schema.schema_type, schema.references, deleted))
        await self.log.append([(key, value)])

    def _compat_errors(self, level: str, parsed: Parsed, live: list[Version]) -> list[str]:
        against = live if level.endswith("_TRANSITIVE") else live[-1:]
        try:
            return compatibility.errors(level, parsed, [self.parsed(v.schema) for v in against])
        except SchemaError as exc:
            return [f"an earlier version no longer parses: {exc}"]

    def check_compatibility(self, subject: str, version: str | None, body: dict,
                            normalize: bool = False) -> list[str]:
        """Why `body`'s schema may not follow `version` (None: every version the level names)."""
        state = self.fresh()
        schema_type, text, refs = _schema_fields(body)
        refs = references.pin_latest(state, refs)
        parsed = _parse(schema_type, text, references.resolve(state, refs))
        live = state.versions(subject)
        level = state.compatibility(subject)
        if version is None:
            return self._compat_errors(level, parsed, live)
        if version_number(version) == -1 and not live:
            return []
        old = self.get_version(subject, version)
        return self._compat_errors(level.removesuffix("_TRANSITIVE"), parsed, [old])

    async def delete_version(self, subject: str, version: str, permanent: bool) -> int:
        async with self._writing:
            state = self.fresh()
            self._writable(subject)
            if not state.versions(subject, deleted=True):
                raise err.subject_not_found(subject)
            number = version_number(version)
            found = state.latest(subject, deleted=permanent) if number == -1 else state.version(subject, number)
            if found is None:
                raise err.version_not_found(version)
            if permanent:
                if not found.deleted:
                    raise err.version_not_soft_deleted(subject, found.version)
                key = wire.encode_key(wire.Key("SCHEMA", subject, found.version))
                last = len(state.versions(subject, deleted=True)) == 1
                await self.log.append([(key, None), *(self._settings_tombstones(state, subject) if last else [])])
                return found.version
            if found.deleted:
                raise err.version_soft_deleted(subject, found.version)
            users = state.referenced_by(subject, found.version)
            if users:
                raise err.reference_exists(subject, found.version, users)
            await self._write_schema(subject, found.version, found.schema, deleted=True)
            return found.version

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        async with self._writing:
            state = self.fresh()
            self._writable(subject)
            every = state.versions(subject, deleted=True)
            if not every:
                raise err.subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            if permanent:
                if live:
                    raise err.subject_not_soft_deleted(subject)
                await self.log.append([*((wire.encode_key(wire.Key("SCHEMA", subject, v.version)), None)
                                         for v in every), *self._settings_tombstones(state, subject)])
                return [v.version for v in every]
            if not live:
                raise err.subject_soft_deleted(subject)
            for v in live:
                users = state.referenced_by(subject, v.version)
                if users:
                    raise err.reference_exists(subject, v.version, users)
            await self.log.append([(wire.encode_key(wire.Key("DELETE_SUBJECT", subject)),
                                    wire.encode_delete_subject_value(subject, live[-1].version))])
            return [v.version for v in live]

    @staticmethod
    def _settings_tombstones(state: RegistryState, subject: str) -> list[tuple]:
        """A subject gone for good takes its compatibility level and mode with it (as Confluent's
        registry does on a permanent delete of the subject or of its last version)."""
        return [(wire.encode_key(wire.Key(keytype, subject)), None)
                for keytype, table in (("CONFIG", state.configs), ("MODE", state.modes)) if subject in table]

    def _writable(self, subject: str) -> None:
        if self.state.mode(subject) == "READONLY":
            raise err.not_permitted(f"Subject {subject} is in read-only mode")

    async def set_config(self, subject: str | None, level) -> str:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise err.invalid_compatibility(level)
        async with self._writing:
            self.fresh()
            await self.log.append([(wire.encode_key(wire.Key("CONFIG", subject)),
                                    wire.encode_config_value(level.upper()))])
            return level.upper()

    async def delete_config(self, subject: str | None) -> str:
        """Remove a subject's level (the global one: back to the default); the level it had."""
        async with self._writing:
            state = self.fresh()
            if subject is not None and subject not in state.configs:
                if not state.versions(subject, deleted=True):
                    raise err.subject_not_found(subject)
                raise err.compatibility_not_configured(subject)
            previous = state.compatibility(subject)
            await self.log.append([(wire.encode_key(wire.Key("CONFIG", subject)), None)])
            return previous

    async def set_mode(self, subject: str | None, mode, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise err.invalid_mode(mode)
        async with self._writing:
            state = self.fresh()
            mode = mode.upper()
            if mode == "IMPORT" and not force:
                taken = state.versions(subject) if subject is not None else state.subject_names()
                if taken:
                    raise err.not_permitted("Cannot import since found existing subjects")
            await self.log.append([(wire.encode_key(wire.Key("MODE", subject)), wire.encode_mode_value(mode))])
            return mode

    async def delete_mode(self, subject: str | None) -> str:
        async with self._writing:
            state = self.fresh()
            if subject is not None and subject not in state.modes:
                raise err.mode_not_configured(subject)
            previous = state.mode(subject)
            await self.log.append([(wire.encode_key(wire.Key("MODE", subject)), None)])
            return previous


def version_number(version) -> int:
    """A version as given (int, "latest", "-1", "3"); -1 for latest; 42202 otherwise."""
    if isinstance(version, int) and not isinstance(version, bool):
        number = version
    elif isinstance(version, str) and version == "latest":
        return -1
    elif isinstance(version, str) and version.lstrip("-").isdigit() and len(version) < 12:
        number = int(version)
    else:
        raise err.invalid_version(version)
    if number == -1 or 1 <= number <= MAX_ID:
        return number
    raise err.invalid_version(version)


def _schema_fields(body) -> tuple[str, str, tuple]:
    if not isinstance(body, dict):
        raise err.invalid_schema("the request body must be a JSON object")
    text, schema_type = body.get("schema"), body.get("schemaType", "AVRO")
    if not isinstance(text, str) or not text.strip():
        raise err.invalid_schema("Empty schema")
    if not isinstance(schema_type, str):
        raise err.invalid_schema(f"Invalid schemaType {schema_type!r}")
    return schema_type.upper(), text, references.parse_references(body.get("references"))


def _parse(schema_type: str, text: str, refs: dict[str, str]) -> Parsed:
    try:
        fmt = module(schema_type)
    except SchemaError as exc:
        raise err.invalid_schema(str(exc)) from None
    except ImportError:
        raise err.invalid_schema(f"Schema type {schema_type} cannot be served: its format module does not load") from None
    try:
        return fmt.parse(text, refs)
    except SchemaError as exc:
        raise err.invalid_schema(str(exc)) from None
    except RecursionError:
        raise err.invalid_schema("Invalid schema: nested too deeply") from None
