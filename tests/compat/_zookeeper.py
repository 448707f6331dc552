"""A ZooKeeper server just large enough for Burrow 1.2's own coordination, in a thread.

Burrow 1.2 (Debian's ``burrow``) will not start without a ZooKeeper ensemble, which it uses
only for itself (not for Kafka): it creates its root path and takes a lock for its notifier
(go-zookeeper's ``Lock``: an ephemeral sequential node, then the children of the lock's path).
This serves that over ZooKeeper's wire protocol (jute encoding, big-endian): the session
handshake, create (with the sequential flag), delete, exists, getData, setData, getChildren(2),
sync, ping and close, on one in-memory tree; watches are accepted and never fire, ephemeral
nodes live until the server stops. Anything else is answered ZUNIMPLEMENTED.

Frames: ``int32 length`` then, for the handshake, ConnectRequest {int32 protocolVersion, int64
lastZxidSeen, int32 timeOut, int64 sessionId, buffer passwd} answered by ConnectResponse {int32
protocolVersion, int32 timeOut, int64 sessionId, buffer passwd}; after it, requests
{int32 xid, int32 type, body} answered by {int32 xid, int64 zxid, int32 err, body}.
"""

from __future__ import annotations

import itertools
import socket
import socketserver
import struct
import threading
import time
from typing import Any

_OK, _UNIMPLEMENTED, _NO_NODE, _NODE_EXISTS, _NOT_EMPTY = 0, -6, -101, -110, -111
_CREATE, _DELETE, _EXISTS, _GET_DATA, _SET_DATA, _GET_CHILDREN, _SYNC, _PING, _GET_CHILDREN2, _CLOSE = (
    1, 2, 3, 4, 5, 8, 9, 11, 12, -11)
_SEQUENTIAL = 2


class _Node:
    __slots__ = ("data", "version", "cversion", "ctime", "mtime", "czxid", "mzxid", "ephemeral", "seq")

    def __init__(self, data: bytes, zxid: int, ephemeral: int) -> None:
        now = int(time.time() * 1000)
        self.data, self.version, self.cversion, self.seq = data, 0, 0, 0
        self.ctime = self.mtime = now
        self.czxid = self.mzxid = zxid
        self.ephemeral = ephemeral


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> Any:
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def buffer(self) -> bytes:
        n = self.take(">i")
        if n < 0:
            return b""
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def string(self) -> str:
        return self.buffer().decode()


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">i", len(b)) + b


class ZooKeeper:
    """``with ZooKeeper() as zk:`` a server on 127.0.0.1:``zk.port`` until the block ends."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0)}
        self.lock = threading.Lock()
        self.zxid = itertools.count(1)
        self.sessions = itertools.count(0x1000)
        zk = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                zk._serve(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="zookeeper", daemon=True)

    def __enter__(self) -> ZooKeeper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------ the tree

    def _stat(self, path: str) -> bytes:
        n = self.nodes[path]
        children = len(self._children(path))
        return struct.pack(">qqqqiiiqiiq", n.czxid, n.mzxid, n.ctime, n.mtime, n.version, n.cversion, 0,
                           n.ephemeral, len(n.data), children, n.mzxid)

    def _children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [p[len(prefix):] for p in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):] and p != "/"]

    @staticmethod
    def _parent(path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def _op(self, op: int, r: _Reader, session: int) -> tuple[int, bytes]:
        if op == _CREATE:
            path, data = r.string(), r.buffer()
            for _ in range(r.take(">i")):  # the ACL: perms, scheme, id
                r.take(">i")
                r.string()
                r.string()
            flags = r.take(">i")
            parent = self.nodes.get(self._parent(path))
            if parent is None:
                return _NO_NODE, b""
            if flags & _SEQUENTIAL:
                path += f"{parent.seq:010d}"
                parent.seq += 1
            if path in self.nodes:
                return _NODE_EXISTS, b""
            self.nodes[path] = _Node(data, next(self.zxid), session if flags & 1 else 0)
            parent.cversion += 1
            return _OK, _string(path)
        path = r.string()
        if op == _SYNC:
            return _OK, _string(path)
        node = self.nodes.get(path)
        if node is None:
            return _NO_NODE, b""
        if op == _DELETE:
            if self._children(path):
                return _NOT_EMPTY, b""
            del self.nodes[path]
            self.nodes[self._parent(path)].cversion += 1
            return _OK, b""
        if op == _EXISTS:
            return _OK, self._stat(path)
        if op == _GET_DATA:
            return _OK, struct.pack(">i", len(node.data)) + node.data + self._stat(path)
        if op == _SET_DATA:
            node.data, node.version, node.mzxid = r.buffer(), node.version + 1, next(self.zxid)
            node.mtime = int(time.time() * 1000)
            return _OK, self._stat(path)
        if op in (_GET_CHILDREN, _GET_CHILDREN2):
            kids = self._children(path)
            body = struct.pack(">i", len(kids)) + b"".join(_string(k) for k in kids)
            return _OK, body + (self._stat(path) if op == _GET_CHILDREN2 else b"")
        return _UNIMPLEMENTED, b""

    # ------------------------------------------------------------ the wire

    def _serve(self, sock: socket.socket) -> None:
        f = sock.makefile("rb")

        def frame() -> bytes | None:
            head = f.read(4)
            if len(head) < 4:
                return None
            (n,) = struct.unpack(">i", head)
            body = f.read(n)
            return body if len(body) == n else None

        hello = frame()
        if hello is None:
            return
        r = _Reader(hello)
        r.take(">i")
        r.take(">q")
        timeout = r.take(">i")
        session = next(self.sessions)
        body = struct.pack(">iiq", 0, timeout, session) + struct.pack(">i", 16) + bytes(16)
        sock.sendall(struct.pack(">i", len(body)) + body)
        while True:
            req = frame()
            if req is None:
                return
            r = _Reader(req)
            xid, op = r.take(">i"), r.take(">i")
            if op in (_PING, _CLOSE):
                err, out = _OK, b""
            else:
                with self.lock:
                    try:
                        err, out = self._op(op, r, session)
                    except struct.error:
                        err, out = _UNIMPLEMENTED, b""
            reply = struct.pack(">iqi", xid, next(self.zxid) if op != _PING else 0, err) + (out if err == _OK else b"")
            sock.sendall(struct.pack(">i", len(reply)) + reply)
            if op == _CLOSE:
                return
