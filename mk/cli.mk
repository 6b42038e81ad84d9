# Kafka's and RocketMQ's command-line tools as ./bin/ wrappers (gitignored), run from the jars that
# `make bench-jars` already resolves (Kafka 4.3.1, RocketMQ 5.5 in bench/jars/): `make cli-tools`, then
# `./bin/kafka-topics.sh --bootstrap-server 127.0.0.1:9092 --list` or `./bin/mqadmin topicList -n 127.0.0.1:9876`
# (docs/guide.md); order-only on the jars, so existing jars are used as they are. Each wrapper is one `java -cp 'bench/jars/<system>/*' <main class> "$@"` line.
CLI_KAFKA_TOOLS := kafka-topics.sh:org.apache.kafka.tools.TopicCommand \
	kafka-console-producer.sh:org.apache.kafka.tools.ConsoleProducer \
	kafka-console-consumer.sh:org.apache.kafka.tools.consumer.ConsoleConsumer \
	kafka-consumer-groups.sh:org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
	kafka-configs.sh:kafka.admin.ConfigCommand \
	kafka-delete-records.sh:org.apache.kafka.tools.DeleteRecordsCommand
CLI_ROCKETMQ_TOOLS := mqadmin:org.apache.rocketmq.tools.command.MQAdminStartup
# RocketMQ's client logs go under ~/logs/rocketmqlogs as with Apache's own mqadmin; WARN keeps them small.
CLI_ROCKETMQ_FLAGS := -Drocketmq.client.logLevel=WARN

.PHONY: cli-tools
cli-tools: | $(BENCH_JARS_STAMP)
	@mkdir -p bin
	@$(foreach t,$(CLI_KAFKA_TOOLS),$(call cli_wrapper,$(word 1,$(subst :, ,$(t))),kafka,,$(word 2,$(subst :, ,$(t)))))
	@$(foreach t,$(CLI_ROCKETMQ_TOOLS),$(call cli_wrapper,$(word 1,$(subst :, ,$(t))),rocketmq,$(CLI_ROCKETMQ_FLAGS),$(word 2,$(subst :, ,$(t)))))
	@echo "cli-tools: $(words $(CLI_KAFKA_TOOLS) $(CLI_ROCKETMQ_TOOLS)) wrappers in ./bin/ (e.g. ./bin/kafka-topics.sh, ./bin/mqadmin)"

# $(1) script name, $(2) bench/jars/ folder, $(3) extra JVM flags, $(4) main class
define cli_wrapper
printf '%s\n' '#!/bin/sh' '# Written by `make cli-tools` (mk/cli.mk): $(1) from the jars in bench/jars/$(2)/.' \
	'root=$$(cd "$$(dirname "$$0")/.." && pwd)' \
	'exec "$${JAVA:-java}" -Xmx512m $(3) -cp "$$root/bench/jars/$(2)/*" $(4) "$$@"' > bin/$(1) && chmod +x bin/$(1);
endef
