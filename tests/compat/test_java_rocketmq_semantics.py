"""RocketMQ semantics through the stock Java rocketmq-client 4.9.x and 5.x (remoting): SQL92 subscriptions,
delay levels, transaction check-back, retry into the DLQ, and `mqadmin consumerStatus` on a live consumer.
One gateway (short delay levels and transaction timings) and one JVM per client version.
"""
import pytest

from compat import checks
from compat.harness import failure_context, run_on_gateway
from compat.jvm import ROCKETMQ_CLIENTS
from compat.scenarios import ROCKETMQ_SEMANTICS_GATEWAY_ARGS, ROCKETMQ_SEMANTICS_SCENARIOS, TX_CHECK_MAX
from compat.tools import mqadmin

# The module's JVM run (its fixture) bounds each scenario's waits; it counts against the first test.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module", params=sorted(ROCKETMQ_CLIENTS))
def semantics(request, tmp_path_factory):
    status = {}

    def consumer_status(gw, log_dir):
        """While `status_hold` keeps its consumer up."""
        status["run"] = mqadmin(["consumerStatus", "-n", gw.namesrv, "-g", "js-st-cg"], log_dir)

    with run_on_gateway(tmp_path_factory.mktemp(f"java-rocketmq-semantics-{request.param}"),
                        ROCKETMQ_CLIENTS[request.param], "compat.RocketCompat",
                        lambda gw: [gw.namesrv, "js", *ROCKETMQ_SEMANTICS_SCENARIOS],
                        on_pause=consumer_status, gateway_args=ROCKETMQ_SEMANTICS_GATEWAY_ARGS) as results:
        results.consumer_status = status.get("run")
        yield results


def test_sql92_subscription(semantics):
    checks.rocketmq_sql_filter(semantics["sql_filter"])


def test_delay_level(semantics):
    checks.rocketmq_delay_level(semantics["delay_level"], "js-delay", level_seconds=2)


def test_transaction_check_back(semantics):
    checks.rocketmq_tx_check(semantics["tx_check"], TX_CHECK_MAX)


def test_retry_into_dlq(semantics):
    checks.rocketmq_dlq(semantics["dlq"], "js-dlq", max_reconsume=2)


def test_mqadmin_consumer_status(semantics):
    held = semantics["status_hold"]
    assert held["received"] == ["st-0"], held
    r = semantics.consumer_status
    assert r is not None, "the program never paused with its consumer up"
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Exception" not in out, f"{r.returncode}\n{out[-3000:]}{failure_context(semantics.gw)}"
    assert held["client_id"] in out, out
