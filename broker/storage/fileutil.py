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


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old or the new content: write
    ``<path>.tmp``, fsync it, rename it over ``path``, fsync the directory."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_path(os.path.dirname(path) or ".")
