"""The least a Python event-loop server can spend per request: the ``floor`` row of ``bench.py
--only requests``.

Run as ``python scripts/_bench_floor.py`` with one canned reply body on stdin (the bytes after
the correlation id of a real broker reply); it prints ``port <n>`` on stdout and then, per
connection, does what the broker's socket code does around its handlers and nothing else:
uvloop, ``add_reader`` on a non-blocking socket with ``TCP_NODELAY``, one ``recv_into`` per
wake-up, ``TCP_QUICKACK`` after it (as the broker), frames cut by their int32 size prefix, and
for each frame the canned reply under the frame's correlation id, all the replies of one read
in one ``send``. No header or body is decoded, no handler runs.

Measured the same way as the broker's rows (same load generator, CPU from ``/proc``), its CPU
per request is the part of the broker's figure that no Python code can remove: the wake-up,
the system calls and the kernel's loopback TCP work, which (on loopback) includes delivering
each reply to the client's socket. It stops when stdin closes (its parent gone) or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
import sys

import uvloop

_SIZE = struct.Struct(">i")
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


def serve(body: bytes) -> None:
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    buf = bytearray(1 << 18)
    view = memoryview(buf)
    size_of_reply = _SIZE.pack(4 + len(body))

    def on_accept() -> None:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = bytearray()

        def on_readable() -> None:
            try:
                n = conn.recv_into(buf)
            except BlockingIOError:
                return
            except OSError:
                n = 0
            if n == 0:
                loop.remove_reader(conn.fileno())
                conn.close()
                return
            if _QUICKACK is not None:
                conn.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            pending.extend(view[:n])
            replies = []
            pos, end = 0, len(pending)
            while end - pos >= 4:
                size = _SIZE.unpack_from(pending, pos)[0]
                if end - pos - 4 < size:
                    break
                # size(4) api_key(2) api_version(2) correlation_id(4)
                replies.append(size_of_reply + pending[pos + 8:pos + 12] + body)
                pos += 4 + size
            del pending[:pos]
            if replies:
                conn.sendall(b"".join(replies))  # small: the socket buffer takes it at once

        loop.add_reader(conn.fileno(), on_readable)

    loop.add_reader(listener.fileno(), on_accept)
    loop.add_reader(sys.stdin.fileno(), loop.stop)  # readable at EOF: the parent has gone
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    print(f"port {listener.getsockname()[1]}", flush=True)
    loop.run_forever()


def main() -> int:
    body = sys.stdin.buffer.read(_SIZE.unpack(sys.stdin.buffer.read(4))[0])
    serve(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
