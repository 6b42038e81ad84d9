"""The ObjectStore contract (store/objstore/api.py) over any S3-compatible server, through boto3.

One botocore client per store: it is thread-safe, so the callers' worker threads (`trio.to_thread`)
share its connection pool. Every call is bounded: connect and read timeouts and a few retries with
backoff (botocore's "standard" mode: 5xx, throttling, dropped connections); what still fails becomes one
of the contract's three errors, so the tier decides retry or give up without knowing the server.
Each PUT carries the body's CRC32C as `x-amz-checksum-crc32c` when the caller gives it (the tier's
segments), else its SHA-256 as `x-amz-checksum-sha256` (the server refuses a body that does not
match either: BadDigest), and is signed with UNSIGNED-PAYLOAD, so the body is checksummed once, by
the caller who needs the checksum anyway (the tier's manifests), not again for Content-MD5 and SigV4's payload
hash (which botocore computes over plain HTTP). The CRC trailers (aws-chunked) are never sent: not
every S3-compatible server takes them."""
from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from dataclasses import dataclass
from typing import Iterator

import boto3
from botocore.config import Config
from botocore.credentials import SharedCredentialProvider
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from store.objstore.api import NotFound, ObjectInfo, ObjectStoreError, PreconditionFailed, TierLocation

_NOT_FOUND = {"404", "NoSuchKey", "NoSuchBucket", "NotFound"}
_PRECONDITION = {"412", "PreconditionFailed"}
_DENIED = {"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
           "InvalidToken", "RequestTimeTooSkewed"}


@dataclass(frozen=True)
class S3Options:
    """How to reach the server; the defaults suit AWS itself (no endpoint, virtual-host addressing)."""
    endpoint: str | None = None  # e.g. http://127.0.0.1:8333; None: AWS's endpoint for the region
    addressing: str | None = None  # "path" | "virtual"; None: path with an endpoint, virtual without
    ca_file: str | None = None  # PEM CA bundle the endpoint's TLS certificate must chain to
    credentials_file: str | None = None  # an AWS credentials file; None: environment, then the default file
    region: str | None = None  # None: AWS_DEFAULT_REGION / the config file, else us-east-1
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    max_attempts: int = 3  # total tries of one request (botocore standard retry mode)
    max_connections: int = 16  # the connection pool (one connection per concurrent worker thread)


class S3ObjectStore:
    """One bucket and prefix of an S3-compatible server (see TierLocation); keys are relative to it."""

    def __init__(self, location: TierLocation, options: S3Options = S3Options()):
        self.location, self.options = location, options
        self._session = _session(options)
        self._client = _client(options, self._session)

    def access(self) -> dict:
        """How another S3 client reaches this bucket as this store does: endpoint (None: AWS), region,
        addressing ("path" | "virtual"), ca_file and the current credentials (key id, secret, token or
        None). The table topics' Iceberg FileIO (tables.warehouse) is configured from it."""
        creds = self._session.get_credentials().get_frozen_credentials()
        return {"endpoint": self.options.endpoint, "region": self._client.meta.region_name,
                "addressing": self.options.addressing or ("path" if self.options.endpoint else "virtual"),
                "ca_file": self.options.ca_file, "access_key_id": creds.access_key,
                "secret_access_key": creds.secret_key, "session_token": creds.token}

    @classmethod
    def from_url(cls, url: str, **options) -> "S3ObjectStore":
        """From `s3://BUCKET/PREFIX` and S3Options fields (the gateway's --tier-* flags)."""
        return cls(TierLocation.parse(url), S3Options(**options))

    def _where(self, key: str) -> dict:
        return {"Bucket": self.location.bucket, "Key": self.location.key(key)}

    def put(self, key: str, data, *, if_absent: bool = False, sha256: bytes | None = None,
            crc32c: int | None = None) -> str:
        extra = {"IfNoneMatch": "*"} if if_absent else {}
        if crc32c is not None:
            extra["ChecksumCRC32C"] = base64.b64encode(crc32c.to_bytes(4, "big")).decode()
        else:
            extra["ChecksumSHA256"] = base64.b64encode(sha256 or hashlib.sha256(data).digest()).decode()
        with _errors(self, "put", key):
            answer = self._client.put_object(Body=data, **self._where(key), **extra)
        return _etag(answer.get("ETag", ""))

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        if start < 0 or (end is not None and end < start):
            raise ValueError(f"bad range [{start}, {end})")
        if end == start:
            return b""
        extra = {} if start == 0 and end is None else \
            {"Range": f"bytes={start}-" + ("" if end is None else str(end - 1))}
        with _errors(self, "get", key):
            try:
                answer = self._client.get_object(**self._where(key), **extra)
            except ClientError as exc:
                if _code(exc) in {"416", "InvalidRange"}:  # the range starts at or past the end
                    return b""
                raise
            return answer["Body"].read()

    def head(self, key: str) -> ObjectInfo | None:
        try:
            with _errors(self, "head", key):
                answer = self._client.head_object(**self._where(key))
        except NotFound:
            return None
        return ObjectInfo(key, answer["ContentLength"], _etag(answer.get("ETag", "")))

    def list(self, prefix: str = "", start_after: str = "", limit: int | None = None) -> Iterator[ObjectInfo]:
        full = self.location.key(prefix)
        skip = len(self.location.prefix)
        where = {"StartAfter": self.location.key(start_after)} if start_after else {}
        if limit is not None:  # S3 answers at most `limit` keys in one page: one request
            where["PaginationConfig"] = {"MaxItems": limit, "PageSize": min(limit, 1000)}
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.location.bucket, Prefix=full,
                                                                       **where)
        with _errors(self, "list", prefix):
            for page in pages:
                for item in page.get("Contents", ()):
                    yield ObjectInfo(item["Key"][skip:], item["Size"], _etag(item.get("ETag", "")))

    def delete(self, key: str) -> None:
        with _errors(self, "delete", key):
            try:
                self._client.delete_object(**self._where(key))
            except ClientError as exc:
                if _code(exc) != "NoSuchKey":  # some servers say so; S3 itself answers 204
                    raise

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        where = self.options.endpoint or "AWS"
        return f"S3ObjectStore(s3://{self.location.bucket}/{self.location.prefix} at {where})"


def _session(options: S3Options):
    if options.addressing not in (None, "path", "virtual"):
        raise ValueError(f"addressing must be 'path' or 'virtual', not {options.addressing!r}")
    for path in (options.ca_file, options.credentials_file):
        if path and not os.path.isfile(path):
            raise ValueError(f"no such file: {path}")
    session = boto3.Session(**_file_credentials(options.credentials_file)) if options.credentials_file \
        else boto3.Session()
    if session.get_credentials() is None:
        raise ValueError("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a "
                         "credentials file (AWS_SHARED_CREDENTIALS_FILE or --tier-credentials-file)")
    return session


def _client(options: S3Options, session):
    addressing = options.addressing or ("path" if options.endpoint else "virtual")
    config = Config(
        # payload_signing_enabled=False: UNSIGNED-PAYLOAD also over plain HTTP (put sends a checksum)
        s3={"addressing_style": addressing, "payload_signing_enabled": False}, signature_version="s3v4",
        connect_timeout=options.connect_timeout, read_timeout=options.read_timeout,
        retries={"max_attempts": options.max_attempts, "mode": "standard"},
        max_pool_connections=options.max_connections,
        request_checksum_calculation="when_required", response_checksum_validation="when_required",
        parameter_validation=False)  # the calls above pass fixed types; checking them cost ~0.2 ms a request
    region = options.region or session.region_name or "us-east-1"
    return session.client("s3", endpoint_url=options.endpoint, region_name=region, config=config,
                          verify=options.ca_file if options.ca_file else True)


def _file_credentials(path: str) -> dict:
    """The [default] key pair of an AWS credentials file named outright: it wins over the environment."""
    found = SharedCredentialProvider(creds_filename=path, profile_name="default").load()
    if found is None:
        raise ValueError(f"{path}: no aws_access_key_id / aws_secret_access_key under [default]")
    return {"aws_access_key_id": found.access_key, "aws_secret_access_key": found.secret_key,
            "aws_session_token": found.token}


def _etag(raw: str) -> str:
    return raw.strip('"')


def _code(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


@contextlib.contextmanager
def _errors(store: S3ObjectStore, op: str, key: str) -> Iterator[None]:
    """Turns what boto3 raises during one call into the contract's errors, naming the call and key."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise _translate(exc, f"{op} {store.location.bucket}/{store.location.key(key)}") from exc


def _translate(exc: Exception, what: str) -> ObjectStoreError:
    if isinstance(exc, NoCredentialsError):
        return ObjectStoreError(f"{what}: no S3 credentials")
    if not isinstance(exc, ClientError):  # timeouts, refused or dropped connections, TLS failures
        return ObjectStoreError(f"{what}: {exc}")
    code = _code(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in _NOT_FOUND or status == 404:
        return NotFound(f"{what}: {code}")
    if code in _PRECONDITION or status == 412:
        return PreconditionFailed(f"{what}: the key exists ({code})")
    if code in _DENIED or status == 403:
        return ObjectStoreError(f"{what}: access denied ({code}): check the credentials "
                                "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the credentials file) "
                                "and the bucket's permissions")
    return ObjectStoreError(f"{what}: {code} (HTTP {status})")
