"""semantics.quotas: the quota table (validation, persistence, describe filters), Kafka's precedence
of matching quotas and its sampled-rate throttle time, on a fake clock."""
from __future__ import annotations

import pytest

from semantics.quotas import (CLIENT, FETCH_KEY, MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, PRODUCE_KEY,
                              USER, ClientQuotas, QuotaError)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_alter_persists_and_a_new_table_reads_it(tmp_path):
    q = ClientQuotas(str(tmp_path))
    q.alter([(CLIENT, "app")], [(PRODUCE_KEY, 1024.0, False)], validate_only=False)
    q.alter([(USER, None)], [(FETCH_KEY, 2048.0, False)], validate_only=False)
    q.alter([(USER, "alice"), (CLIENT, None)], [(PRODUCE_KEY, 5.0, False)], validate_only=True)
    again = ClientQuotas(str(tmp_path))
    assert again.describe([], strict=False) == [(((CLIENT, "app"),), {PRODUCE_KEY: 1024.0}),
                                                (((USER, None),), {FETCH_KEY: 2048.0})]
    again.alter([(CLIENT, "app")], [(PRODUCE_KEY, 0.0, True)], validate_only=False)
    assert ClientQuotas(str(tmp_path)).describe([(CLIENT, MATCH_SPECIFIED, None)], strict=False) == []


@pytest.mark.parametrize("components, ops, message", [
    ([], [(PRODUCE_KEY, 1.0, False)], "Invalid empty client quota entity"),
    ([(USER, "")], [(PRODUCE_KEY, 1.0, False)], "Empty user not supported"),
    ([("ip", "1.2.3.4")], [(PRODUCE_KEY, 1.0, False)], "Unhandled client quota entity type: ip"),
    ([(CLIENT, "c")], [("request_percentage", 50.0, False)], "Invalid configuration key request_percentage"),
    ([(CLIENT, "c")], [(PRODUCE_KEY, 1.5, False)], "producer_byte_rate cannot be a fractional value."),
    ([(CLIENT, "c")], [(FETCH_KEY, 0.0, False)], "Quota consumer_byte_rate must be greater than 0"),
])
def test_refusals_change_nothing(tmp_path, components, ops, message):
    q = ClientQuotas(str(tmp_path))
    with pytest.raises(QuotaError, match=message.replace(".", r"\.")):
        q.alter(components, ops, validate_only=False)
    assert q.describe([], strict=False) == []


def test_describe_filters():
    q = ClientQuotas(None)
    for entity in ([(CLIENT, "a")], [(CLIENT, None)], [(USER, "u"), (CLIENT, None)], [(USER, "u")]):
        q.alter(entity, [(PRODUCE_KEY, 1.0, False)], validate_only=False)
    keys = lambda filters, strict: [k for k, _ in q.describe(filters, strict)]  # noqa: E731
    assert keys([(CLIENT, MATCH_EXACT, "a")], True) == [((CLIENT, "a"),)]
    assert keys([(CLIENT, MATCH_DEFAULT, None)], True) == [((CLIENT, None),)]
    assert keys([(CLIENT, MATCH_SPECIFIED, None)], True) == [((CLIENT, "a"),), ((CLIENT, None),)]
    assert keys([(USER, MATCH_EXACT, "u"), (CLIENT, MATCH_SPECIFIED, None)], False) == [((CLIENT, None), (USER, "u"))]
    assert keys([(USER, MATCH_EXACT, "u")], False) == [((CLIENT, None), (USER, "u")), ((USER, "u"),)]
    assert keys([], True) == []


def test_most_specific_quota_wins_in_kafkas_order():
    q = ClientQuotas(None)
    order = [[(USER, "u"), (CLIENT, "c")], [(USER, "u"), (CLIENT, None)], [(USER, "u")],
             [(USER, None), (CLIENT, "c")], [(USER, None), (CLIENT, None)], [(USER, None)],
             [(CLIENT, "c")], [(CLIENT, None)]]
    for rate, entity in enumerate(order, start=1):
        q.alter(entity, [(PRODUCE_KEY, float(rate), False)], validate_only=False)
    for rate, entity in enumerate(order, start=1):
        assert q.quota_of(PRODUCE_KEY, "u", "c")[0] == rate
        q.alter(entity, [(PRODUCE_KEY, 0.0, True)], validate_only=False)
    assert q.quota_of(PRODUCE_KEY, "u", "c") is None


def test_clients_of_one_client_id_quota_share_its_rate_default_quotas_do_not():
    q = ClientQuotas(None)
    q.alter([(CLIENT, "shared")], [(PRODUCE_KEY, 100.0, False)], validate_only=False)
    q.alter([(CLIENT, None)], [(PRODUCE_KEY, 100.0, False)], validate_only=False)
    assert q.quota_of(PRODUCE_KEY, "a", "shared")[1] == q.quota_of(PRODUCE_KEY, "b", "shared")[1]
    assert q.quota_of(PRODUCE_KEY, "a", "x")[1] != q.quota_of(PRODUCE_KEY, "a", "y")[1]


def test_throttle_time_is_the_time_until_the_rate_is_back_at_the_quota():
    clock = Clock()
    q = ClientQuotas(None, clock=clock)
    q.alter([(CLIENT, "c")], [(PRODUCE_KEY, 1000.0, False)], validate_only=False)
    # the rate is measured over at least 10 windows: 10,000 bytes at once is exactly the quota
    assert q.record(PRODUCE_KEY, "u", "c", 10_000) == 0.0
    assert q.record(PRODUCE_KEY, "u", "other", 1_000_000) == 0.0  # no quota for that client id
    # 5,000 more: 15,000 over 10 s is 1,500/s; 15,000 at 1,000/s take 15 s, 5 s more than the window
    assert q.record(PRODUCE_KEY, "u", "c", 5_000) == pytest.approx(5.0)
    clock.now += 10.5
    assert q.record(PRODUCE_KEY, "u", "c", 0) == pytest.approx(4.5)  # 15 s at the quota, 10.5 s so far
    clock.now += 0.5  # the samples are 11 windows old: expired
    assert q.record(PRODUCE_KEY, "u", "c", 0) == 0.0
    clock.now += 20.0
    assert q.record(PRODUCE_KEY, "u", "c", 10_000) == 0.0
    assert q.record(PRODUCE_KEY, "u", "c", 10_000_000) == 11.0  # at most the whole quota window


def test_an_unrecorded_fetch_is_not_charged():
    clock = Clock()
    q = ClientQuotas(None, clock=clock)
    q.alter([(USER, None)], [(FETCH_KEY, 1000.0, False)], validate_only=False)
    assert q.max_window_bytes(FETCH_KEY, "u", "c") == 10_000
    assert q.max_window_bytes(PRODUCE_KEY, "u", "c") is None
    assert q.record(FETCH_KEY, "u", "c", 20_000) > 0
    q.unrecord(FETCH_KEY, "u", "c", 20_000)
    assert q.record(FETCH_KEY, "u", "c", 10_000) == 0.0


def test_idle_rates_are_dropped_once_there_are_many(monkeypatch):
    import semantics.quotas as quotas
    monkeypatch.setattr(quotas, "PRUNE_AT", 2)
    clock = Clock()
    q = ClientQuotas(None, clock=clock)
    q.alter([(CLIENT, None)], [(PRODUCE_KEY, 1000.0, False)], validate_only=False)
    q.record(PRODUCE_KEY, "u", "a", 10)
    clock.now += 20.0
    q.record(PRODUCE_KEY, "u", "b", 10)
    q.record(PRODUCE_KEY, "u", "c", 10)  # a's samples expired: dropped
    assert sorted(key[2] for key in q.rates) == ["b", "c"]
