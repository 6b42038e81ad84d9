"""The trio server: listeners, request routing, background services."""
