"""The schema registry's state machine (issue 23): the compacted `_schemas` topic is its only state.

`Registry` (registry.py) serves the operations; `RegistryState` (state.py) holds the tables rebuilt
from the log and the lookups the broker's validation needs; `SchemasLog` (log.py) reads and writes
the topic; `RegistryError` (errors.py) carries Confluent's error codes."""
from semantics.schema_registry.errors import RegistryError
from semantics.schema_registry.log import TOPIC
from semantics.schema_registry.registry import Registry
from semantics.schema_registry.state import RegistryState, Schema, Version

__all__ = ["Registry", "RegistryError", "RegistryState", "Schema", "Version", "TOPIC"]
