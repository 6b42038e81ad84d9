"""The schema registry's REST API (`--schema-registry-port`): Confluent's v1 paths and bodies over the
state machine in semantics/schema_registry (docs/schema-registry.md)."""
