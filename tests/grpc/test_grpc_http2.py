"""gateway.grpc.http2 against plain h2/hpack: the cached encoder writes the same bytes, and the
one-pass request header check accepts exactly what h2 accepts (refusing the rest through h2)."""
import random

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack
import pytest

from gateway.grpc.http2 import CachingEncoder, GrpcH2Connection, IndexedFastDecoder

OK_HEADERS = [(":status", "200"), ("content-type", "application/grpc")]
OK_TRAILERS = [("grpc-status", "0")]


def test_cached_encoder_writes_what_hpack_writes():
    rng = random.Random(7)
    plain, cached = hpack.Encoder(), CachingEncoder()
    lists = [OK_HEADERS, OK_TRAILERS, [("grpc-status", "5"), ("grpc-message", "no such topic")],
             [(":status", "415"), ("content-type", "text/plain")]]
    for i in range(3000):
        headers = rng.choice(lists) if rng.random() < 0.9 else [("grpc-status", "13"), ("grpc-message", f"m{i}")]
        if rng.random() < 0.002:  # the peer changes SETTINGS_HEADER_TABLE_SIZE
            size = rng.choice([0, 64, 4096])
            plain.header_table_size = cached.header_table_size = size
        assert cached.encode(headers) == plain.encode(headers)
    assert cached._cache  # the unchanged-table lists were served from the cache


def test_cached_encoder_after_the_table_changes_under_a_cached_block():
    plain, cached = hpack.Encoder(), CachingEncoder()
    for headers in [OK_HEADERS, OK_HEADERS, OK_TRAILERS, OK_TRAILERS, [("x-new", "1")], OK_HEADERS, OK_TRAILERS]:
        assert cached.encode(headers) == plain.encode(headers)


def _decoded(decoder, block):
    try:
        return [(type(h).__name__, tuple(h)) for h in decoder.decode(block, raw=True)]
    except Exception as exc:
        return type(exc).__name__, str(exc)


def test_fast_decoder_decodes_what_hpack_decodes():
    rng = random.Random(11)
    encoder, plain, fast = hpack.Encoder(), hpack.Decoder(), IndexedFastDecoder()
    names = [":method", ":path", "content-type", "x-mq-client-id", "grpc-timeout", "user-agent", "authorization"]
    for i in range(2000):
        headers = [(rng.choice(names), str(rng.randrange(40))) for _ in range(rng.randrange(1, 12))]
        if rng.random() < 0.1:
            headers.append(hpack.NeverIndexedHeaderTuple("secret", str(i)))
        block = encoder.encode(headers, huffman=rng.random() < 0.5)
        if rng.random() < 0.05:  # garbage and truncated blocks: the same error, the same table after
            block = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8))) + block[:rng.randrange(len(block))]
        if rng.random() < 0.01:
            plain.max_header_list_size = fast.max_header_list_size = rng.choice([40, 65536])
        assert _decoded(fast, block) == _decoded(plain, block)
        assert fast.header_table.dynamic_entries == plain.header_table.dynamic_entries
        if fast.header_table.dynamic_entries != encoder.header_table.dynamic_entries:  # resync after garbage
            encoder, plain, fast = hpack.Encoder(), hpack.Decoder(), IndexedFastDecoder()



def test_fast_decoder_literals_with_long_values_and_deep_name_indexes():
    """Literals whose name index or value length need one, two or more continuation bytes (names
    deep in the dynamic table, values of 126-300 bytes), as Netty-based clients send them."""
    rng = random.Random(13)
    encoder, plain, fast = hpack.Encoder(), hpack.Decoder(), IndexedFastDecoder()
    names = [f"x-name-{n}" for n in range(90)]
    for i in range(1500):
        headers = [(rng.choice(names), "v" * rng.choice([0, 1, 126, 127, 128, 253, 254, 255, 300]) + str(i))
                   for _ in range(rng.randrange(1, 6))]
        block = encoder.encode(headers, huffman=rng.random() < 0.3)
        if rng.random() < 0.03:
            block = block[:rng.randrange(len(block))]  # truncated: the same error, the same table
        assert _decoded(fast, block) == _decoded(plain, block)
        assert fast.header_table.dynamic_entries == plain.header_table.dynamic_entries
        if fast.header_table.dynamic_entries != encoder.header_table.dynamic_entries:
            encoder, plain, fast = hpack.Encoder(), hpack.Decoder(), IndexedFastDecoder()

def _server(cls):
    config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=True,
                                       validate_outbound_headers=False, normalize_outbound_headers=False)
    conn = cls(config) if cls is GrpcH2Connection else cls(config=config)
    conn.initiate_connection()
    conn.data_to_send()
    return conn


def _request(headers) -> bytes:
    client = h2.connection.H2Connection(h2.config.H2Configuration(
        client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False))
    client.initiate_connection()
    client.send_headers(1, headers, end_stream=True)
    return client.data_to_send()


def _outcome(cls, data: bytes):
    conn = _server(cls)
    try:
        events = conn.receive_data(data)
    except (h2.exceptions.ProtocolError, UnicodeDecodeError) as exc:  # h2 lets a bad UTF-8 value through
        return "error", type(exc).__name__, str(exc), conn.data_to_send()
    got = [(type(e).__name__, [tuple(h) for h in getattr(e, "headers", None) or []]) for e in events]
    return "ok", got, conn.data_to_send()


BASE = [(":method", "POST"), (":scheme", "http"), (":path", "/apache.rocketmq.v2.MessagingService/SendMessage"),
        (":authority", "127.0.0.1:8081"), ("content-type", "application/grpc"), ("te", "trailers"),
        ("x-mq-client-id", "host@1#0"), ("grpc-timeout", "3000m")]
VARIANTS = [
    BASE,
    [h for h in BASE if h[0] != "te"],
    [(n.encode(), v.encode()) for n, v in BASE],
    BASE + [("X-Upper", "1")],
    BASE + [("connection", "keep-alive")],
    BASE + [("te", "gzip")],
    [h for h in BASE if h[0] != "te"] + [("te", "TRAILERS")],
    BASE + [("host", "127.0.0.1:8081")],
    BASE + [("host", "elsewhere")],
    BASE + [("cookie", "a=1"), ("cookie", "b=2")],
    BASE + [("x-space", " padded")],
    BASE + [("x-empty", "")],
    BASE + [("x:colon", "1")],
    BASE + [(":extra", "1")],
    [BASE[4]] + BASE[:4] + BASE[5:],
    BASE[:1] + BASE[2:],
    [h for h in BASE if h[0] != ":authority"],
    [(":method", "CONNECT"), (":authority", "a:1")],
    [(":method", "POST"), (":scheme", "http"), (":path", ""), (":authority", "a")],
    [(":method", "POST"), (":scheme", "http"), (":path", "*"), (":authority", "a")],
    BASE + [(":method", "POST")],
    BASE + [(":status", "200")],
    BASE + [("x-bin", "\u00e9t\u00e9")],
    BASE + [(b"x-raw", b"\xff\xfe")],
    BASE + [("x-ctl", "a\x01b")],
]


@pytest.mark.parametrize("headers", VARIANTS)
def test_request_headers_are_judged_as_h2_judges_them(headers):
    data = _request(headers)
    assert _outcome(GrpcH2Connection, data) == _outcome(h2.connection.H2Connection, data)


def test_request_headers_arrive_decoded_in_order():
    conn = _server(GrpcH2Connection)
    events = conn.receive_data(_request(BASE))
    request = next(e for e in events if isinstance(e, h2.events.RequestReceived))
    assert [tuple(h) for h in request.headers] == BASE
    assert all(type(h) is tuple for h in request.headers)  # the one-pass check took them (h2 makes HeaderTuples)


RESPONSE = ((b":status", b"200"), (b"content-type", b"application/grpc"))
TRAILERS = ((b"grpc-status", b"0"),)


def _after(conn, steps):
    """What each step does on `conn`: the bytes it queues or the error it raises, then each
    stream's state (a step is (stream id, headers, end_stream, fast))."""
    out = []
    for stream_id, headers, end_stream, fast in steps:
        try:
            if fast:
                conn.send_fixed_headers(stream_id, headers, end_stream=end_stream)
            else:
                conn.send_headers(stream_id, headers, end_stream=end_stream)
            out.append(conn.data_to_send())
        except Exception as exc:  # noqa: BLE001 - the same refusal is the point
            out.append((type(exc).__name__, str(exc)))
    states = {sid: (s.state_machine.state, s.closed) for sid, s in conn.streams.items()}
    return out, states


@pytest.mark.parametrize("steps", [
    [(1, RESPONSE, False), (1, TRAILERS, True)],
    [(1, RESPONSE, False), (1, TRAILERS, True), (1, TRAILERS, True)],
    [(1, RESPONSE, False), (1, RESPONSE, False), (1, TRAILERS, True)],
    [(1, TRAILERS, True)],
    [(3, RESPONSE, False)],
    [(1, RESPONSE, False), (1, TRAILERS, False), (1, TRAILERS, True)],
])
def test_fixed_headers_write_and_change_state_as_send_headers_does(steps):
    request = _request(BASE)
    plain, fast = _server(h2.connection.H2Connection), _server(GrpcH2Connection)
    plain.receive_data(request)
    fast.receive_data(request)
    plain.data_to_send(), fast.data_to_send()
    expected = _after(plain, [(sid, h, end, False) for sid, h, end in steps])
    assert _after(fast, [(sid, h, end, True) for sid, h, end in steps]) == expected


def test_fixed_headers_on_a_reset_stream_refuse_as_send_headers_does():
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(1, BASE)
    client.reset_stream(1)
    data = client.data_to_send()
    plain, fast = _server(h2.connection.H2Connection), _server(GrpcH2Connection)
    plain.receive_data(data)
    fast.receive_data(data)
    assert _after(fast, [(1, RESPONSE, False, True)]) == _after(plain, [(1, RESPONSE, False, False)])
