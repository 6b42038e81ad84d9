"""A remoting proxy that can lose one answer: it stands at a gateway's advertised address (another
loopback address, the same port) in front of the gateway's real listener and passes every frame,
except that, once armed, it swallows the answer to the next request of a chosen code and resets
that connection, as a network fault after the gateway did the work but before its answer arrived."""
from __future__ import annotations

import socket
import struct
import threading

from codec.remoting.command import decode_frame


class AnswerDropProxy:
    def __init__(self, host: str, port: int, target_port: int, code: int) -> None:
        self.host, self.port, self.target_port, self.code = host, port, target_port, code
        self.armed = False
        self.dropped = 0  # answers swallowed
        self.answered = 0  # answers of `code` passed on
        self._listener: socket.socket | None = None
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> "AnswerDropProxy":
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            _close(s)

    def _accept(self) -> None:
        while (listener := self._listener) is not None:
            try:
                client, _ = listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                continue
            upstream.settimeout(None)
            with self._lock:
                self._socks += [client, upstream]
            asked: set[int] = set()  # opaques of this connection's requests of `code`
            threading.Thread(target=self._pipe, args=(client, upstream, asked, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, asked, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, asked: set[int], answers: bool) -> None:
        buf = bytearray()
        try:
            while data := src.recv(65536):
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                    end = 4 + struct.unpack_from(">i", buf)[0]
                    frame, buf = bytes(buf[:end]), buf[end:]
                    cmd = decode_frame(frame, 4)
                    if not answers and cmd.code == self.code and not cmd.is_response:
                        asked.add(cmd.opaque)
                    elif answers and cmd.is_response and cmd.opaque in asked:
                        asked.discard(cmd.opaque)
                        if self.armed:
                            self.armed = False
                            self.dropped += 1
                            raise OSError("answer dropped")  # reset both sides below
                        self.answered += 1
                    dst.sendall(frame)
        except OSError:
            pass
        for s in (src, dst):
            _close(s)


def _close(s: socket.socket) -> None:
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        s.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it
    except OSError:
        pass
    s.close()
