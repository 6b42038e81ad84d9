# Reference brokers for `make bench`: Apache Kafka and Apache RocketMQ jars from Maven Central, plus the
# small RocketMQ TPS benchmark class (bench/java/). The stamp makes a repeated `make setup` a no-op.
BENCH_JARS_STAMP := bench/jars/.resolved
BENCH_JAVA_SOURCES := bench/java/pom.xml bench/java/kafka/pom.xml bench/java/rocketmq/pom.xml \
	$(shell find bench/java/rocketmq/src -name '*.java' 2>/dev/null)

.PHONY: bench-jars
bench-jars: $(BENCH_JARS_STAMP)

$(BENCH_JARS_STAMP): $(BENCH_JAVA_SOURCES)
	rm -rf bench/jars/kafka bench/jars/rocketmq
	mvn -q -B -f bench/java/pom.xml package
	touch $@

SETUP_TARGETS += bench-jars
