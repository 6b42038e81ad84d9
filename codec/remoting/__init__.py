"""RocketMQ remoting protocol, sans I/O: framing, header serializations, codes and bodies.

The stored-message layout (MessageDecoder) is `codec.remoting.message`; tag expressions `codec.remoting.tags`.
"""
from codec.remoting.codes import PermName, PullSysFlag, RequestCode, ResponseCode
from codec.remoting.command import (FLAG_ONEWAY, FLAG_RESPONSE, JSON, MAX_FRAME, ROCKETMQ, FrameReader,
                                    ProtocolError, RemotingCommand, decode_frame, encode)

__all__ = ["PermName", "PullSysFlag", "RequestCode", "ResponseCode", "FLAG_ONEWAY", "FLAG_RESPONSE",
           "JSON", "MAX_FRAME", "ROCKETMQ", "FrameReader", "ProtocolError", "RemotingCommand",
           "decode_frame", "encode"]
