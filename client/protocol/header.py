"""Request and response headers.

Request header v1: ``int16 api_key, int16 api_version, int32 correlation_id,
NULLABLE_STRING client_id`` (client_id keeps its int16 length even in v2); v2 adds a tag
buffer. Response header v0: ``int32 correlation_id``; v1 adds a tag buffer. ApiVersions
responses always use v0 (api.response_header_version).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .api import FLEXIBLE_FROM, NOT_FLEXIBLE, request_header_version, response_header_version
from .primitives import Reader, Writer

__all__ = ["RequestHeader", "decode_request_header", "encode_request_header", "encode_response_header"]

_FIXED = struct.Struct(">hhi")
_FIXED_LEN = struct.Struct(">hhih")  # the fixed fields and client_id's int16 length


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def decode_request_header(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Reader]:
    """Parse the header; returns it and a Reader positioned at the body. Raises DecodeError.

    The tag buffer of a v2 header is consumed only for API versions we know to be flexible;
    for unknown keys/versions the body is not needed (the caller answers or closes).

    Fast path (every request goes through here: ~2 us via the Reader methods): the fixed
    fields and client_id's length in one unpack, an empty tag buffer as one byte; anything
    else (short frame, null or undecodable client_id, tags present) takes the Reader path,
    which gives the same header or the same DecodeError."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    end = len(buf)
    if end >= 10:
        api_key, api_version, correlation_id, n = _FIXED_LEN.unpack_from(buf, 0)
        pos = 10 + n
        if 0 <= n and pos <= end:
            try:
                client_id = str(buf[10:pos], "utf-8")
            except UnicodeDecodeError:
                pass
            else:
                if api_version < FLEXIBLE_FROM.get(api_key, NOT_FLEXIBLE):
                    return RequestHeader(api_key, api_version, correlation_id, client_id), Reader(buf, pos)
                if pos < end and buf[pos] == 0:
                    return RequestHeader(api_key, api_version, correlation_id, client_id), Reader(buf, pos + 1)
    return _decode_request_header_reader(buf)


def _decode_request_header_reader(buf: memoryview) -> tuple[RequestHeader, Reader]:
    """The reference decode, field by field (the fast path's fallback)."""
    r = Reader(buf)
    api_key = r.int16()
    api_version = r.int16()
    correlation_id = r.int32()
    client_id = r.nullable_string()
    if request_header_version(api_key, api_version) >= 2:
        r.tagged_fields()
    return RequestHeader(api_key, api_version, correlation_id, client_id), r


def encode_request_header(w: Writer, api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None) -> None:
    w.buf += _FIXED.pack(api_key, api_version, correlation_id)
    w.nullable_string(client_id)
    if request_header_version(api_key, api_version) >= 2:
        w.tagged_fields()


def encode_response_header(w: Writer, api_key: int, api_version: int, correlation_id: int) -> None:
    w.int32(correlation_id)
    if response_header_version(api_key, api_version) >= 1:
        w.tagged_fields()
