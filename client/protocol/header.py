"""Request and response headers.

Request header v1: ``int16 api_key, int16 api_version, int32 correlation_id,
NULLABLE_STRING client_id`` (client_id keeps its int16 length even in v2); v2 adds a tag
buffer. Response header v0: ``int32 correlation_id``; v1 adds a tag buffer. ApiVersions
responses always use v0 (api.response_header_version).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .api import request_header_version, response_header_version
from .primitives import Reader, Writer

__all__ = ["RequestHeader", "decode_request_header", "encode_request_header", "encode_response_header"]

_FIXED = struct.Struct(">hhi")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def decode_request_header(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Reader]:
    """Parse the header; returns it and a Reader positioned at the body. Raises DecodeError.

    The tag buffer of a v2 header is consumed only for API versions we know to be flexible;
    for unknown keys/versions the body is not needed (the caller answers or closes)."""
    r = Reader(frame)
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
