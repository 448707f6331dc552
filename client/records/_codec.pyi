# Types of the optional C extension built from _codec.c (see client.records.columnar).
from typing import Any

Header = tuple[str, bytes | None]

def decode_lists(data: bytes | memoryview, count: int, base_offset: int = 0, base_timestamp: int = 0
                 ) -> tuple[list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[Header, ...]]]: ...
def decode_columns(data: bytes | memoryview, count: int, base_offset: int = 0, base_timestamp: int = 0
                   ) -> tuple[bytes, bytes, bytes, bytes, bytes | None, int, bytes, bytes, bytes | None, int,
                              list[tuple[Header, ...]] | None]: ...
def decode_columns_run(buf: bytes | bytearray | memoryview, pos: int, end: int, position: int, max_records: int,
                       crc: Any = None) -> tuple[int, int, int, int, bytes, bytes, bytes, bytes, bytes | None, int,
                                                 bytes, bytes, bytes | None, int,
                                                 list[tuple[Header, ...]] | None] | None: ...
def decode_records(data: bytes | memoryview, count: int, cls: type, topic: str, partition: int, timestamp_type: int,
                   base_offset: int, base_timestamp: int, position: int,
                   fixed_timestamp: int | None = None) -> list[Any]: ...
def append_record(buf: bytearray, capacity: int, timestamp_delta: int, offset_delta: int, key: Any,
                  value: Any) -> bool: ...
