"""The log engine: Kafka's on-disk format and log classes. Files and mmap only — no asyncio,
no sockets: the broker's network layer calls into it, never the other way."""
