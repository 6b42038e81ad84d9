"""A throwaway CA, a server certificate for 127.0.0.1/localhost and a client certificate, made with the
`openssl` command at test time (PEM files; Java clients read them with ssl.truststore.type=PEM)."""
from __future__ import annotations

import dataclasses
import os
import subprocess

@dataclasses.dataclass
class Certs:
    dir: str
    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str


def _run(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _signed(d: str, name: str, subject: str, ext: str | None) -> None:
    _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
         cwd=d)
    args = ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", f"{name}.pem"]
    if ext:
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext)
        args += ["-extfile", f"{name}.ext"]
    _run(*args, cwd=d)


def make_certs(d: str) -> Certs:
    os.makedirs(d, exist_ok=True)
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=rocketgate-test-ca", cwd=d)
    _signed(d, "server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _signed(d, "client", "/O=Example/CN=app", None)
    j = lambda n: os.path.join(d, n)  # noqa: E731
    return Certs(d, j("ca.pem"), j("server.pem"), j("server.key"), j("client.pem"), j("client.key"))
