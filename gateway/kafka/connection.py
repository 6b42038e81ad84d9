"""Placeholder until the Kafka protocol lands: accept and close."""


async def handle_connection(stream, app) -> None:
    await stream.aclose()
