"""Tests for ``client/protocol/header.py`` and the header-version rules in ``api.py``:
request header v1/v2 (client_id keeps its int16 length in v2), response header v0/v1, and
ApiVersions responses always with header v0 (KIP-511)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.protocol.api import (
    FLEXIBLE_FROM,
    SUPPORTED_VERSIONS,
    ApiKey,
    request_header_version,
    response_header_version,
)
from client.protocol.header import decode_request_header, encode_request_header, encode_response_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import DecodeError, Writer


def req_header(key: int, version: int, cid: int, client_id: str | None) -> bytes:
    w = Writer()
    encode_request_header(w, key, version, cid, client_id)
    return bytes(w.buf)


def resp_header(key: int, version: int, cid: int) -> bytes:
    w = Writer()
    encode_response_header(w, key, version, cid)
    return bytes(w.buf)


def test_request_header_v1_layout() -> None:
    raw = req_header(ApiKey.METADATA, 4, 7, "cli")
    assert raw == struct.pack(">hhi", 3, 4, 7) + b"\x00\x03cli"
    assert req_header(ApiKey.METADATA, 4, 7, None) == struct.pack(">hhih", 3, 4, 7, -1)


def test_request_header_v2_keeps_int16_client_id_and_adds_tag_buffer() -> None:
    raw = req_header(ApiKey.API_VERSIONS, 3, 1, "cli")
    assert raw == struct.pack(">hhi", 18, 3, 1) + b"\x00\x03cli" + b"\x00"
    header, r = decode_request_header(raw + b"BODY")
    assert header == (18, 3, 1, "cli")
    assert bytes(r.buf[r.pos :]) == b"BODY"


def test_request_header_of_unknown_api_is_parsed_as_v1() -> None:
    raw = struct.pack(">hhi", 1234, 99, 5) + b"\xff\xff" + b"rest"
    header, r = decode_request_header(raw)
    assert header == (1234, 99, 5, None)
    assert r.remaining == 4


@pytest.mark.parametrize("raw", [b"", b"\x00\x12\x00", struct.pack(">hhi", 3, 0, 1),
                                 struct.pack(">hhih", 3, 0, 1, 5) + b"ab",
                                 struct.pack(">hhih", 18, 3, 1, -1)])  # v2 header without tag buffer
def test_truncated_request_header(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_request_header(raw)


@given(st.sampled_from(sorted(SUPPORTED_VERSIONS)), st.data(), st.integers(-(1 << 31), (1 << 31) - 1),
       st.none() | st.text(max_size=20))
def test_request_header_round_trip(key: int, data: st.DataObject, cid: int, client_id: str | None) -> None:
    lo, hi = SUPPORTED_VERSIONS[key]
    version = data.draw(st.integers(lo, hi))
    header, r = decode_request_header(req_header(key, version, cid, client_id))
    assert header == (key, version, cid, client_id)
    assert r.remaining == 0


def test_response_headers() -> None:
    assert resp_header(ApiKey.METADATA, 4, 9) == struct.pack(">i", 9)
    assert resp_header(ApiKey.METADATA, 9, 9) == struct.pack(">i", 9) + b"\x00"
    assert resp_header(ApiKey.FETCH, 12, 9) == struct.pack(">i", 9) + b"\x00"
    for v in range(0, 10):  # ApiVersions: always v0, flexible body or not
        assert resp_header(ApiKey.API_VERSIONS, v, 9) == struct.pack(">i", 9)


def test_header_versions() -> None:
    assert request_header_version(ApiKey.API_VERSIONS, 2) == 1
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0
    assert request_header_version(ApiKey.FETCH, 11) == 1
    assert response_header_version(ApiKey.FETCH, 12) == 1
    assert request_header_version(9999, 0) == 1


def test_tables_agree_with_schemas() -> None:
    """SUPPORTED_VERSIONS (what we advertise) = what the schema tables implement, and
    FLEXIBLE_FROM = each schema's first flexible version."""
    assert set(REQUESTS) == set(RESPONSES) == set(SUPPORTED_VERSIONS)
    for key, (lo, hi) in SUPPORTED_VERSIONS.items():
        for m in (REQUESTS[key], RESPONSES[key]):
            assert m.api_key == key
            assert m.valid == (lo, hi), m.name
            assert m.flexible[0] == FLEXIBLE_FROM[key], m.name


@given(key=st.sampled_from([0, 1, 3, 18, 1234]), version=st.integers(0, 20), cid=st.integers(-(1 << 31), (1 << 31) - 1),
       client_id=st.none() | st.text(max_size=8), tail=st.binary(max_size=6), cut=st.integers(0, 40))
def test_fast_header_decode_matches_the_reader_path(key: int, version: int, cid: int, client_id: str | None,
                                                    tail: bytes, cut: int) -> None:
    """decode_request_header's one-unpack fast path gives the field-by-field result: the same
    header and body position, or DecodeError from both (truncated, tags present, bad UTF-8)."""
    from client.protocol.header import _decode_request_header_reader
    raw = (req_header(key, version, cid, client_id) + tail)[:cut]
    results = []
    for dec in (decode_request_header, lambda b: _decode_request_header_reader(memoryview(b))):
        try:
            h, r = dec(raw)
            results.append((h, r.pos, r.end))
        except DecodeError:
            results.append(None)
    assert results[0] == results[1]


def test_header_with_bad_utf8_client_id_or_tags_takes_the_reader_path() -> None:
    with pytest.raises(DecodeError):
        decode_request_header(struct.pack(">hhih", 3, 4, 7, 2) + b"\xff\xfe")
    raw = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + b"\x01\x05\x01x" + b"BODY"  # one unknown tag
    header, r = decode_request_header(raw)
    assert header == (18, 3, 1, "c") and bytes(r.buf[r.pos:]) == b"BODY"
