"""Kafka listener: one task per connection, requests answered in order."""
from gateway.kafka.connection import handle_connection

__all__ = ["handle_connection"]
