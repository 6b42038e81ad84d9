"""A real S3-compatible server for tests and benchmarks: SeaweedFS's `weed server -s3` (master, volume
server, filer and S3 gateway in one process) on free loopback ports, its data under a work dir.

    with SeaweedS3(workdir) as s3:  s3.endpoint, s3.access_key, s3.secret_key, s3.create_bucket("b")

Requests are authenticated (one admin identity with a random key pair, in the S3 config file); with
`tls=(cert, key)` the S3 API also answers HTTPS on `s3.https_endpoint`; `domain="localhost"` lets it take
virtual-host requests (BUCKET.localhost). The binary is the one `make objstore-server` (mk/objstore.mk)
builds into the per-user cache; missing, it is built here the same way. Restart keeps ports and data, so
a test can take the server away and bring it back."""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from bench.brokers import ROOT, BrokerError, System, _port_open, free_port

_MK_FILE = os.path.join(ROOT, "mk", "objstore.mk")


def seaweedfs_version() -> str:
    """The pinned version, read from mk/objstore.mk (the one place it is written)."""
    with open(_MK_FILE) as f:
        match = re.search(r"^SEAWEEDFS_VERSION\s*:=\s*(\S+)", f.read(), re.M)
    if match is None:
        raise BrokerError(f"no SEAWEEDFS_VERSION in {_MK_FILE}")
    return match.group(1)


def weed_binary() -> str:
    """The cached `weed` binary; `SEAWEEDFS_CACHE` moves the cache as it does for make."""
    cache = os.environ.get("SEAWEEDFS_CACHE") or os.path.expanduser("~/.cache/rocketgate/seaweedfs")
    path = os.path.join(cache, seaweedfs_version(), "weed")
    if not os.path.exists(path):
        subprocess.run(["make", "-s", "objstore-server"], cwd=ROOT, check=True)
    return path


class SeaweedS3(System):
    name = "seaweedfs"
    start_timeout = 60.0

    def __init__(self, workdir: str, tls: tuple[str, str] | None = None, domain: str | None = None,
                 host: str = "127.0.0.1"):
        super().__init__(workdir)
        self.tls, self.domain, self.host = tls, domain, host  # host: where it listens (the fault harness: its bridge)
        self.data_dir = os.path.join(self.workdir, "data")
        self.access_key = "RG" + secrets.token_hex(9).upper()
        self.secret_key = secrets.token_urlsafe(30)
        names = ["master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc"]
        if tls:
            names.append("s3_https")
        self.ports = {n: free_port() for n in names}
        self.started_in = 0.0  # seconds from spawn to the first answered authenticated request

    @property
    def credentials_file(self) -> str:
        """An AWS credentials file with the server's key pair (S3Options.credentials_file)."""
        return os.path.join(self.workdir, "credentials")

    def tier_args(self, bucket: str, prefix: str = "tier") -> list[str]:
        """The gateway flags that put its tier on this server."""
        return ["--tier-url", f"s3://{bucket}/{prefix}", "--tier-endpoint", self.endpoint,
                "--tier-credentials-file", self.credentials_file]

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.ports['s3']}"

    @property
    def https_endpoint(self) -> str:
        return f"https://localhost:{self.ports['s3_https']}"

    def _prepare(self) -> None:
        os.makedirs(self.data_dir, exist_ok=True)
        identity = {"name": "rocketgate", "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}]}
        with open(os.path.join(self.workdir, "s3.json"), "w") as f:
            json.dump({"identities": [identity]}, f)
        with open(self.credentials_file, "w") as f:
            f.write(f"[default]\naws_access_key_id = {self.access_key}\naws_secret_access_key = {self.secret_key}\n")

    def _command(self) -> list[str]:
        p = self.ports
        cmd = [weed_binary(), "server", "-s3", "-filer", f"-ip={self.host}", f"-ip.bind={self.host}",
               f"-dir={self.data_dir}", "-master.telemetry=false", "-master.volumeSizeLimitMB=256",
               "-volume.max=500", "-volume.preStopSeconds=0",
               f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
               f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
               f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
               f"-filer.localSocket={self.workdir}/filer.sock",
               f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               f"-s3.localSocket={self.workdir}/s3.sock", f"-s3.config={self.workdir}/s3.json"]
        if self.tls:
            cert, key = self.tls
            cmd += [f"-s3.port.https={p['s3_https']}", f"-s3.cert.file={cert}", f"-s3.key.file={key}"]
        if self.domain:
            cmd.append(f"-s3.domainName={self.domain}")
        return cmd

    def _launch(self) -> None:
        began = time.monotonic()
        # Every bucket is a collection with volumes of its own, 7 by default: 2 keep a test session's
        # hundreds of buckets within -volume.max (volume files grow as written, none is preallocated).
        env = {**os.environ, "WEED_MASTER_VOLUME_GROWTH_COPY_1": "2"}
        proc = self._spawn("weed", self._command(), env=env, cwd=self.workdir)
        self._wait(proc, lambda: _port_open(self.ports["s3"], self.host), "S3 port")
        self._wait(proc, self._answers, "an authenticated round trip")
        self.started_in = time.monotonic() - began

    def pause(self) -> None:
        """SIGSTOP: the server holds its connections and answers nothing (a hung store)."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.pids():
            os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a few seconds: its filer spends ~15 s on a last metadata flush
        once the volume server has gone, and nothing here needs that flush."""
        self.resume()  # a paused process would sit on its SIGTERM until the timeout
        self._stop_sampler()
        for p in reversed(self.processes):
            p.stop(timeout=3.0)
        self.processes = []
        self._remove_sockets()

    def kill9(self) -> None:
        super().kill9()
        self._remove_sockets()

    def _remove_sockets(self) -> None:
        """Its gRPC services' unix sockets, at fixed /tmp paths a killed process leaves behind."""
        for service in ("master", "volume", "filer", "s3"):
            try:
                os.unlink(f"/tmp/seaweedfs-{service}-grpc-{self.ports[service + '_grpc']}.sock")
            except FileNotFoundError:
                pass

    def client(self, endpoint: str | None = None, **config):
        """A plain boto3 client with the server's credentials (for set-up and checks, not the adapter)."""
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                          connect_timeout=2, read_timeout=10, **config))

    def _answers(self) -> bool:
        """A bucket listing, then a tiny write and read: the filer and a volume server are up too."""
        c = self.client()
        c.list_buckets()
        self.create_bucket("rocketgate-ready")
        c.put_object(Bucket="rocketgate-ready", Key="probe", Body=b"ok")
        return c.get_object(Bucket="rocketgate-ready", Key="probe")["Body"].read() == b"ok"

    def keys(self, bucket: str) -> list[str]:
        """Every object key in `bucket`, all pages."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def create_bucket(self, bucket: str) -> None:
        c = self.client()
        try:
            c.create_bucket(Bucket=bucket)
        except c.exceptions.BucketAlreadyOwnedByYou:
            pass
        except c.exceptions.BucketAlreadyExists:
            pass


@contextlib.contextmanager
def bench_workdir(prefix: str, bucket: str):
    """(work dir, started server with `bucket`, list to add started gateways to) for a benchmark; on exit
    the gateways and the server are stopped and the work dir removed, also when the run failed."""
    work = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    server = SeaweedS3(os.path.join(work, "s3"))
    gateways: list = []
    try:
        server.start()
        server.create_bucket(bucket)
        yield work, server, gateways
    finally:
        for gw in gateways:
            gw.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Start one server in the foreground (for a manual look); Ctrl-C stops it."""
    import tempfile
    with SeaweedS3(tempfile.mkdtemp(prefix="seaweed-")) as s3:
        print(f"endpoint {s3.endpoint} access key {s3.access_key} secret key {s3.secret_key} "
              f"(ready in {s3.started_in:.1f}s)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
