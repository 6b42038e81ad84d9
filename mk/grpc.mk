# RocketMQ 5 gRPC (gateway/grpc). The apache.rocketmq.v2 message classes come from the PyPI package
# rocketmq-python-client (pyproject.toml), so nothing is generated here; the Java SDK
# (compat/java/rocketmqgrpc) and Apache RocketMQ's proxy (compat/java/rocketmqproxy) are built by
# compat-jars.
.PHONY: grpc-proxy-check grpc-fuzz grpc-bench grpc-go rocketmq55-check bench-lite

# The gRPC SDK tests against Apache RocketMQ 5.5's own proxy (local mode) instead of the gateway:
# how the tests' expectations are checked against the real thing.
grpc-proxy-check: setup grpc-go
	GRPC_TARGET=proxy $(PY) -m pytest tests/grpc/test_grpc_python_sdk.py tests/grpc/test_grpc_java_sdk.py \
		tests/grpc/test_grpc_go_sdk.py tests/grpc/test_grpc_recall_types.py -q

# The RocketMQ 5.4/5.5 feature tests (priority, lite topics and lite groups, FIFO retry order, message
# traces) against Apache RocketMQ 5.5 (name server, a broker with LMQ on, the cluster-mode proxy; the
# remoting tests on the broker).
rocketmq55-check: setup
	GRPC_TARGET=proxy REMOTING_TARGET=rocketmq $(PY) -m pytest tests/grpc/test_grpc_priority.py \
		tests/grpc/test_grpc_lite.py tests/grpc/test_grpc_lite_bad_input.py tests/grpc/test_grpc_lite_groups.py \
		tests/grpc/test_grpc_fifo_retry.py tests/pop/test_pop_priority.py tests/remoting/test_message_trace.py \
		tests/remoting/test_remoting_lite.py tests/remoting/test_remoting_lite_admin.py \
		tests/remoting/test_remoting_lite_ttl.py -q

# 1 000 000 lite topics created by sending (docs/performance.md "Lite topics"); LITE_BENCH_ARGS as
# bench/lite_topics.py takes them (e.g. --count 20000 --systems gateway for a short run).
bench-lite: setup
	$(PY) -m bench.lite_topics $(LITE_BENCH_ARGS)

# The Go gRPC SDK (github.com/apache/rocketmq-clients/golang/v5, pinned by compat/go/go.mod) from the
# Go module proxy, for tests/grpc/test_grpc_go_sdk.py (which builds compat/go).
grpc-go:
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	cd compat/go && go mod download

# The gRPC port's seeded fuzzer, longer (FUZZ_FRAMES, FUZZ_SEED as `make fuzz`).
grpc-fuzz: install
	FUZZ_FRAMES=$(FUZZ_FRAMES) FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest tests/grpc/test_grpc_fuzz.py -q

# Send/receive TPS and p99 send latency of the Java gRPC SDK: gateway vs Apache RocketMQ's proxy.
grpc-bench: setup
	$(PY) -m bench.grpc_bench $(GRPC_BENCH_ARGS)
