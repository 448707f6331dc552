"""The Kafka wire protocol, sans-IO: primitives, framing, headers, schema tables per API.

The broker and the client drive the same codec; nothing here touches a socket.
"""

from .api import FLEXIBLE_FROM, SUPPORTED_VERSIONS, ApiKey, ErrorCode
from .frame import DEFAULT_MAX_FRAME, FrameDecoder, FrameError, FrameTooLargeError, InvalidFrameError
from .header import RequestHeader, decode_request_header, encode_request_header, encode_response_header
from .messages import REQUESTS, RESPONSES
from .primitives import DecodeError, Reader, Writer
from .schema import Array, Field, Message

__all__ = [
    "FLEXIBLE_FROM", "SUPPORTED_VERSIONS", "ApiKey", "ErrorCode", "DEFAULT_MAX_FRAME",
    "FrameDecoder", "FrameError", "FrameTooLargeError", "InvalidFrameError", "RequestHeader",
    "decode_request_header", "encode_request_header", "encode_response_header", "REQUESTS",
    "RESPONSES", "DecodeError", "Reader", "Writer", "Array", "Field", "Message",
]
