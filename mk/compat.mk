# Third-party clients for tests/compat: the Java scenario programs (and compat.KafkaSchemas, which
# tests/kafka/test_kafka_schemas.py runs) and Kafka/RocketMQ tools resolved by
# Maven (compat/java, each module writes target/classpath.txt), and kcat from Debian. Stamped, so a
# repeated `make setup` does nothing.
COMPAT_JARS_STAMP := compat/java/target/.built
COMPAT_JAVA_SOURCES := $(wildcard compat/java/pom.xml compat/java/*/pom.xml) \
	$(shell find compat/java/src -name '*.java' 2>/dev/null)

.PHONY: compat-jars compat-kcat
compat-jars: $(COMPAT_JARS_STAMP)

$(COMPAT_JARS_STAMP): $(COMPAT_JAVA_SOURCES)
	mvn -q -B -f compat/java/pom.xml compile
	mkdir -p $(dir $@) && touch $@

# kcat (Debian package); CI runs as root.
compat-kcat:
	@command -v kcat >/dev/null || { apt-get update -q && apt-get install -y -q kcat; }

SETUP_TARGETS += compat-jars compat-kcat
