# `make compat-report` (not part of `make test`, about an hour): third-party clients' own suites, each first
# against real Apache Kafka / RocketMQ (bench/brokers.py) and then a fresh gateway; writes
# docs/compatibility.md and docs/compatibility.json (compat/report/__main__.py). REPORT_SUITES picks some of
# franz-go, java, matrix, librdkafka, kafka-python.
#
# - franz-go: pkg/kgo's own tests, module pinned in compat/report/franzgo/go.mod (Go module proxy).
# - librdkafka: its tests/ as shipped in the node-rdkafka npm package (deps/librdkafka), built without
#   SSL/SASL/zstd/curl; the test-runner needs only zlib and a C/C++ compiler. Its share-consumer tests
#   (KIP-932: the broker ones of 0170-0185) are newer than node-rdkafka's copy: a second build, from the
#   librdkafka that the @confluentinc/kafka-javascript npm package ships, runs them (full mode,
#   compat/report/librdkafka.py);
#   built with zstd (libzstd-dev), as 0171 produces and consumes with every codec.
REPORT_BUILD := compat/report/build
NODE_RDKAFKA_VERSION := 3.6.1
RDKAFKA_DIR := $(REPORT_BUILD)/librdkafka
RDKAFKA_RUNNER := $(RDKAFKA_DIR)/tests/test-runner
CONFLUENT_KAFKA_JS_VERSION := 1.10.1
RDKAFKA_SHARE_DIR := $(REPORT_BUILD)/librdkafka-share
RDKAFKA_SHARE_RUNNER := $(RDKAFKA_SHARE_DIR)/tests/test-runner

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

compat-report-librdkafka: $(RDKAFKA_RUNNER) $(RDKAFKA_SHARE_RUNNER)

# $(call build_rdkafka_tests,npm package@version,target folder,configure's --disable-zstd or nothing):
# its deps/librdkafka, the library and test-runner
define build_rdkafka_tests
	@command -v npm >/dev/null && command -v g++ >/dev/null && [ -e /usr/include/zlib.h ] && \
		[ -e /usr/include/zstd.h ] || { apt-get update -q && apt-get install -y -q npm g++ make zlib1g-dev libzstd-dev; }
	rm -rf $(REPORT_BUILD)/npm $(2) && mkdir -p $(REPORT_BUILD)/npm
	cd $(REPORT_BUILD)/npm && npm pack -q $(1) && tar xzf *.tgz
	mv $(REPORT_BUILD)/npm/package/deps/librdkafka $(2) && rm -rf $(REPORT_BUILD)/npm
	cd $(2) && ./configure --disable-ssl --disable-gssapi --disable-curl $(3) \
		--disable-lz4-ext --disable-sasl >/dev/null && $(MAKE) -j2 libs >/dev/null
	$(MAKE) -C $(2)/tests build >/dev/null
endef

$(RDKAFKA_RUNNER):
	$(call build_rdkafka_tests,node-rdkafka@$(NODE_RDKAFKA_VERSION),$(RDKAFKA_DIR),--disable-zstd)

$(RDKAFKA_SHARE_RUNNER):
	$(call build_rdkafka_tests,@confluentinc/kafka-javascript@$(CONFLUENT_KAFKA_JS_VERSION),$(RDKAFKA_SHARE_DIR))

compat-report: setup compat-report-go compat-report-librdkafka compat-report-kafka-python
	$(PY) -m compat.report $(REPORT_SUITES)
