"""Synchronous facade for scripts: the async clients run on one background trio thread."""
from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading

import trio

from client.admin import AsyncAdmin
from client.lite_pull_consumer import AsyncLitePullConsumer
from client.producer import AsyncProducer, AsyncTransactionProducer
from client.push_consumer import AsyncPushConsumer

log = logging.getLogger("rocketgate.client")


class _Loop:
    """The process-wide trio thread hosting every synchronous client."""

    _instance: "_Loop | None" = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> "_Loop":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        ready = threading.Event()

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                self.token = trio.lowlevel.current_trio_token()
                ready.set()
                await trio.sleep_forever()

        self.thread = threading.Thread(target=trio.run, args=(main,), name="rocketgate-client", daemon=True)
        self.thread.start()
        ready.wait()

    def run(self, afn, *args, **kw):
        return trio.from_thread.run(functools.partial(afn, *args, **kw), trio_token=self.token)

    def run_sync(self, fn, *args, **kw):
        return trio.from_thread.run_sync(functools.partial(fn, *args, **kw), trio_token=self.token)

    def submit(self, afn, *args, callback=None, **kw) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()

        async def task() -> None:
            try:
                fut.set_result(await afn(*args, **kw))
            except Exception as exc:
                fut.set_exception(exc)
            if callback is not None:
                try:
                    await trio.to_thread.run_sync(callback, fut)
                except Exception:
                    log.exception("send callback failed")

        self.run_sync(self.nursery.start_soon, task)
        return fut

    def host(self, impl) -> trio.CancelScope:
        """Start `impl` in its own guarded nursery; later failures are logged, not fatal to the loop."""
        async def guarded(task_status=trio.TASK_STATUS_IGNORED) -> None:
            started = False
            with trio.CancelScope() as scope:
                try:
                    async with trio.open_nursery() as nursery:
                        await impl.start(nursery)
                        started = True
                        task_status.started(scope)
                        await trio.sleep_forever()
                except Exception as exc:
                    if not started:
                        # The caller of start() sees the client's own error, not trio's wrapping.
                        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                            exc = exc.exceptions[0]
                        raise exc from None
                    log.exception("client %r failed", impl)
        return self.run(self.nursery.start, guarded)


def _async(name: str):
    def method(self, *args, **kw):
        return self._loop.run(getattr(self._impl, name), *args, **kw)
    method.__name__ = name
    method.__doc__ = f"Blocking call of the async client's `{name}`."
    return method


def _plain(name: str):
    def method(self, *args, **kw):
        return self._loop.run_sync(getattr(self._impl, name), *args, **kw)
    method.__name__ = name
    return method


class _Facade:
    """Blocking wrapper of one async client: `async_methods` are awaited on the loop thread,
    `plain_methods` called there (the async objects are not thread-safe)."""

    _impl_class: type
    async_methods: tuple[str, ...] = ()
    plain_methods: tuple[str, ...] = ()

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        for name in cls.async_methods:
            setattr(cls, name, _async(name))
        for name in cls.plain_methods:
            setattr(cls, name, _plain(name))

    def __init__(self, *args, **kw) -> None:
        self._impl = self._impl_class(*args, **kw)
        self._loop = _Loop.get()
        self._scope = None

    def start(self):
        self._scope = self._loop.host(self._impl)
        return self

    def shutdown(self) -> None:
        if self._scope is not None:
            try:
                self._loop.run(self._impl.shutdown)
            finally:
                self._loop.run_sync(self._scope.cancel)
                self._scope = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    @property
    def client_id(self) -> str:
        return self._impl.instance.client_id

    @property
    def held_queues(self):
        """Queues this consumer pulls now (sorted)."""
        return sorted(getattr(self._impl, "tasks", ()))


class Producer(_Facade):
    _impl_class = AsyncProducer
    async_methods = ("send", "send_oneway", "send_batch", "queues")

    def send_async(self, msg, callback=None, **kw) -> concurrent.futures.Future:
        """Send without blocking; the Future (also passed to `callback`) holds the SendResult."""
        return self._loop.submit(self._impl.send, msg, callback=callback, **kw)


class TransactionProducer(Producer):
    _impl_class = AsyncTransactionProducer
    async_methods = Producer.async_methods + ("send_in_transaction",)


class PushConsumer(_Facade):
    _impl_class = AsyncPushConsumer
    plain_methods = ("subscribe", "register_listener")


class LitePullConsumer(_Facade):
    _impl_class = AsyncLitePullConsumer
    async_methods = ("poll", "commit", "committed", "fetch_queues")
    plain_methods = ("subscribe", "assign", "seek")


class Admin(_Facade):
    _impl_class = AsyncAdmin
    async_methods = ("create_topic", "list_topics", "topic_config", "delete_topic", "topic_stats",
                     "consumer_progress", "consumer_connections", "min_offset", "max_offset", "search_offset",
                     "query_by_key", "view_message", "consumer_running_info", "resend_dead_letter")
