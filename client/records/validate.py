"""Record-level checks of a producer's batch, made by the broker before the batch is written.

``validate_batch`` (``batch.py``) checks the batch header and its CRC, which covers the bytes
but not their meaning: a client can send a correct CRC over records that do not parse. Kafka's
LogValidator walks every record before it writes a batch, and so does the broker, with
``check_records``. What it checks (any failure is ``InvalidRecordError``, Kafka's
INVALID_RECORD, 87; the batch is not written):

- the records section (decompressed first for codecs 1-4) holds exactly ``recordsCount``
  records and nothing after them (Kafka: "Incorrect declared batch size, records still
  remaining in file");
- each record ends exactly where its length varint says; key and value lengths are >= -1
  (-1 = null) and inside the record; header count >= 0, header keys not null;
- offset deltas are 0, 1, ..., recordsCount - 1 (Kafka checks this for compressed batches
  only; a gap in an uncompressed batch would give records offsets past ``lastOffsetDelta``,
  so it is refused here too).

These are the batch's structure: a failure refuses the batch as a whole. What a record may
carry on a given topic (a key on a compacted one, a timestamp within bounds) is the broker's
check, record by record (``broker.storage.log_validator``), on the lists returned here.

The walk is ``client.records.columnar.decode_lists`` (C when built, see there): the same code
the consumer trusts, so what the broker accepts the consumer can read.
"""

from __future__ import annotations

from .batch import RECORDS_OFFSET, CorruptRecordError, InvalidRecordError
from .columnar import decode_lists
from .compression import (
    DEFAULT_MAX_DECOMPRESSED,
    DecompressedSizeError,
    DecompressionRefusedError,
    InflateMemory,
    inflated,
)

__all__ = ["Decoded", "check_records"]


#: what ``check_records`` returns: the records' offset deltas, timestamp deltas (from the
#: batch's baseTimestamp), keys, values (None for null) and headers, in record order
Decoded = tuple[list[int], list[int], list[bytes | None], list[bytes | None], list[object]]


def check_records(buf: bytes | bytearray | memoryview, pos: int, size: int, count: int, codec: int,
                  max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, *,
                  memory: InflateMemory | None = None) -> Decoded:
    """Check the records of the (header-validated) batch ``buf[pos:pos + size]``; a compressed
    one may inflate to at most ``max_decompressed`` bytes (DecompressedSizeError above), its
    buffers paid from ``memory`` (``compression.inflated``; DecompressionRefusedError when it
    refuses). Returns the decoded records (``Decoded``)."""
    section = memoryview(buf)[pos + RECORDS_OFFSET:pos + size]
    if not codec:
        decoded = _decode(section, count)
    else:
        try:
            with inflated(codec, section, max_decompressed, memory) as data:
                decoded = _decode(data, count)
        except (DecompressedSizeError, DecompressionRefusedError, InvalidRecordError):
            raise
        except Exception as e:  # noqa: BLE001 - each codec library has its own error for undecodable input
            raise InvalidRecordError(f"record batch cannot be decompressed: {type(e).__name__}: {e}") from None
    offsets = decoded[0]
    if (offsets[0] != 0) if count == 1 else (offsets != list(range(count))):  # one record: no list to build
        first = next(i for i, d in enumerate(offsets) if d != i)
        raise InvalidRecordError(f"record {first} of the batch has offset delta {offsets[first]}: inner record"
                                 " offsets must be 0, 1, 2, ...")
    return decoded


def _decode(data: memoryview, count: int) -> Decoded:
    try:
        return decode_lists(data, count)  # type: ignore[arg-type,return-value]  # memoryview too
    except CorruptRecordError as e:
        raise InvalidRecordError(f"record batch has invalid records: {e}") from None
