"""Whether a secret file has changed since it was read: its identity through symlinks (inode, size, mtime), as
Kubernetes renews a projected Secret by swapping its directory's `..data` link (the file's name stays, its
inode changes) and cert-manager or an operator rewrites one in place (its size or mtime changes)."""

from __future__ import annotations

import os
from collections.abc import Iterable

FileStamp = tuple[int, int, int]


def file_stamp(path: str | os.PathLike[str] | None) -> FileStamp | None:
    """The file's (inode, size, mtime in ns) through symlinks, or None where there is no file or none is named
    (unreadable now: whoever loads it says why)."""
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def file_stamps(paths: Iterable[str | os.PathLike[str] | None]) -> tuple[FileStamp | None, ...]:
    return tuple(file_stamp(path) for path in paths)
