"""Saving a file that a later command reads: the whole file or nothing (a temporary dot file, fsync, rename). A
full disk is :class:`DiskFullError` (exit 4); any other refusal a one-line LFWError naming the file (exit 2)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lfw.errors import LFWError, MeasurementError

FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # no room: the disk, the quota or the file-size limit


class DiskFullError(MeasurementError):
    """The file system had no room for a file being saved; the earlier file, if any, is untouched."""


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use in ``folder``'s file system (``statvfs``' available blocks)."""
    return shutil.disk_usage(folder).free


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write fewer than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entry for the renamed file, where the file system lets a folder be opened and synced."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, exclusive: bool = False) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all, folders created; return the path.

    ``exclusive``: refuse to replace an existing file, checked and published in one step (a hard link).
    Raises DiskFullError (no room) or LFWError (``exclusive`` and the file exists, or another refusal).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    folder = path.parent
    made = [p for p in (folder, *folder.parents) if not p.exists()]  # folders this save makes, deepest first
    tmp: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=folder)
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())  # what a plain open() would have given the file (mkstemp gives 0600)
        (_publish_new if exclusive else os.replace)(tmp, path)
        tmp = None
        _sync_folder(folder)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for empty in made:  # a failed save leaves no folder behind either
            with contextlib.suppress(OSError):
                empty.rmdir()
        if exclusive and isinstance(exc, FileExistsError):
            raise LFWError(f"refusing to overwrite {path}; it exists (saved files are never replaced by accident)") \
                from None
        if exc.errno in FULL:
            free = free_bytes(next(p for p in (folder, *folder.parents) if p.is_dir()))
            raise DiskFullError(f"cannot save {path}: it needs {len(payload):,} bytes and {free:,} are free there "
                                f"({exc.strerror}); free some space or save elsewhere; earlier files are untouched") \
                from None
        raise LFWError(f"cannot save {path}: {exc.strerror or exc}; check the folder and its permissions") from None
    return path


def append_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Append ``text`` to ``path`` (made if missing) by rewriting it whole with :func:`write_atomic`."""
    path = Path(path)
    before = path.read_bytes() if path.exists() else b""
    return write_atomic(path, before + text.encode("utf-8"))


def write_figure(fig: Any, path: str | os.PathLike[str], **savefig: Any) -> Path:
    """Save a matplotlib figure through :func:`write_atomic` (format from the suffix unless ``format=`` says)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, **{"format": Path(path).suffix.lstrip(".") or "png", **savefig})
    return write_atomic(path, buffer.getvalue())


def _publish_new(tmp: str, path: Path) -> None:
    """Give ``tmp`` the name ``path`` only if no file has it: a hard link (else a check, then a rename)."""
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
            raise
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(tmp, path)
    else:
        os.unlink(tmp)


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets while it reads, a race with threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022
