"""Tag expressions and the produce-path routing of delayed and transactional messages."""
import pytest

from codec.remoting.message import Message, tag_hash
from semantics.routing import (
    HALF_TOPIC, SCHEDULE_TOPIC, DelayLevels, DEFAULT_LEVELS, DelayRefused, adopt_rocketmq_timer, route,
)
from codec.remoting.tags import parse_tags

NOW = 1_700_000_000_000


def test_tag_hash_is_java_hashcode():
    assert tag_hash("TagA") == 2598919
    assert tag_hash("") == 0


@pytest.mark.parametrize("expr", [None, "", "*", "  *  ", "||", " || "])
def test_match_all(expr):
    f = parse_tags(expr)
    assert f.match_all
    assert f.matches_code(12345) and f.matches(None) and f.matches("x")


def test_tag_list():
    f = parse_tags(" TagA || TagB ||")
    assert f.tags == {"TagA", "TagB"}
    assert f.codes == {tag_hash("TagA"), tag_hash("TagB")}
    assert f.matches_code(tag_hash("TagB"))
    assert not f.matches_code(tag_hash("TagC"))
    assert not f.matches_code(0)  # untagged messages are not in a tag subscription
    assert f.matches("TagA") and not f.matches("taga") and not f.matches(None)
    assert f.matches_properties({"TAGS": "TagB"}) and not f.matches_properties({})


def test_hash_collision_is_removed_by_exact_check():
    # "Aa" and "BB" have the same Java hashCode.
    f = parse_tags("Aa")
    assert f.matches_code(tag_hash("BB"))
    assert not f.matches("BB")


def test_parse_is_cached():
    assert parse_tags("TagA || TagB") is parse_tags("TagA || TagB")


def test_delay_levels_parse():
    assert DEFAULT_LEVELS.max_level == 18
    assert DEFAULT_LEVELS.delay_ms(1) == 1000
    assert DEFAULT_LEVELS.delay_ms(5) == 60_000
    assert DEFAULT_LEVELS.delay_ms(18) == 7_200_000
    assert DEFAULT_LEVELS.delay_ms(99) == 7_200_000
    custom = DelayLevels("1s 2d 3h")
    assert custom.millis == [1000, 2 * 86_400_000, 3 * 3_600_000]
    assert custom.timer_queue == 3 and custom.queue_count == 4
    for bad in ("", "1x", "s", "1.5s", "-1s"):
        with pytest.raises(ValueError):
            DelayLevels(bad)


def msg(**props):
    return Message(topic="T", queue_id=3, body=b"x", properties=dict(props))


def test_plain_message_unchanged():
    m = msg(TAGS="a")
    assert route(m, NOW) is m


@pytest.mark.parametrize("level, queue, delay", [("1", 0, 1000), ("3", 2, 10_000), ("18", 17, 7_200_000),
                                                 ("50", 17, 7_200_000)])
def test_delay_level(level, queue, delay):
    r = route(msg(DELAY=level, TAGS="a"), NOW)
    assert (r.topic, r.queue_id) == (SCHEDULE_TOPIC, queue)
    assert r.properties["REAL_TOPIC"] == "T" and r.properties["REAL_QID"] == "3"
    assert r.properties["DELAY"] == level and r.properties["TAGS"] == "a"
    assert r.tags_codes == [NOW + delay]


@pytest.mark.parametrize("level", ["0", "-1", "-2147483648"])
def test_delay_level_not_delayed(level):
    """As RocketMQ 5.5: a level <= 0 is stored at once."""
    r = route(msg(DELAY=level), NOW)
    assert r.topic == "T"


@pytest.mark.parametrize("level", ["abc", "", " 3", "1.5", "2147483648", "\u0663", "3 "])
def test_delay_level_not_an_integer_is_refused(level):
    """As RocketMQ 5.5 (Integer.parseInt throws: SYSTEM_ERROR): refused, not sent undelayed."""
    with pytest.raises(DelayRefused) as info:
        route(msg(DELAY=level), NOW)
    assert not info.value.timer and f'"{level}"' in str(info.value)


@pytest.mark.parametrize("start", ["abc", "", "12.5", str(1 << 63), str(NOW + 3 * 86_400_000 + 1)])
def test_deliver_time_not_a_time_or_too_far_is_refused(start):
    with pytest.raises(DelayRefused) as info:
        route(msg(__STARTDELIVERTIME=start, DELAY="3"), NOW)
    assert info.value.timer and str(info.value).startswith("timer message illegal")


def test_timer_max_delay_is_the_levels_setting():
    ahead = NOW + 3 * 86_400_000
    assert route(msg(__STARTDELIVERTIME=str(ahead)), NOW).tags_codes == [ahead]
    with pytest.raises(DelayRefused):
        route(msg(__STARTDELIVERTIME=str(NOW + 61_000)), NOW, DelayLevels(timer_max_delay_ms=60_000))
    with pytest.raises(DelayRefused):  # a transactional message is checked too (before it waits as a half)
        route(msg(__STARTDELIVERTIME="soon", TRAN_MSG="true"), NOW)


def test_start_deliver_time():
    r = route(msg(__STARTDELIVERTIME=str(NOW + 1234), DELAY="3"), NOW)
    assert (r.topic, r.queue_id, r.tags_codes) == (SCHEDULE_TOPIC, 18, [NOW + 1234])
    assert route(msg(__STARTDELIVERTIME=str(NOW - 5)), NOW).topic == "T"
    custom = DelayLevels("1s 2s")
    assert route(msg(__STARTDELIVERTIME=str(NOW + 5)), NOW, custom).queue_id == 2


def test_inner_batch_gets_one_code_per_message():
    m = Message(topic="T", queue_id=0, body=b"batch", properties={"DELAY": "2"}, batch_count=4)
    assert route(m, NOW).tags_codes == [NOW + 5000] * 4


def test_half_message():
    m = msg(TRAN_MSG="true", PGROUP="pg", DELAY="3")
    m.sys_flag = 0x4
    r = route(m, NOW)
    assert (r.topic, r.queue_id) == (HALF_TOPIC, 0)
    assert r.properties["REAL_TOPIC"] == "T" and r.properties["REAL_QID"] == "3"
    assert r.sys_flag & 0xC == 0  # dispatched to the half ConsumeQueue
    assert m.topic == "T" and "REAL_TOPIC" not in m.properties  # the input is not modified


def test_deliver_time_in_the_past_is_not_delayed():
    """As RocketMQ 5.5: a deliver time not ahead (even negative) is stored at once."""
    for start in (str(NOW), "-5", str(-(1 << 63))):
        assert route(msg(__STARTDELIVERTIME=start), NOW).topic == "T"


def test_rocketmq_timer_properties_become_the_deliver_time():
    """RocketMQ 5's TIMER_DELAY_SEC / TIMER_DELAY_MS / TIMER_DELIVER_MS (remoting), read as its broker does."""
    def due(**props):
        return adopt_rocketmq_timer(msg(**props), NOW).properties.get("__STARTDELIVERTIME")
    assert due(TIMER_DELAY_SEC="2") == str(NOW + 2000)
    assert due(TIMER_DELAY_MS="1500") == str(NOW + 1500)
    assert due(TIMER_DELIVER_MS=str(NOW + 7)) == str(NOW + 7)
    assert due(TIMER_DELAY_SEC="1", TIMER_DELIVER_MS=str(NOW + 7)) == str(NOW + 1000)  # the broker's order
    assert due(TIMER_DELAY_SEC="1", DELAY="2") is None  # a level wins, as on the broker
    assert due(TIMER_DELAY_SEC="1", DELAY="0") == str(NOW + 1000)
    assert due(TIMER_DELAY_SEC="1", __STARTDELIVERTIME="5") == "5"  # the gateway's own wins
    assert due(TAGS="a") is None
    with pytest.raises(DelayRefused) as info:
        adopt_rocketmq_timer(msg(TIMER_DELIVER_MS="soon"), NOW)
    assert info.value.timer
