"""The log engine: Kafka's on-disk format and log classes. Files and mmap only — no asyncio,
no sockets (ARCHITECTURE.md, "broker/storage")."""
