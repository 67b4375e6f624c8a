"""Atomic file writes: every file the library writes is complete or not there at all.

A file is written to a temporary file in the destination's folder, flushed to disk
(``fsync``) and renamed over the destination with :func:`os.replace`, which is atomic on
POSIX and Windows file systems: a reader, or a process that was interrupted (Ctrl-C, a
kill, a full disk), finds either the old file or the complete new one, never a mix. Only a
process killed outright (``SIGKILL``, power loss) can leave its temporary file behind, named
``.<name>.<random>.tmp`` beside the destination; the destination itself is untouched.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from typing import IO, Any


def _target(path: str | os.PathLike) -> str:
    """The file to replace: a symbolic link's target (the link stays a link), else ``path``."""
    path = os.fspath(path)
    return os.path.realpath(path) if os.path.islink(path) else path


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success, ``fsync`` it and rename it over ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The destination (a symbolic link is followed: its target is replaced).
    mode : {"wb", "w"}, default="wb"
        Binary or text writing.
    **open_kwargs
        Passed to :func:`open` (``encoding``, ``newline``, ...).

    Yields
    ------
    file object
        The temporary file. When the block raises (``KeyboardInterrupt`` included) the
        temporary file is removed and ``path`` keeps its old contents.

    Notes
    -----
    A new file gets the permissions an ordinary ``open`` would give it (``0o666`` less the
    umask); a replaced file keeps its permission bits.

    Examples
    --------
    >>> import os, tempfile
    >>> from tensorprob._files import atomic_write
    >>> path = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_write(path, "w") as fh:
    ...     _ = fh.write("complete")
    >>> with open(path) as fh:
    ...     fh.read()
    'complete'
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    target = _target(path)
    folder, name = os.path.split(os.path.abspath(target))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    fd = -1
    # the temporary file is made inside the try: an interrupt right after it exists still removes it
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as with open()
        except FileExistsError:
            tmp = ""  # another writer's file: not ours to remove
            raise
        fh = os.fdopen(fd, mode, **open_kwargs)
        fd = -1  # the file object owns the descriptor now
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))  # a replaced file keeps its permissions
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """Flush the folder entry of a rename to disk (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
