"""An etcd v3 client for trio: the JSON gateway etcd serves on its client port (`/v3/...`), spoken
with `httpx` (which runs on trio through anyio). Keys and values are bytes on our side and base64 on
the wire. Covers what the cluster needs: put / get / range / delete, transactions (compare-and-swap),
leases (grant, keep-alive, revoke) and watches (a streaming response of JSON events).

Several endpoints may be given; a request that cannot reach one tries the next."""
from __future__ import annotations

import base64
import dataclasses
import json
import logging
from urllib.parse import urlparse

REQUEST_TIMEOUT = 5.0
logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per etcd request otherwise


class EtcdError(Exception):
    """etcd answered with an error, or no endpoint could be reached."""


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def prefix_end(prefix: bytes) -> bytes:
    """The range end covering every key that starts with `prefix` (etcd's convention)."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def parse_url(url: str) -> list[str]:
    """`etcd://HOST:PORT[,HOST:PORT]` -> ["http://HOST:PORT", ...]."""
    parsed = urlparse(url)
    if parsed.scheme != "etcd" or not parsed.netloc:
        raise ValueError(f"invalid cluster URL {url!r} (expected etcd://HOST:PORT[,HOST:PORT])")
    return [f"http://{hostport}" for hostport in parsed.netloc.split(",") if hostport]


@dataclasses.dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    mod_revision: int
    create_revision: int
    version: int
    lease: int

    @classmethod
    def from_json(cls, kv: dict) -> "KeyValue":
        return cls(_unb64(kv.get("key")), _unb64(kv.get("value")), int(kv.get("mod_revision", 0)),
                   int(kv.get("create_revision", 0)), int(kv.get("version", 0)), int(kv.get("lease", 0)))


@dataclasses.dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: str  # "PUT" or "DELETE"
    kv: KeyValue


# Transaction building blocks (the JSON of etcd's Compare and RequestOp).
def compare_value(key: bytes, value: bytes) -> dict:
    return {"key": _b64(key), "target": "VALUE", "result": "EQUAL", "value": _b64(value)}


def compare_version(key: bytes, version: int) -> dict:
    """version 0: the key does not exist."""
    return {"key": _b64(key), "target": "VERSION", "result": "EQUAL", "version": str(version)}


def compare_mod_revision(key: bytes, revision: int) -> dict:
    return {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(revision)}


def op_put(key: bytes, value: bytes, lease: int = 0) -> dict:
    body = {"key": _b64(key), "value": _b64(value)}
    if lease:
        body["lease"] = str(lease)
    return {"request_put": body}


def op_get(key: bytes) -> dict:
    return {"request_range": {"key": _b64(key)}}


def op_delete(key: bytes, range_end: bytes | None = None) -> dict:
    body = {"key": _b64(key)}
    if range_end is not None:
        body["range_end"] = _b64(range_end)
    return {"request_delete_range": body}


class Etcd:
    """One client (one connection pool); `await aclose()` when done."""

    def __init__(self, endpoints: list[str]) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoint")
        self.endpoints = list(endpoints)
        import httpx  # ~0.3 s to import (its CLI pulls click, rich): only a gateway in a cluster pays it

        self._http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT)

    @classmethod
    def from_url(cls, url: str) -> "Etcd":
        return cls(parse_url(url))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, path: str, body: dict) -> dict:
        import httpx  # imported in __init__ already (deferred there)

        last: Exception | None = None
        for i, base in enumerate(self.endpoints):
            try:
                resp = await self._http.post(base + path, json=body)
            except httpx.TransportError as exc:
                last = exc
                continue
            if i:  # prefer the endpoint that answered
                self.endpoints.insert(0, self.endpoints.pop(i))
            data = resp.json()
            if resp.status_code != 200 or "error" in data and "code" in data:
                raise EtcdError(f"etcd {path}: {data.get('message') or data.get('error') or resp.status_code}")
            return data
        raise EtcdError(f"etcd unreachable at {', '.join(self.endpoints)}: {last}")

    # --- KV ---
    async def put(self, key: bytes, value: bytes, lease: int = 0) -> int:
        """Store `value` under `key`; returns the new revision."""
        body = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        data = await self._call("/v3/kv/put", body)
        return int(data["header"]["revision"])

    async def get(self, key: bytes) -> KeyValue | None:
        kvs, _ = await self.range(key)
        return kvs[0] if kvs else None

    async def range(self, key: bytes, range_end: bytes | None = None) -> tuple[list[KeyValue], int]:
        """(the key-values in [key, range_end), the store revision they were read at)."""
        body = {"key": _b64(key)}
        if range_end is not None:
            body["range_end"] = _b64(range_end)
        data = await self._call("/v3/kv/range", body)
        return [KeyValue.from_json(kv) for kv in data.get("kvs", [])], int(data["header"]["revision"])

    async def get_prefix(self, prefix: bytes) -> tuple[list[KeyValue], int]:
        return await self.range(prefix, prefix_end(prefix))

    async def delete(self, key: bytes, range_end: bytes | None = None) -> int:
        """Delete `key` (or the range); returns how many keys went."""
        body = {"key": _b64(key)}
        if range_end is not None:
            body["range_end"] = _b64(range_end)
        data = await self._call("/v3/kv/deleterange", body)
        return int(data.get("deleted", 0))

    async def txn(self, compare: list[dict], success: list[dict], failure: list[dict] = ()) -> tuple[bool, list]:
        """If every comparison holds run `success`, else `failure`: (succeeded, the ops' responses;
        a range op's response is a list of KeyValue)."""
        data = await self._call("/v3/kv/txn", {"compare": compare, "success": success, "failure": list(failure)})
        return self._txn_answer(data)

    async def txn_revision(self, compare: list[dict], success: list[dict]) -> int:
        """`txn` without a failure branch: the store revision its writes made (a key put by it has that
        mod revision), 0 if a comparison failed."""
        data = await self._call("/v3/kv/txn", {"compare": compare, "success": success, "failure": []})
        return int(data["header"]["revision"]) if data.get("succeeded", False) else 0

    @staticmethod
    def _txn_answer(data: dict) -> tuple[bool, list]:
        out = []
        for r in data.get("responses", []):
            rng = r.get("response_range")
            out.append([KeyValue.from_json(kv) for kv in rng.get("kvs", [])] if rng is not None else r)
        return bool(data.get("succeeded", False)), out

    # --- leases ---
    async def lease_grant(self, ttl: int) -> int:
        data = await self._call("/v3/lease/grant", {"TTL": str(ttl)})
        return int(data["ID"])

    async def lease_keepalive(self, lease: int) -> int:
        """Refresh `lease` once; returns its TTL (0 or less: it has expired)."""
        data = await self._call("/v3/lease/keepalive", {"ID": str(lease)})
        return int(data.get("result", {}).get("TTL", 0))

    async def lease_revoke(self, lease: int) -> None:
        await self._call("/v3/lease/revoke", {"ID": str(lease)})

    # --- watch ---
    async def watch(self, prefix: bytes, start_revision: int, on_events) -> None:
        """Call `await on_events([WatchEvent, ...])` for every change under `prefix` from
        `start_revision` on; runs until cancelled (EtcdError when the stream breaks)."""
        import httpx  # imported in __init__ already (deferred there)

        body = {"create_request": {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)),
                                   "start_revision": str(start_revision)}}
        try:
            async with self._http.stream("POST", self.endpoints[0] + "/v3/watch", json=body,
                                         timeout=httpx.Timeout(REQUEST_TIMEOUT, read=None)) as resp:
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    result = json.loads(line).get("result", {})
                    if result.get("canceled"):
                        raise EtcdError(f"watch canceled: {result.get('cancel_reason', '')}")
                    events = [WatchEvent(e.get("type", "PUT"), KeyValue.from_json(e["kv"]))
                              for e in result.get("events", [])]
                    if events:
                        await on_events(events)
        except httpx.TransportError as exc:
            raise EtcdError(f"watch broke: {exc}") from None
        raise EtcdError("watch stream ended")
