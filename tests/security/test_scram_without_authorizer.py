"""SCRAM users made through the Kafka admin API while the gateway runs without `--authorizer acl`: as on
Kafka 4.3 without an authorizer the change succeeds (checked against Kafka in tests/kafka/
test_kafka_admin_cli.py), and the users land in the data dir's user store, so the same gateway started
with `--authorizer acl` and a SASL listener lets them log in."""
from __future__ import annotations

import os

from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

from tests.gateway_process import GatewayProcess
from tests.security import kafka_gateway as kg

USER, PASSWORD = "bob", "bob-secret"


def test_user_added_without_an_authorizer_logs_in_once_acls_are_on(tmp_path):
    base = str(tmp_path)
    plain = GatewayProcess(os.path.join(base, "data")).start()
    try:
        admin = AdminClient({"bootstrap.servers": plain.kafka_bootstrap})
        upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                              PASSWORD.encode())
        gone = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"x")
        for future in admin.alter_user_scram_credentials([upsert, gone]).values():
            future.result(15)
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])[
            "carol"].result(15)
        described = admin.describe_user_scram_credentials([USER])[USER].result(15)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_256, 8192)]
    finally:
        plain.stop()
    secured = kg.start(base)  # same data dir, now SASL_SSL with ACLs (bob is no super user: DESCRIBE fails)
    try:
        conf = kg.librdkafka(secured, USER, PASSWORD)
        md = AdminClient(conf).list_topics(timeout=15)  # raises unless bob authenticated
        assert md.brokers
    finally:
        secured.stop()
