"""The remoting request handler table (NameServer, Broker and admin roles)."""
from gateway.remoting import admin, broker, nameserver, reset_offset  # noqa: F401  (they fill HANDLERS)
from gateway.remoting.common import DEFERRED, HANDLERS, registry

__all__ = ["DEFERRED", "HANDLERS", "channel_closed"]


def channel_closed(channel) -> None:
    broker.notify_groups(channel.app, registry(channel.app).channel_closed(channel))
