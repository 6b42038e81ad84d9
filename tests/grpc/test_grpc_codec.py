"""codec.grpc: the 5-byte message prefix, grpc-timeout and status trailers."""
import pytest

from codec.grpc import FramingError, MessageReader, StatusCode, frame, parse_timeout, status_trailers


def test_frame_and_read_back_split_anywhere():
    data = frame(b"hello") + frame(b"") + frame(b"x" * 300)
    for cut in range(len(data) + 1):
        reader = MessageReader(1000)
        got = reader.feed(data[:cut]) + reader.feed(data[cut:])
        assert got == [b"hello", b"", b"x" * 300]
        assert reader.pending == 0


def test_oversized_message_is_refused_at_its_prefix():
    reader = MessageReader(10)
    with pytest.raises(FramingError) as err:
        reader.feed(frame(b"y" * 11)[:5])
    assert err.value.status == StatusCode.RESOURCE_EXHAUSTED


def test_compressed_and_bad_flags():
    with pytest.raises(FramingError) as err:
        MessageReader(10).feed(b"\x01\x00\x00\x00\x01a")
    assert err.value.status == StatusCode.UNIMPLEMENTED
    with pytest.raises(FramingError) as err:
        MessageReader(10).feed(b"\x07\x00\x00\x00\x01a")
    assert err.value.status == StatusCode.INTERNAL


def test_partial_message_is_pending():
    reader = MessageReader(100)
    assert reader.feed(frame(b"abc")[:6]) == []
    assert reader.pending == 6


@pytest.mark.parametrize("text,seconds", [("100m", 0.1), ("5S", 5.0), ("2M", 120.0), ("1H", 3600.0),
                                          ("250u", 0.00025), ("7n", 7e-9), (b"3010m", 3.01)])
def test_parse_timeout(text, seconds):
    assert parse_timeout(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "S", "10", "10x", "123456789S", "-1S", "1.5S"])
def test_parse_timeout_rejects(text):
    with pytest.raises(ValueError):
        parse_timeout(text)


def test_status_trailers_percent_encode_the_message():
    assert status_trailers(StatusCode.OK) == [("grpc-status", "0")]
    trailers = dict(status_trailers(StatusCode.INTERNAL, "bad\nthing 100%"))
    assert trailers == {"grpc-status": "13", "grpc-message": "bad%0Athing 100%25"}
