"""Client exceptions: broker refusals carry the broker's response code and remark."""
from __future__ import annotations


class MQClientError(Exception):
    """A client-side failure (no route, connection lost, timeout, bad arguments)."""


class MQBrokerError(MQClientError):
    """The broker answered with a non-success code."""

    def __init__(self, code: int, remark: str | None, request_code: int | None = None) -> None:
        self.code = code
        self.remark = remark or ""
        self.request_code = request_code
        super().__init__(f"broker error {code}: {self.remark}" +
                         (f" (request {request_code})" if request_code is not None else ""))


class RequestTimeout(MQClientError):
    """No response within the request's timeout."""
