"""Writing a file so that it is never seen half written, for every model's formats."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> None:
    """Replace ``path`` with what ``write(f)`` writes: afterwards it is either the old file
    or the whole new one, and a process killed meanwhile leaves nothing behind.

    On Linux the data goes to an unnamed file in the target directory (O_TMPFILE), which
    the kernel discards if the process dies; only once it is complete and fsync'ed does it
    get a name, and that name is renamed over the target at once. Elsewhere a named
    temporary file is used, and removed on any error.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory")
    if not os.path.isdir(directory):
        raise FileNotFoundError(2, f"the directory {directory} does not exist", path)
    tmp = os.path.join(directory, f".bbpe-{os.urandom(8).hex()}.tmp")  # secrets.token_hex, without its imports
    fd, anonymous = _open_unnamed(directory)
    if fd < 0:
        # 0o666 minus the umask, as a plain open() would give (mkstemp would make it 0600)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            if anonymous:
                _name(f.fileno(), directory, os.path.basename(tmp))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)


def _open_unnamed(directory: str) -> tuple[int, bool]:
    """(fd, True) for an unnamed file in directory (mode 0o666 minus the umask), or (-1, False)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.exists("/proc/self/fd"):
        return -1, False
    try:
        return os.open(directory, flag | os.O_WRONLY, 0o666), True  # the umask applies, as with O_CREAT
    except OSError:
        return -1, False  # a filesystem without O_TMPFILE


def _name(fd: int, directory: str, name: str) -> None:
    """Give the unnamed file ``fd`` a name: linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N
    (os.link only uses linkat, which follows that link, when given a directory fd)."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)
    finally:
        os.close(dir_fd)


def _fsync_directory(directory: str) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def write_file(target: str | os.PathLike[str] | BinaryIO, data: bytes, is_file: bool) -> None:
    """``data`` to a binary file object as it is, or to a path atomically."""
    if is_file:
        target.write(data)  # type: ignore[union-attr]
    else:
        atomic_write(target, lambda f: f.write(data))  # type: ignore[arg-type]
