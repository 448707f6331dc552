"""Decoding a whole records section at once, into lists, columns or consumer records: the
consumer's hot path.

``decode_lists`` (chosen in ``codec.py``: the C extension's when built, ``C_DECODER``, else
the reference decoder of ``record.py``) decodes the records section of one batch (bytes
61..end, already decompressed; layout in ``client.records.record``) into five lists: offsets,
timestamps, keys, values, headers. ``decode_columns`` gives the keys and values as
``BinaryColumn``s, Apache Arrow's ``binary`` layout (one data buffer + int32 offsets + validity
bitmap), and offsets and timestamps as ``array('q')``, for bulk mode; ``decode_records`` builds
``ConsumerRecord``-like tuples. In C both write their results directly in the decode loop; in
Python they are made from ``decode_lists``'s lists with C-level operations (``bytes.join``,
``accumulate``, ``map``/``zip``).

The C and Python versions give the same results and raise CorruptRecordError on the same
inputs: every length is checked (a record must end exactly where its length says, the section
must hold exactly ``count`` records, and ``count`` must fit in the section before anything is
allocated; a negative length other than -1, null, is corrupt). tests/records/test_columnar.py
checks the equivalence with hypothesis on random, damaged and hostile sections.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from typing import Any

from .batch import CorruptRecordError
from .codec import C_CODEC as C_DECODER
from .codec import decode_lists
from .record import _NO_HEADERS, Header

__all__ = ["BinaryColumn", "decode_lists", "decode_columns", "decode_columns_py", "decode_columns_run",
           "decode_records", "decode_records_py", "Header", "C_DECODER"]



class BinaryColumn(Sequence["bytes | None"]):
    """A column of ``bytes | None`` in Arrow's ``binary`` layout, without pyarrow.

    - ``data``: the values, concatenated (``bytes``);
    - ``offsets``: ``array('i')`` of ``len + 1`` int32s; value i is ``data[offsets[i]:offsets[i+1]]``;
    - ``validity``: ``None`` when nothing is null, else a bitmap (``bytes``, least significant
      bit first, 1 = valid), as Arrow's validity buffers;
    - ``null_count``.

    ``pyarrow.Array.from_buffers(pa.binary(), len(col), [validity, offsets, data])`` with
    ``pa.py_buffer`` over each is zero-copy (``to_arrow()`` does it). Element access slices
    ``data`` (a copy per element): convenient, not the fast path.
    """

    __slots__ = ("data", "offsets", "validity", "null_count")

    def __init__(self, data: bytes, offsets: array[int], validity: bytes | None = None, null_count: int = 0) -> None:
        self.data = data
        self.offsets = offsets
        self.validity = validity
        self.null_count = null_count

    @classmethod
    def from_values(cls, values: Sequence[bytes | None]) -> BinaryColumn:
        nulls = [i for i, v in enumerate(values) if v is None]
        if nulls:
            values = [b"" if v is None else v for v in values]
        data = b"".join(values)  # type: ignore[arg-type]
        offsets = array("i", accumulate(map(len, values), initial=0))  # type: ignore[arg-type]
        return cls(data, offsets, _validity(len(values), nulls), len(nulls))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def is_null(self, i: int) -> bool:
        v = self.validity
        return v is not None and not (v[i >> 3] >> (i & 7)) & 1

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return self.to_pylist()[i]
        n = len(self.offsets) - 1
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("BinaryColumn index out of range")
        if self.validity is not None and self.is_null(i):
            return None
        return self.data[self.offsets[i]:self.offsets[i + 1]]

    def __iter__(self) -> Iterator[bytes | None]:
        return iter(self.to_pylist())

    def to_pylist(self) -> list[bytes | None]:
        offs = self.offsets
        data = self.data
        out: list[bytes | None] = list(map(data.__getitem__, map(slice, offs[:-1], offs[1:])))
        if self.validity is not None:
            for i in range(len(out)):
                if self.is_null(i):
                    out[i] = None
        return out

    def slice(self, start: int, stop: int) -> BinaryColumn:
        """Elements [start, stop) as a new column (offsets rebased to 0; data copied)."""
        n = len(self)
        start, stop, _ = slice(start, stop).indices(n)
        stop = max(stop, start)
        offs = self.offsets
        base = offs[start]
        data = self.data[base:offs[stop]]
        new = array("i", offs[start:stop + 1])
        if base:
            new = array("i", map(base.__rsub__, new))
        if self.validity is None:
            return BinaryColumn(data, new)
        nulls = [i - start for i in range(start, stop) if self.is_null(i)]
        return BinaryColumn(data, new, _validity(stop - start, nulls), len(nulls))

    def to_arrow(self) -> Any:
        """A ``pyarrow.BinaryArray`` over the same buffers (pyarrow imported here, lazily)."""
        import pyarrow as pa

        validity = None if self.validity is None else pa.py_buffer(self.validity)
        return pa.Array.from_buffers(pa.binary(), len(self), [validity, pa.py_buffer(self.offsets),
                                                               pa.py_buffer(self.data)], self.null_count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BinaryColumn):
            return self.to_pylist() == other.to_pylist()
        if isinstance(other, (list, tuple)):
            return self.to_pylist() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"BinaryColumn(len={len(self)}, bytes={len(self.data)}, nulls={self.null_count})"


def _validity(n: int, nulls: list[int]) -> bytes | None:
    """Arrow validity bitmap (LSB first, 1 = valid) for ``n`` elements; None when no nulls."""
    if not nulls:
        return None
    if len(nulls) == n:
        return bytes((n + 7) >> 3)
    bits = bytearray(b"\xff" * ((n + 7) >> 3))
    if n & 7:
        bits[-1] = (1 << (n & 7)) - 1  # padding bits stay 0
    for i in nulls:
        bits[i >> 3] &= ~(1 << (i & 7)) & 0xFF
    return bytes(bits)


def _column(values: list[bytes | None]) -> BinaryColumn:
    """Concatenate ``values`` into a BinaryColumn with C-level operations only."""
    n = len(values)
    nulls = values.count(None)
    if nulls == n:
        return BinaryColumn(b"", array("i", bytes(4 * (n + 1))), bytes((n + 7) >> 3) if n else None, n)
    if nulls:
        idx = [i for i, v in enumerate(values) if v is None]
        values = [b"" if v is None else v for v in values]
        return BinaryColumn(b"".join(values), array("i", accumulate(map(len, values), initial=0)),  # type: ignore[arg-type]
                            _validity(n, idx), nulls)
    return BinaryColumn(b"".join(values), array("i", accumulate(map(len, values), initial=0)))  # type: ignore[arg-type]


def decode_columns_py(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0
                      ) -> tuple[array[int], array[int], BinaryColumn, BinaryColumn, list[tuple[Header, ...]]]:
    """As ``decode_lists``, as columns: ``(offsets, timestamps, keys, values, headers)`` with
    offsets and timestamps ``array('q')``, keys and values ``BinaryColumn``s.

    Built from ``decode_lists``'s lists by ``bytes.join`` and ``accumulate`` (C loops, ~60 ns
    per record); the C ``decode_columns`` writes the buffers directly instead."""
    ods, tss, keys, vals, hdrs = decode_lists(data, count, base_offset, base_timestamp)
    try:
        offsets, timestamps = array("q", ods), array("q", tss)
    except OverflowError:
        raise CorruptRecordError("record offset or timestamp overflows int64") from None
    return offsets, timestamps, _column(keys), _column(vals), hdrs


def _int_array(code: str, raw: bytes) -> array[int]:
    a = array(code)
    a.frombytes(raw)
    return a


def decode_columns_c(data: bytes, count: int, base_offset: int = 0, base_timestamp: int = 0
                     ) -> tuple[array[int], array[int], BinaryColumn, BinaryColumn, list[tuple[Header, ...]]]:
    """``decode_columns_py``'s result from the C walk into column buffers (no Python object per
    record; ~4x faster on 100-byte records)."""
    (ods, tss, kdata, koffs, kvalid, knulls, vdata, voffs, vvalid, vnulls,
     hdrs) = _c_decode_columns(data, count, base_offset, base_timestamp)
    return (_int_array("q", ods), _int_array("q", tss), BinaryColumn(kdata, _int_array("i", koffs), kvalid, knulls),
            BinaryColumn(vdata, _int_array("i", voffs), vvalid, vnulls),
            [_NO_HEADERS] * count if hdrs is None else hdrs)


def decode_records_py(data: bytes, count: int, cls: type, topic: str, partition: int, timestamp_type: int,
                      base_offset: int, base_timestamp: int, position: int,
                      fixed_timestamp: int | None = None) -> list[Any]:
    """The records as ``cls(topic, partition, offset, timestamp, timestamp_type, key, value,
    headers)`` tuples (``cls`` a tuple subclass such as a NamedTuple), those with offset >=
    ``position`` only; ``fixed_timestamp`` (LogAppendTime) replaces every timestamp. Built with
    ``map``/``zip`` over ``decode_lists``'s lists; the C ``decode_records`` builds each tuple
    in its loop instead."""
    offsets, timestamps, keys, vals, hdrs = decode_lists(data, count, base_offset, base_timestamp)
    tss = timestamps if fixed_timestamp is None else repeat(fixed_timestamp)
    rows: list[Any] = list(map(_new, repeat(cls), zip(repeat(topic), repeat(partition), offsets, tss, repeat(timestamp_type),
                                          keys, vals, hdrs)))
    if offsets and min(offsets) < position:
        rows = [r for r in rows if r[2] >= position]
    return rows


_new = tuple.__new__
try:  # decode_columns_c needs it even when MINIBROKER_PURE_PYTHON picks the Python versions
    from ._codec import decode_columns as _c_decode_columns
except ImportError:
    pass
decode_columns = decode_columns_py
decode_records = decode_records_py
#: the C ``decode_columns_run`` (a run of plain batches in one call; its docstring in _codec.c),
#: None with the pure-Python codec: callers then decode batch by batch
decode_columns_run: Any = None
if C_DECODER:
    from ._codec import decode_records

    decode_columns = decode_columns_c
    try:
        from ._codec import decode_columns_run as _c_decode_columns_run
    except ImportError:  # an extension built before it existed: batch by batch
        pass
    else:
        decode_columns_run = _c_decode_columns_run
