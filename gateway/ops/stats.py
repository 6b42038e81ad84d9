"""Counters the connection loops update per request. Plain lists and dicts, no locks: every update
happens on the event loop (flush timings come from one worker thread and only touch their own
list), so one request costs a dict lookup, a bisect and a few integer additions. The Prometheus
collector (`gateway.ops.collector`) turns them into metric families at scrape time."""
from __future__ import annotations

import bisect
import time

import trio

# Seconds; the +Inf bucket is the count.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Histogram:
    """Counts per bucket (not cumulative), the sum and the count of observed seconds."""

    __slots__ = ("buckets", "total", "count")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus buckets: (upper bound, observations ≤ it), ending with +Inf."""
        out, running = [], 0
        for bound, n in zip((*map(str, LATENCY_BUCKETS), "+Inf"), self.buckets):
            running += n
            out.append((bound, running))
        return out


class RequestStats:
    """Per (protocol, request name): a latency histogram and an error count."""

    def __init__(self) -> None:
        self.latency: dict[tuple[str, str], Histogram] = {}
        self.errors: dict[tuple[str, str], int] = {}

    def observe(self, protocol: str, request: str, seconds: float, error: bool = False) -> None:
        key = (protocol, request)
        hist = self.latency.get(key)
        if hist is None:
            hist = self.latency[key] = Histogram()
        hist.observe(seconds)
        if error:
            self.errors[key] = self.errors.get(key, 0) + 1


class GatewayStats:
    """The App's hot-path statistics and its health (readiness) state."""

    def __init__(self) -> None:
        self.requests = RequestStats()
        self.bytes_in = {"kafka": 0, "remoting": 0}
        self.bytes_out = {"kafka": 0, "remoting": 0}
        self.connections = {"kafka": 0, "remoting": 0, "grpc": 0}
        self.connections_accepted = {"kafka": 0, "remoting": 0, "grpc": 0}
        self.request_bytes = None  # gateway.connections.RequestBytes, set by the server
        self.appended: dict[str, int] = {}  # messages stored per topic (both protocols)
        self.appended_bytes: dict[str, int] = {}  # CommitLog bytes stored per topic
        self.fetched_bytes: dict[tuple[str, str], int] = {}  # (protocol, topic) -> message bytes served
        self.fetches: dict[tuple[str, str], int] = {}  # (protocol, topic) -> answers that carried messages
        self.principal_requests: dict[tuple[str, str], int] = {}  # (protocol, principal) -> requests
        self.store_writes = Histogram()
        self.store_flushes = Histogram()
        self.listeners_up = False
        self.stopping = False
        self.started = time.time()
        self.shutdown = trio.Event()  # set when the gateway stops accepting (ends the HTTP server)

    def connection_opened(self, protocol: str) -> None:
        """The connection loop decrements `connections[protocol]` when it ends."""
        self.connections[protocol] += 1
        self.connections_accepted[protocol] += 1

    def fetched(self, protocol: str, topic: str, nbytes: int) -> None:
        """One answer (a Kafka partition, a RocketMQ pull) served `nbytes` of `topic`'s messages."""
        key = (protocol, topic)
        self.fetched_bytes[key] = self.fetched_bytes.get(key, 0) + nbytes
        self.fetches[key] = self.fetches.get(key, 0) + 1

    def fetch_response(self, responses: list) -> None:
        """Counts a Kafka Fetch response's non-empty partitions per topic (what the client receives)."""
        for topic in responses:
            for part in topic["partitions"]:
                if len(part["records"]):
                    self.fetched("kafka", topic["topic"], len(part["records"]))

    def principal_request(self, protocol: str, principal: str) -> None:
        key = (protocol, principal)
        self.principal_requests[key] = self.principal_requests.get(key, 0) + 1

    # -- store hooks ---------------------------------------------------------------------------
    def dispatch(self, requests) -> None:
        """A store dispatcher: counts the logical messages appended per topic."""
        appended, appended_bytes = self.appended, self.appended_bytes
        for r in requests:
            appended[r.topic] = appended.get(r.topic, 0) + r.count
            appended_bytes[r.topic] = appended_bytes.get(r.topic, 0) + r.size

    def install(self, app) -> None:
        """Hook the store: count appends per topic, time writes (after flow control's observer)
        and flushes. Called once when the services start."""
        st = app.store
        st.add_dispatcher(self)
        flow_observe, writes = app.flow.observe, self.store_writes

        def observe(began: float, ended: float) -> None:
            flow_observe(began, ended)
            writes.observe(ended - began)

        st.set_write_observer(observe)
        st.set_flush_observer(self.store_flushes.observe)

    # -- health ----------------------------------------------------------------------------------
    def ready(self) -> bool:
        return self.listeners_up and not self.stopping

    def stop(self) -> None:
        """The gateway is shutting down: not ready any more; the HTTP server ends."""
        self.stopping = True
        self.shutdown.set()


def remoting_principal(app, req) -> str:
    """The principal of a remoting request: User:<the AccessKey's user> (the same name as that user's
    Kafka principal), UNKNOWN for a key the gateway does not know (one label, however many keys are
    tried), User:ANONYMOUS without a key."""
    key = req.ext_fields.get("AccessKey")
    if not key:
        return "User:ANONYMOUS"
    security = getattr(app, "security", None)
    found = security.credentials.access_key(key) if security is not None else None
    return f"User:{found.user}" if found is not None else "UNKNOWN"


def stats_of(app) -> GatewayStats:
    """The App's statistics; a throwaway for a stand-in app without them (connection tests)."""
    return getattr(app, "stats", None) or GatewayStats()
