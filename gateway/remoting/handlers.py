"""The remoting request handler table: importing every processor module fills HANDLERS.

One module per request family, as a RocketMQ broker has one processor per family: send, pull,
consumer offsets, offset reset by time, client management, query, end transaction, consumer send-back, admin, and the
NameServer role.
"""
import gateway.cluster.delivery  # noqa: F401  (each fills HANDLERS)
import gateway.cluster.share_offsets  # noqa: F401
import gateway.cluster.recall_forward  # noqa: F401
import gateway.remoting.admin  # noqa: F401
import gateway.remoting.consumer_manage  # noqa: F401
import gateway.remoting.end_transaction  # noqa: F401
import gateway.remoting.lite_admin  # noqa: F401
import gateway.remoting.nameserver  # noqa: F401
import gateway.remoting.pop  # noqa: F401
import gateway.remoting.pop_lite  # noqa: F401  (after pop: it serves lite receipts of ACK_MESSAGE first)
import gateway.remoting.pull  # noqa: F401
import gateway.remoting.query  # noqa: F401
import gateway.remoting.replica_fetch  # noqa: F401
import gateway.remoting.reset_offset  # noqa: F401
import gateway.remoting.send  # noqa: F401
import gateway.remoting.send_back  # noqa: F401
from gateway.remoting.client_manage import channel_closed
from gateway.remoting.common import DEFERRED, HANDLERS

__all__ = ["DEFERRED", "HANDLERS", "channel_closed"]
