"""The POP receipt strings as RocketMQ 5.x's ExtraInfoUtil writes and reads them."""
import pytest

from codec.remoting.extra_info import (ExtraInfo, offset_info, parse_extra_info, parse_offset_info, pop_retry_topic,
                                       real_topic, retry_mark)


def test_extra_info_round_trip():
    text = "5 1700000000000 30000 0 0 broker-a 3 7"
    info = parse_extra_info(text)
    assert info == ExtraInfo(5, 1700000000000, 30000, 0, "0", "broker-a", 3, 7)
    assert str(info) == text
    assert parse_extra_info("5 1 2 0 1 broker-a 3").queue_offset is None


@pytest.mark.parametrize("bad", [None, "", "1 2 3", "a 1 2 0 0 b 3 4", "1 2 3 0 9 b 3 4", "1 2 3 0 0 b x",
                                 "1 2 3 0 0 b 3 99999999999999999999", "1  2 3 0 0 b 3 4"])
def test_malformed_extra_info(bad):
    with pytest.raises(ValueError):
        parse_extra_info(bad)


def test_retry_topics_and_offset_infos():
    assert pop_retry_topic("g", "T") == "%RETRY%g_T" and pop_retry_topic("g", "T", v2=True) == "%RETRY%g+T"
    assert [retry_mark(t) for t in ("T", "%RETRY%g_T", "%RETRY%g+T")] == ["0", "1", "2"]
    assert real_topic("T", "g", "1") == "%RETRY%g_T" and real_topic("T", "g", "0") == "T"
    text = offset_info([("0", 1, [4, 5, 9]), ("1", 0, [2])])
    assert text == "0 1 4,5,9;1 0 2"
    assert parse_offset_info(text) == {"0@1": [4, 5, 9], "1@0": [2]}
    assert parse_offset_info(offset_info([("0", 2, 17)])) == {"0@2": [17]}


def test_extra_info_outside_the_usual_shape_takes_the_field_by_field_path():
    """19-digit numbers, a ninth field: read as RocketMQ's ExtraInfoUtil reads them."""
    info = parse_extra_info("9223372036854775807 -9223372036854775808 1 0 2  3 4 extra")
    assert (info.ck_offset, info.pop_time, info.broker_name, info.queue_offset) == (2 ** 63 - 1, -2 ** 63, "", 4)
    with pytest.raises(ValueError):
        parse_extra_info("9223372036854775808 1 2 0 0 b 3 4")
