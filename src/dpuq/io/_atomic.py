"""Release files written atomically and, without ``force``, exclusively.

A release file is either absent, the previous complete file, or the new complete file — never
torn, never empty, never silently replaced. :func:`release_file` does it in the order that keeps
a privacy budget safe:

1. take a lock on the output path (``fcntl.flock`` on a lock file next to it, released by the
   kernel if the process dies), and, without ``force``, refuse if the file exists;
2. create a temporary file in the same directory and reserve disk space for it, so that a full
   disk is found *before* any budget is spent or noise drawn;
3. the caller charges the ledger, runs the release and writes the content
   (:meth:`PendingFile.write_text`), then calls :meth:`PendingFile.commit`: ``fsync``, then
   ``os.link`` (exclusive: fails if the name appeared meanwhile) or ``os.replace`` (``force``),
   then ``fsync`` of the directory;
4. on any error the temporary file is removed and the previous file is left as it was.

Temporary files left by a process killed with ``SIGKILL`` are removed by the next writer of the
same path (it holds the lock, so no live writer owns them).

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "out.json")
>>> with release_file(p) as f:
...     f.write_text('{"threshold": 0.9}\\n')
...     f.commit()
>>> open(p).read()
'{"threshold": 0.9}\\n'
>>> with release_file(p) as f:
...     pass
Traceback (most recent call last):
...
FileExistsError: -o '...out.json': exists; pass --force to overwrite it
>>> sorted(os.listdir(d))
['out.json']
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

try:  # POSIX; elsewhere the lock falls back to an O_EXCL lock file
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = ["PendingFile", "atomic_write", "release_file"]

#: Disk space reserved in the temporary file before a release (a calibration JSON is ~3 kB).
RESERVE_BYTES = 64 * 1024
_TMP_TAG = ".dpuq-tmp"
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK}


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - some platforms cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.dpuq-lock")


@contextlib.contextmanager
def _path_lock(path: Path, label: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a lock file beside it), or refuse at once."""
    lock = _lock_path(path)
    if fcntl is None:  # pragma: no cover
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            raise FileExistsError(
                f"{label}: another process is writing it (lock file {str(lock)!r})"
            ) from None
        try:
            yield
        finally:
            os.close(fd)
            os.unlink(lock)
        return
    while True:
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FileExistsError(f"{label}: another process is writing it right now") from None
        # The holder before us may have unlinked the lock file after we opened it: only a lock
        # on the inode that is still at that name counts.
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)  # closing releases the flock


def _remove_stale_temps(path: Path) -> None:
    prefix = f".{path.name}."
    for entry in path.parent.iterdir() if str(path.parent) else Path(".").iterdir():
        name = entry.name
        if name.startswith(prefix) and name.endswith(_TMP_TAG + path.suffix):
            with contextlib.suppress(OSError):
                entry.unlink()


class PendingFile:
    """A release file being written: a temporary file that :meth:`commit` puts in place."""

    def __init__(self, path: Path, label: str, force: bool, reserve: int) -> None:
        self.path = path
        self.label = label
        self.force = force
        self.committed = False
        token = secrets.token_hex(6)
        self.temp = path.with_name(f".{path.name}.{token}{_TMP_TAG}{path.suffix}")
        self._fd: int | None = os.open(self.temp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        if reserve > 0 and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(self._fd, 0, reserve)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    self.discard()
                    raise OSError(
                        exc.errno, f"{label}: cannot write in {str(path.parent)!r} ({exc.strerror})"
                    ) from None

    def write_text(self, text: str) -> None:
        """Write the whole content (replacing anything written before) and ``fsync`` it."""
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        """Write the whole content (replacing anything written before) and ``fsync`` it."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.label}: the temporary file is closed")
        with self._writing():
            os.lseek(fd, 0, os.SEEK_SET)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.ftruncate(fd, len(data))
            os.fsync(fd)

    def write_with(self, writer: Callable[[Path], None]) -> None:
        """Let ``writer(temp_path)`` write the content (e.g. ``np.save``), then ``fsync`` it."""
        with self._writing():
            writer(self.temp)
            fd = os.open(self.temp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Name the file in a failed write's error (and say the old file is unchanged)."""
        try:
            yield
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"{self.label}: writing failed ({exc.strerror}); the previous file, if any, is "
                "unchanged",
            ) from None

    def commit(self) -> None:
        """Put the written file at its name: exclusively, or replacing it with ``force``."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.force:
            os.replace(self.temp, self.path)
        else:
            try:
                os.link(self.temp, self.path)
            except FileExistsError:
                raise FileExistsError(
                    f"{self.label}: appeared while writing; pass --force to overwrite it"
                ) from None
            except OSError as exc:  # no hard links here (some network or FAT file systems)
                if exc.errno not in _NO_LINKS or self.path.exists():
                    raise
                os.replace(self.temp, self.path)  # we hold the lock: no dpuq writer races us
            else:
                os.unlink(self.temp)
        _fsync_dir(self.path.parent if str(self.path.parent) else Path("."))
        self.committed = True

    def discard(self) -> None:
        """Remove the temporary file (the previous file is untouched)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp)


@contextlib.contextmanager
def release_file(
    path: str | os.PathLike,
    *,
    force: bool = False,
    name: str = "-o",
    reserve: int = RESERVE_BYTES,
) -> Iterator[PendingFile]:
    """Reserve ``path`` for one release; see the module docstring for the order of steps.

    Raises :class:`FileExistsError` (a one-line message naming ``name``) before yielding when
    ``path`` exists and ``force`` is False, or when another process is writing it. Nothing is
    written unless :meth:`PendingFile.commit` is called inside the block.
    """
    p = Path(path)
    label = f"{name} {str(p)!r}"
    with _path_lock(p, label):
        if p.exists() and not force:
            raise FileExistsError(f"{label}: exists; pass --force to overwrite it")
        _remove_stale_temps(p)
        pending = PendingFile(p, label, force, reserve)
        try:
            yield pending
        finally:
            if not pending.committed:
                pending.discard()


def atomic_write(
    path: str | os.PathLike,
    writer: Callable[[PendingFile], None],
    *,
    force: bool = True,
    name: str = "-o",
) -> None:
    """Write ``path`` atomically: ``writer(pending)`` fills it, then it is committed."""
    with release_file(path, force=force, name=name, reserve=0) as pending:
        writer(pending)
        pending.commit()
