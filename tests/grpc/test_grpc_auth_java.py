"""Signed gRPC calls with the stock Java SDK rocketmq-client-java 5.x (`StaticSessionCredentialsProvider`)
against `--authorizer acl`: the right AccessKey/SecretKey sends; a wrong secret, an unknown key and a
topic its user may not use are refused with the UnauthorizedException (code 40100) and the proxy's
message. The probe is a single Java source file run by the JVM's source launcher on the SDK's
classpath (compat/java/rocketmqgrpc)."""
from __future__ import annotations

import os
import subprocess

import pytest

from compat.jvm import java_command
from test_grpc_auth import AK, SK, TOPIC, gw  # noqa: F401 - the signed gateway fixture

pytestmark = pytest.mark.timeout(300)

PROBE = r"""
import java.time.Duration;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.producer.Producer;

/** args: endpoints, then accessKey:secretKey:topic per case; prints one line per case. */
public class GrpcAuthProbe {
    public static void main(String[] args) {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        for (int i = 1; i < args.length; i++) {
            String[] c = args[i].split(":", -1);
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(args[0]).enableSsl(false)
                .setCredentialProvider(new StaticSessionCredentialsProvider(c[0], c[1]))
                .setRequestTimeout(Duration.ofSeconds(5)).build();
            try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(c[2])
                    .build()) {
                producer.send(provider.newMessageBuilder().setTopic(c[2]).setBody("x".getBytes()).build());
                System.out.println("CASE " + i + " SENT");
            } catch (Throwable t) {
                Throwable root = t;
                while (root.getCause() != null && root.getCause() != root) {
                    root = root.getCause();
                }
                System.out.println("CASE " + i + " " + root.getClass().getSimpleName() + ": " + root.getMessage());
            }
        }
        System.exit(0);
    }
}
"""


def test_java_sdk_signed_calls(gw, tmp_path):  # noqa: F811
    source = tmp_path / "GrpcAuthProbe.java"
    source.write_text(PROBE)
    cases = [f"{AK}:{SK}:{TOPIC}", f"{AK}:wrong:{TOPIC}", f"AK-nobody:x:{TOPIC}", f"{AK}:{SK}:ga-other"]
    logs = str(tmp_path / "logs")
    os.makedirs(logs)
    r = subprocess.run(java_command("rocketmqgrpc", str(source), [gw.endpoints, *cases], logs), capture_output=True,
                       text=True, timeout=240, cwd=logs)
    lines = {int(line.split()[1]): line.split(" ", 2)[2] for line in r.stdout.splitlines() if line.startswith("CASE ")}
    assert lines.get(1) == "SENT", r.stdout + r.stderr[-3000:]
    for case, message in ((2, "check signature failed."), (3, "User:AK-nobody is not found."),
                          (4, "User:alice has no permission to access Topic:ga-other from 127.0.0.1, "
                              "no matched policies.")):
        assert lines.get(case, "").startswith("UnauthorizedException: "), (case, r.stdout)
        assert "response-code=40100" in lines[case] and lines[case].endswith(message), (case, lines[case])
