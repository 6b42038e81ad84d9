"""Iceberg table topics (docs/tables.md): writers per table topic and the REST catalog facade."""
