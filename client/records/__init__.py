"""RecordBatch v2, Kafka's record format: pure functions over bytes, no I/O.

- ``batch``: the 61-byte header (a zero-copy view), validation, CRC-32C, offset patching.
- ``record``: encoding records into a batch and decoding them back.
- ``compression``: gzip, snappy (raw and xerial), lz4 (frame), zstd via cramjam.
- ``varint``: the zigzag varints used inside records.
"""

from .batch import (
    LOG_OVERHEAD,
    RECORDS_OFFSET,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatchHeader,
    RecordError,
    UnsupportedCompressionTypeError,
    UnsupportedMagicError,
    compute_crc,
    iter_batch_headers,
    set_base_offset,
    validate_batch,
)
from .compression import Compression, compress, decompress
from .record import Record, RecordBatchBuilder, build_batch, decode_batch, iter_records

__all__ = [
    "LOG_OVERHEAD", "RECORDS_OFFSET", "Compression", "CorruptRecordError", "InvalidRecordError",
    "Record", "RecordBatchBuilder", "RecordBatchHeader", "RecordError", "UnsupportedCompressionTypeError", "UnsupportedMagicError",
    "build_batch", "compress", "compute_crc", "decode_batch", "decompress", "iter_batch_headers",
    "iter_records", "set_base_offset", "validate_batch",
]
