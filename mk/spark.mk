# Spark's Kafka connector and spark-avro (from_avro/to_avro) at exactly the installed PySpark version,
# and the Iceberg Spark runtime for its major.minor line (table topics, docs/tables.md): resolved by
# Maven (spark/pom.xml) into spark/jars/, which spark/session.py hands to Spark with spark.jars.
SPARK_JARS_DIR := spark/jars
SPARK_VERSION_CMD := $(PY) -c 'import pyspark; print(pyspark.__version__)'

.PHONY: spark-jars
spark-jars: $(SPARK_JARS_DIR)/.resolved

# Re-resolve when the pom or the installed PySpark changes; otherwise this is a no-op.
$(SPARK_JARS_DIR)/.resolved: spark/pom.xml spark/maven-settings.xml $(VENV)/.installed
	@v=$$($(SPARK_VERSION_CMD)) && echo "resolving spark-sql-kafka-0-10 $$v" && \
	rm -rf $(SPARK_JARS_DIR) && \
	mvn -q -B -s spark/maven-settings.xml -f spark/pom.xml dependency:copy-dependencies \
	  -Dspark.version=$$v -Dspark.binary.version=$${v%.*} && \
	ls $(SPARK_JARS_DIR)/spark-sql-kafka-0-10_*-$$v.jar $(SPARK_JARS_DIR)/spark-avro_*-$$v.jar \
	  $(SPARK_JARS_DIR)/iceberg-spark-runtime-$${v%.*}_*.jar >/dev/null && \
	echo $$v > $@

SETUP_TARGETS += spark-jars
