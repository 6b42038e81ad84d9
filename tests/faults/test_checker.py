"""The fault harness's checker on hand-made histories (the harness itself runs with `make faults`)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from checker import check, check_deliveries  # noqa: E402
from duplicates import classify, reclassify  # noqa: E402


def _history(*sends):
    """sends: (value, partition, outcome)."""
    ops = [{"type": "invoke", "value": v, "partition": p} for v, p, _ in sends]
    return ops + [{"type": outcome, "value": v, "partition": p} for v, p, outcome in sends]


def _read(*records):
    return [{"partition": p, "offset": o, "value": v} for o, (v, p) in enumerate(records)]


def test_a_clean_history_is_valid():
    result = check(_history((1, 0, "ok"), (2, 1, "ok"), (3, 0, "info")), _read((1, 0), (2, 1), (3, 0)))
    assert result["valid"] and result["ok"] == 2 and result["info"] == 1


def test_a_lost_acknowledged_write_fails():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((1, 0)))
    assert not result["valid"] and result["lost"] == [2]


def test_an_indeterminate_write_may_be_missing():
    assert check(_history((1, 0, "ok"), (2, 0, "info"), (3, 0, "fail")), _read((1, 0)))["valid"]


def test_a_duplicate_fails():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((1, 0), (2, 0), (2, 0)))
    assert not result["valid"] and result["duplicated"] == [2]


def test_acknowledged_values_out_of_send_order_in_a_partition_fail():
    result = check(_history((1, 0, "ok"), (2, 0, "ok")), _read((2, 0), (1, 0)))
    assert not result["valid"] and result["reordered"] == [1]


def test_a_value_never_sent_fails():
    result = check(_history((1, 0, "ok")), _read((1, 0), (9, 0)))
    assert not result["valid"] and result["unexpected"] == [9]


def _copy(pid, epoch, sequence):
    return {"producer_id": pid, "producer_epoch": epoch, "sequence": sequence}


def test_a_copy_under_one_producer_epoch_and_sequence_is_the_gateways_duplicate():
    assert classify([_copy(7, 0, 12), _copy(7, 0, 12)]) == "gateway"


def test_a_copy_under_a_bumped_epoch_is_the_clients_resend():
    assert classify([_copy(7, 0, 12), _copy(7, 1, 3)]) == "client_resend"


def test_a_third_copy_in_an_epoch_already_used_is_not_the_clients():
    assert classify([_copy(7, 0, 12), _copy(7, 1, 3), _copy(7, 1, 9)]) == "gateway_other"


def test_a_copy_not_found_in_the_store_stays_the_gateways():
    assert classify([_copy(7, 0, 12), {}]) != "client_resend"


def test_client_resends_leave_the_duplicates_and_the_verdict():
    result = check(_history((1, 0, "ok"), (2, 0, "ok"), (3, 0, "ok")), _read((1, 0), (2, 0), (3, 0), (1, 0), (2, 0)))
    assert result["duplicated"] == [1, 2] and result["reordered"] == [1, 2]
    explained = [{"value": 1, "class": "client_resend"}, {"value": 2, "class": "gateway"}]
    reclassify(result, explained)
    assert result["client_resent"] == [1] and result["duplicated"] == [2] and result["reordered"] == [2]
    assert not result["valid"]
    reclassify(result, [{"value": 2, "class": "client_resend"}])
    assert result["valid"] and result["client_resent"] == [2]


def _handed(*deliveries):
    """deliveries: (value, queue offset) in the order a consumer was handed them."""
    return [{"type": "ok", "f": "receive", "value": v, "offset": o} for v, o in deliveries]


def test_a_consumer_handed_every_stored_message_is_valid_even_twice():
    result = check_deliveries(_handed((1, 0), (2, 1), (2, 1)), _read((1, 0), (2, 0)), sent={1, 2})
    assert result["valid"] and result["redelivered"] == 1 and result["received"] == 2


def test_a_consumer_that_missed_saw_a_lost_write_or_a_diverged_log_fails():
    final = _read((1, 0), (2, 0), (3, 0))  # offsets 0, 1, 2 of partition 0
    result = check_deliveries(_handed((1, 0), (2, 2), (9, 1), (7, 3)), final, sent={1, 2, 3, 9})
    assert not result["valid"]
    assert result["unreceived"] == [3]  # stored, never handed out
    assert result["moved"] == [2]  # handed out at offset 2, the log has it at 1
    assert result["phantom"] == [9]  # handed out, not in the log at the end
    assert result["unexpected"] == [7]  # never sent


def test_metadata_checker_counts_no_leader_as_no_second_leader():
    """Seed 2804: a gateway answering -1 (no leader) while another named 1 in the same epoch is no
    fencing breach; two real leaders in one epoch still are."""
    from metadata import two_leaders_in_one_epoch
    assert two_leaders_in_one_epoch({1: {("t", 0): (1, 7)}, 2: {("t", 0): (-1, 7)}}) == set()
    assert two_leaders_in_one_epoch({1: {("t", 0): (1, 7)}, 2: {("t", 0): (3, 7)}}) == {"t/0 epoch 7: leaders [1, 3]"}
    assert two_leaders_in_one_epoch({1: {("t", 0): (1, 7)}, 2: {("t", 0): (3, 8)}}) == set()  # not converged, no breach
