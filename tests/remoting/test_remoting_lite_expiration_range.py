"""`lite.topic.expiration` is checked when a topic is created or updated, as RocketMQ 5.5 checks its
topic attributes: a whole number of minutes in -1..43200, else the update is refused with 5.5's code
(SYSTEM_ERROR) and words, on a LITE topic and on any other, and the topic keeps what it had. Run first
against Apache RocketMQ 5.5.0 (REMOTING_TARGET=rocketmq): the same codes and remarks."""
from __future__ import annotations

import pytest

from codec.remoting import RequestCode as RC
from lite_wire import TOPIC_FIELDS, lite_target

pytestmark = pytest.mark.timeout(300)

ANSWERS = {  # value -> (code, remark or None when any)
    "43200": (0, None), "-1": (0, None), "0": (0, None), "+5": (0, None),
    "43201": (1, "value is not in range(-1, 43200)"), "-2": (1, "value is not in range(-1, 43200)"),
    "abc": (1, 'For input string: "abc"'), "1.5": (1, 'For input string: "1.5"'),
}


def test_lite_topic_expiration_out_of_range_is_refused(tmp_path):
    with lite_target(tmp_path) as (p, _system):
        got = {}
        for value in ANSWERS:
            for topic, extra in (("LP", "+message.type=LITE,"), ("NP", "")):
                resp = p.call(RC.UPDATE_AND_CREATE_TOPIC, {"topic": topic, **TOPIC_FIELDS,
                                                           "attributes": f"{extra}+lite.topic.expiration={value}"})
                got[(value, topic)] = (resp.code, resp.remark if resp.code else None)
        want = {(value, topic): answer for value, answer in ANSWERS.items() for topic in ("LP", "NP")}
        assert got == want
        config = p.call(RC.GET_TOPIC_CONFIG, {"topic": "LP"})
        assert config.code == 0 and b'"lite.topic.expiration":"+5"' in config.body.replace(b" ", b"")
