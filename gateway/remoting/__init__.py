"""RocketMQ remoting listener: NameServer and Broker roles on one port."""
from gateway.remoting.connection import handle_connection

__all__ = ["handle_connection"]
