"""Typed header reads: what a Java header decoder accepts is read, anything else is a RequestError."""
import pytest

from codec.remoting import RemotingCommand, ResponseCode
from gateway.remoting.headers import (RequestError, optional_int, optional_str, queue_id, required_int,
                                      required_long, required_str)


def req(**fields):
    return RemotingCommand(code=1, ext_fields={k: str(v) for k, v in fields.items()})


@pytest.mark.parametrize("value, expected", [("0", 0), ("+5", 5), ("-7", -7), ("2147483647", 2 ** 31 - 1),
                                             ("-2147483648", -2 ** 31)])
def test_int_fields_in_java_int_range(value, expected):
    assert required_int(req(n=value), "n") == expected == optional_int(req(n=value), "n", 99)


@pytest.mark.parametrize("value", ["2147483648", "-2147483649", "1.0", "0x10", " 1", "1_000", "١", "--1", "+"])
def test_malformed_int_fields_are_request_errors(value):
    with pytest.raises(RequestError) as info:
        required_int(req(n=value), "n")
    assert info.value.code == ResponseCode.SYSTEM_ERROR and "<n>" in info.value.remark


def test_missing_and_defaults():
    empty = req()
    for read in (lambda: required_str(empty, "g"), lambda: required_int(empty, "n"), lambda: queue_id(empty)):
        with pytest.raises(RequestError, match="is null"):
            read()
    assert optional_int(empty, "n", 3) == 3 and optional_int(req(n=""), "n", 3) == 3
    assert optional_str(empty, "s") == "" and required_str(req(g=""), "g") == ""
    assert required_long(req(o=str(2 ** 63 - 1)), "o") == 2 ** 63 - 1
    with pytest.raises(RequestError, match=r"queueId\[-1\] is illegal"):
        queue_id(req(queueId=-1))
    answer = RequestError(ResponseCode.SYSTEM_ERROR, "why").answer(req())
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark == "why" and answer.is_response
