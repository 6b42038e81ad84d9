"""RocketMQ meaning over the store: tags, views, delay, transactions, retry/DLQ, offsets, groups."""


def install_services(app) -> None:
    """Attach shared tables and background services to the gateway app."""
    from semantics.offsets import OffsetTable
    from semantics.views import Views

    app.views = Views(app.store)  # a store dispatcher: registered before the replay, to rebuild views
    app.store.recover()  # a no-op when the store was opened recovered
    app.offsets = OffsetTable(app.store, durable=app.sync_flush)
    app.services.append(_persist_offsets_periodically)
    _install_rocketmq_semantics(app)


async def _persist_offsets_periodically(app) -> None:
    import trio

    while True:
        await trio.sleep(5)
        app.offsets.persist()


def _install_rocketmq_semantics(app) -> None:
    """Delay levels, the delay scheduler, the transaction log + check service.

    Settings come from optional GatewayConfig attributes (defaults are RocketMQ's):
    `message_delay_level` (str), `transaction_timeout_ms` (6000),
    `transaction_check_interval_ms` (30000), `transaction_check_max` (15)."""
    from semantics.delay import DelayScheduler
    from semantics.routing import DEFAULT_DELAY_LEVELS, DelayLevels, ensure_system_topics
    from semantics.transactions import Transactions

    cfg = app.config
    app.delay_levels = DelayLevels(getattr(cfg, "message_delay_level", None) or DEFAULT_DELAY_LEVELS)
    ensure_system_topics(app.store, app.delay_levels)
    app.delay = DelayScheduler(app.store, app.delay_levels)
    app.transactions = Transactions(
        app.store, app.delay_levels,
        timeout_ms=getattr(cfg, "transaction_timeout_ms", 6000),
        check_interval_ms=getattr(cfg, "transaction_check_interval_ms", 30_000),
        check_max=getattr(cfg, "transaction_check_max", 15))
    app.services.append(app.delay.run)
    app.services.append(app.transactions.run)
