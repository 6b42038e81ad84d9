"""The report card's own logic (compat/report): which Go tests reach a broker, and how runs on the real broker
and on the gateway turn into docs/compatibility.md (counts, failures with the reference's result, notes)."""
from compat.report import markdown
from compat.report.librdkafka import subtests
from compat.report.gotests import broker_tests
from compat.report.suite import FAIL, PASS, SKIP, SuiteRun, one_line

GO = '''package kgo

func adm() *Client { return nil }

func helper() { adm() }

func (c *cl) method() { helper() }

func TestDirect(t *testing.T) { adm() }

func TestIndirect(t *testing.T) { var c cl; c.method() }

func TestUnit(t *testing.T) { x := admin(); _ = x }
'''


def test_broker_tests_follow_calls_through_helpers_and_methods(tmp_path):
    (tmp_path / "a_test.go").write_text(GO)
    (tmp_path / "b.go").write_text("package kgo\nfunc TestNotATestFile(t *testing.T) { adm() }\n")
    assert broker_tests(str(tmp_path), {"adm"}) == ["TestDirect", "TestIndirect"]


def test_one_line_takes_the_first_line_escapes_pipes_and_shortens():
    assert one_line("\n  a | b \nsecond") == "a \\| b"
    assert one_line("x" * 300).endswith("…") and len(one_line("x" * 300)) == 160


def test_librdkafka_subtests_that_passed_were_skipped_and_failed():
    log = ("%6|1.2|X|t#c-1| [ not a sub-test: PASS ]\n[t/ 1.1s] [ do_a:12: n=1: PASS (1.10s) ]\nsay\n"
           "[t/ 2.0s] [ do_c:30: SKIP: too old ]\n[ do_e:50: PASS (0.1s) ]\n[ do_e:50: PASS (0.2s) ]\n"
           '\x1b[31m### Test "t (do_d:40: topic [x])" failed at t.c:9:f() at now: ###\nwhy\n')
    assert subtests(log) == [("do_a:12: n=1", "PASS"), ("do_c:30", "SKIP"), ("do_e:50", "PASS"),
                             ("do_e:50 #2", "PASS"), ("do_d:40: topic [x]", "FAIL")]


def test_render_compares_with_the_reference_and_prints_notes(tmp_path):
    kafka = SuiteRun("s", "kafka")
    kafka.add("TestA", PASS)
    kafka.add("TestB", PASS)
    kafka.add("TestC", SKIP, "needs KIP-848")
    gateway = SuiteRun("s", "gateway")
    gateway.add("TestA", PASS)
    gateway.add("TestB", FAIL, "boom\ntrace")
    gateway.add("TestC", FAIL, "no such API")
    data = markdown.store(str(tmp_path / "r.json"), [kafka, gateway], {"s": {"version": "1.0"}})
    text = markdown.render(data, {"s": {"TestC": "not claimed"}}, "# intro")
    assert "| s | kafka | 2 / 0 / 1 | — |" in text and "| s | gateway | 1 / 2 / 0 | 1 |" in text
    assert "- `TestB` (on kafka: pass): boom" in text
    assert "- `TestC` (on kafka: skip): no such API — *not claimed*" in text
    assert "| `TestA` | pass | pass |  |" in text
    assert "- version: 1.0" in text
    # a second store of one system replaces its run and keeps the other
    again = SuiteRun("s", "gateway")
    again.add("TestA", PASS)
    data = markdown.store(str(tmp_path / "r.json"), [again], {})
    assert set(data["s"]["runs"]) == {"kafka", "gateway"} and list(data["s"]["runs"]["gateway"]["results"]) == ["TestA"]
