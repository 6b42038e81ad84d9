# Kafka's own frameworks against the gateway (issue 11): the Kafka Streams and Kafka Connect suites
# (compat/java/kafkastreams, compat/java/kafkaconnect; their JVM runs take minutes, so they stay out of
# `make test`) and the KIP-848 many-member rebalance benchmark. The modules are built by
# `make compat-jars` (compat/java/pom.xml lists them). Each suite's latest output goes to docs/.
.PHONY: compat-streams compat-connect bench-groups

# $(call run_suite,TITLE,TEST_FILE,DOC): pytest TEST_FILE, its output kept in DOC, pytest's exit status.
define run_suite
	@KAFKA_APPS=1 $(PY) -m pytest $(2) -v -p no:cacheprovider > $(3).out 2>&1; rc=$$?; \
	{ printf '# %s against %s (latest `make %s`)\n\n%s. Every test was first run against Apache Kafka 4.3 (KAFKA_REFERENCE_BOOTSTRAP=host:port).\n\n```\n' \
	    "$(1)" "$${KAFKA_REFERENCE_BOOTSTRAP:-the gateway}" "$@" "$$(date -u '+%F %H:%M UTC')"; \
	  grep -E 'PASSED|FAILED|ERROR|SKIPPED|passed|failed' $(3).out; printf '```\n'; } > $(3); \
	cat $(3).out; rm -f $(3).out; exit $$rc
endef

compat-streams: setup
	$(call run_suite,Kafka Streams 4.3,tests/compat/test_kafka_streams.py,docs/compat-streams.md)
compat-connect: setup
	$(call run_suite,Kafka Connect 4.3,tests/compat/test_kafka_connect.py,docs/compat-connect.md)
bench-groups: setup
	$(PY) -m bench.groups $(GROUPS_BENCH_ARGS)

# The new modules keep their sources in their own folders: a change to them rebuilds the jars too.
$(COMPAT_JARS_STAMP): $(shell find compat/java/kafkastreams/src compat/java/kafkaconnect/src -name '*.java' 2>/dev/null)
