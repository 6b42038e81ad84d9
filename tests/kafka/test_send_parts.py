"""gateway.sendfile.send_parts over a real socket pair: more than IOV_MAX bytes-like parts (memoryviews
of stored batches) and FileRanges in between arrive whole and in order, also when the peer reads
slowly so that sendmsg sends part of a buffer; an empty part is skipped."""
from __future__ import annotations

import os

import trio

from gateway.sendfile import IOV_MAX, FileRange, send_parts


def test_many_buffers_and_file_ranges_arrive_in_order(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(os.urandom(300_000))
    pieces = [os.urandom(n % 7000 + 1) for n in range(IOV_MAX * 3)]

    async def main():
        fd = os.open(path, os.O_RDONLY)
        parts = [memoryview(p) for p in pieces[:IOV_MAX + 5]] + [b"", FileRange(fd, 1000, 250_000)]
        parts += [bytearray(p) for p in pieces[IOV_MAX + 5:]]
        want = b"".join(bytes(p) for p in parts if type(p) is not FileRange)
        want = want[:sum(len(p) for p in pieces[:IOV_MAX + 5])] + path.read_bytes()[1000:251_000] + \
            b"".join(pieces[IOV_MAX + 5:])
        a, b = trio.socket.socketpair()
        got = bytearray()
        async with trio.SocketStream(a) as sender, trio.SocketStream(b) as receiver:
            async def read_slowly():
                while len(got) < len(want):
                    got.extend(await receiver.receive_some(3000))
                    if len(got) % 7 == 0:
                        await trio.sleep(0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_slowly)
                await send_parts(sender, parts)
        os.close(fd)
        return want, got

    want, got = trio.run(main)
    assert bytes(got) == want
