"""RocketMQ meaning over the store: tags, views, delay, transactions, retry/DLQ, offsets, groups."""


def install_services(app) -> None:
    """Attach shared tables and background services to the gateway app."""
    from semantics.offsets import OffsetTable

    app.offsets = OffsetTable(app.store, durable=app.sync_flush)
    app.services.append(_persist_offsets_periodically)


async def _persist_offsets_periodically(app) -> None:
    import trio

    while True:
        await trio.sleep(5)
        app.offsets.persist()
