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


def read_atomic_file(path: str, what: str, error: type[Exception]) -> bytes | None:
    """The content of a file written by ``atomic_write``, or None when there is none; first
    removes the ``<path>.tmp`` a torn write left (the rename never happened: the file is the
    old content, or absent). A file that cannot be read raises ``error`` naming ``what``
    ("the ACL file")."""
    try:
        os.unlink(path + ".tmp")
    except FileNotFoundError:
        pass
    except OSError as e:
        raise error(f"cannot remove the torn write {path}.tmp: {e}") from e
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e}") from e


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
