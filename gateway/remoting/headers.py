"""Typed reads of a request's header fields (extFields) for the handlers.

Every header value a client sends is a string. A missing required field or a value that is not a
number in the field's Java range is the client's fault: it raises RequestError, which the connection
answers with the code a RocketMQ broker gives (SYSTEM_ERROR, from its header decoding) and a remark
naming the field; the connection stays open. Handlers read client fields only through these
functions, so client input never surfaces as a KeyError, TypeError or ValueError (those are bugs).
"""
from __future__ import annotations

import re

from codec.remoting import RemotingCommand, ResponseCode

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1  # a Java int (queue ids, counts, flags)
LONG_MIN, LONG_MAX = -2 ** 63, 2 ** 63 - 1  # a Java long (offsets, timestamps)
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")


class RequestError(Exception):
    """The client's request is invalid: answered with `code` and `remark`, nothing else happens."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code, self.remark = code, remark

    def answer(self, req: RemotingCommand) -> RemotingCommand:
        return req.response(self.code, remark=self.remark)


def required_str(req: RemotingCommand, name: str) -> str:
    value = req.ext_fields.get(name)
    if value is None:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{name}> is null")
    return value


def optional_str(req: RemotingCommand, name: str, default: str = "") -> str:
    value = req.ext_fields.get(name)
    return default if value is None else value


def required_int(req: RemotingCommand, name: str, lo: int = INT_MIN, hi: int = INT_MAX) -> int:
    value = req.ext_fields.get(name)
    if value is None or value == "":
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{name}> is null")
    return _parse_int(name, value, lo, hi)


def optional_int(req: RemotingCommand, name: str, default: int, lo: int = INT_MIN, hi: int = INT_MAX) -> int:
    value = req.ext_fields.get(name)
    if value is None or value == "":
        return default
    return _parse_int(name, value, lo, hi)


def required_long(req: RemotingCommand, name: str) -> int:
    return required_int(req, name, LONG_MIN, LONG_MAX)


def optional_long(req: RemotingCommand, name: str, default: int) -> int:
    return optional_int(req, name, default, LONG_MIN, LONG_MAX)


def queue_id(req: RemotingCommand, name: str = "queueId") -> int:
    """A required queue id: a non-negative Java int (the topic's own range is the handler's check)."""
    qid = required_int(req, name)
    if qid < 0:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"queueId[{qid}] is illegal")
    return qid


def _parse_int(name: str, value: str, lo: int, hi: int) -> int:
    if _JAVA_INTEGER.fullmatch(value) is None:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{name}> is not a number: {value!r}")
    number = int(value)
    if not lo <= number <= hi:
        raise RequestError(ResponseCode.SYSTEM_ERROR, f"the custom field <{name}> is out of range: {value}")
    return number
