"""Spark's stock Kafka connector reads a SASL_SSL gateway with the usual `kafka.`-prefixed options
(`kafka.security.protocol`, `kafka.sasl.jaas.config`, a PEM truststore), through spark.source.read."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.security import kafka_gateway as kg
from tests.security.kafka_gateway import ALICE, ALICE_PW

pytestmark = pytest.mark.timeout(600)


def spark_options(gw, user: str, password: str) -> dict:
    props = dict(line.split("=", 1) for line in kg.java_properties(gw, user, password).splitlines())
    return {f"kafka.{k}": v for k, v in props.items()}


def test_spark_batch_read_over_sasl_ssl(tmp_path):
    pytest.importorskip("pyspark")
    from spark import session
    from spark.source import read

    gw = kg.start(str(tmp_path))
    spark = None
    try:
        admin = kg.librdkafka(gw, kg.ADMIN, kg.ADMIN_PW)
        p = Producer(admin)
        for i in range(3):
            p.produce("spark-orders", f"v{i}".encode(), partition=0)
        assert p.flush(20) == 0
        from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient
        from confluent_kafka.admin import ResourcePatternType, ResourceType
        client = AdminClient(admin)
        for f in client.create_acls([AclBinding(ResourceType.TOPIC, "spark-orders", ResourcePatternType.LITERAL,
                                                f"User:{ALICE}", "*", AclOperation.READ,
                                                AclPermissionType.ALLOW)]).values():
            f.result(20)
        spark = session.build("rocketgate-sasl-ssl")
        df = read(spark, gw.kafka_bootstrap, "spark-orders", starting="earliest", ending="latest",
                  options=spark_options(gw, ALICE, ALICE_PW))
        assert sorted(r.value.decode() for r in df.select("value").collect()) == ["v0", "v1", "v2"]
    finally:
        if spark is not None:
            spark.stop()
        gw.stop()
