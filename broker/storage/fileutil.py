"""Small durable-file helpers shared by the storage modules."""

from __future__ import annotations

import os

__all__ = ["fsync_path", "atomic_write"]


def fsync_path(path: str) -> None:
    """fsync a file or a directory by path (a directory's fsync makes renames and new entries
    in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old or the new content: write
    ``<path>.tmp``, fsync it, rename it over ``path``, fsync the directory. ``mode``: the new
    file's permissions (before the umask), set when the temp file is created, so a secret
    written with 0o600 is never readable by others, not even for a moment."""
    tmp = path + ".tmp"
    try:  # a torn earlier write may have left the temp file with other permissions: start afresh
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_path(os.path.dirname(path) or ".")
