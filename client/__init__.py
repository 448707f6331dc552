"""minibroker's Python client: the record format, the wire protocol codec, and (later) the
asyncio Producer, Consumer and Admin. Never imports ``broker``."""
