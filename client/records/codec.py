"""The record codec in use, chosen here and nowhere else: the C extension's functions
(``client/records/_codec.c``, an optional extension built by ``pip install``) when it is built,
else the reference Python codec of ``record.py``. ``MINIBROKER_PURE_PYTHON=1`` in the
environment forces the reference one.

- ``decode_lists(data, count, base_offset, base_timestamp)``: a records section to five lists
  (offsets, timestamps, keys, values, headers).
- ``append_record(buf, capacity, timestamp_delta, offset_delta, key, value)``: encode one
  header-less record with its length prefix onto ``buf`` (a bytearray) if the result stays
  within ``capacity`` bytes; True when written, False (nothing written) otherwise.

The two implementations write and read the same bytes and fail on the same inputs:
tests/records/test_append_record.py and tests/records/test_columnar.py check it with
hypothesis. ``C_CODEC`` says which one is in use.
"""

from __future__ import annotations

import os
from typing import Any

from .record import decode_lists, encode_record

__all__ = ["C_CODEC", "decode_lists", "append_record", "append_record_py"]


def append_record_py(buf: bytearray, capacity: int, timestamp_delta: int, offset_delta: int, key: Any,
                     value: Any) -> bool:
    """``append_record`` with the reference encoder."""
    record = encode_record(offset_delta, timestamp_delta, key, value)
    if len(buf) + len(record) > capacity:
        return False
    buf += record
    return True


append_record = append_record_py
C_CODEC = False
if os.environ.get("MINIBROKER_PURE_PYTHON", "") in ("", "0"):
    try:
        from ._codec import append_record, decode_lists
        C_CODEC = True
    except ImportError:  # not built (no compiler at install time): the reference codec
        pass
