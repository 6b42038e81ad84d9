# `make compat-report` (not part of `make test`, about an hour): third-party clients' own suites, each first
# against real Apache Kafka / RocketMQ (bench/brokers.py) and then a fresh gateway; writes
# docs/compatibility.md and docs/compatibility.json (compat/report/__main__.py). REPORT_SUITES picks some of
# franz-go, java, matrix, librdkafka, kafka-python.
#
# - franz-go: pkg/kgo's own tests, module pinned in compat/report/franzgo/go.mod (Go module proxy).
# - librdkafka: its tests/ as shipped in the node-rdkafka npm package (deps/librdkafka), built without
#   SSL/SASL/zstd/curl; the test-runner needs only zlib and a C/C++ compiler.
REPORT_BUILD := compat/report/build
NODE_RDKAFKA_VERSION := 3.6.1
RDKAFKA_DIR := $(REPORT_BUILD)/librdkafka
RDKAFKA_RUNNER := $(RDKAFKA_DIR)/tests/test-runner

.PHONY: compat-report compat-report-go compat-report-librdkafka compat-report-kafka-python
# kafka-python's integration tests: the sdist of the version installed in the venv, unpacked
compat-report-kafka-python: install
	@v=$$($(PY) -c 'from importlib.metadata import version; print(version("kafka-python"))') && \
	[ -d $(REPORT_BUILD)/kafka_python-$$v/test/integration ] || { mkdir -p $(REPORT_BUILD) && \
	$(PY) -m pip download -q --no-deps --no-binary :all: -d $(REPORT_BUILD) kafka-python==$$v && \
	tar xzf $(REPORT_BUILD)/kafka_python-$$v.tar.gz -C $(REPORT_BUILD); }

compat-report-go:
	@command -v go >/dev/null || { apt-get update -q && apt-get install -y -q golang-go; }
	cd compat/report/franzgo && go mod download

compat-report-librdkafka: $(RDKAFKA_RUNNER)

$(RDKAFKA_RUNNER):
	@command -v npm >/dev/null && command -v g++ >/dev/null && [ -e /usr/include/zlib.h ] || \
		{ apt-get update -q && apt-get install -y -q npm g++ make zlib1g-dev; }
	rm -rf $(REPORT_BUILD)/npm $(RDKAFKA_DIR) && mkdir -p $(REPORT_BUILD)/npm
	cd $(REPORT_BUILD)/npm && npm pack -q node-rdkafka@$(NODE_RDKAFKA_VERSION) && tar xzf node-rdkafka-$(NODE_RDKAFKA_VERSION).tgz
	mv $(REPORT_BUILD)/npm/package/deps/librdkafka $(RDKAFKA_DIR) && rm -rf $(REPORT_BUILD)/npm
	cd $(RDKAFKA_DIR) && ./configure --disable-ssl --disable-gssapi --disable-curl --disable-zstd \
		--disable-lz4-ext --disable-sasl >/dev/null && $(MAKE) -j2 libs >/dev/null
	$(MAKE) -C $(RDKAFKA_DIR)/tests build >/dev/null

compat-report: setup compat-report-go compat-report-librdkafka compat-report-kafka-python
	$(PY) -m compat.report $(REPORT_SUITES)
