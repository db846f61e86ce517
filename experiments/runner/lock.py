"""The run folder's lock: one live run per folder, on Linux, macOS and Windows.

The lock is the operating system's (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows), so the
lock of a killed run is released with its process and taken over by the next run. The file holds the
owner's pid, to name it in the refusal, and is removed when the run ends.
"""

from __future__ import annotations

import os
from pathlib import Path

from experiments.runner.folder import LOCK_FILE, RunFolderError, writing
from experiments.runner.options import UsageError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

#: Windows locks byte ranges and forbids reading a locked range: lock a byte past the pid, which stays readable.
_WINDOWS_LOCKED_BYTE = 1 << 20


def _try_lock(fh) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    fh.seek(_WINDOWS_LOCKED_BYTE)
    try:
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _unlock(fh) -> None:
    if fcntl is not None:
        fcntl.flock(fh, fcntl.LOCK_UN)
    else:
        fh.seek(_WINDOWS_LOCKED_BYTE)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)


class RunFolderLock:
    """An exclusive lock on the run folder (out/.lock, holding the owner's pid); a second live run on the
    same folder is refused with the first one's pid."""

    def __init__(self, out: Path):
        self.path = Path(out) / LOCK_FILE
        self.fh = None

    def __enter__(self):
        while True:
            with writing(self.path):
                fh = self.path.open("a+")
            if not _try_lock(fh):
                fh.seek(0)
                owner = fh.read().strip() or "unknown"
                fh.close()
                raise UsageError(f"--out {self.path.parent} is in use by another run (pid {owner}); wait for it to "
                                 f"finish, or choose another --out")
            if self._still_the_file(fh):
                break
            _unlock(fh)  # the previous owner removed the file between our open and our lock: lock the new one
            fh.close()
        try:
            with writing(self.path):  # the owner's pid (a full disk refuses even these few bytes)
                fh.seek(0)
                fh.truncate()
                fh.write(f"{os.getpid()}\n")
                fh.flush()
        except RunFolderError:
            _unlock(fh)
            fh.close()
            raise
        self.fh = fh
        return self

    def _still_the_file(self, fh) -> bool:
        try:
            return os.path.samestat(os.fstat(fh.fileno()), os.stat(self.path))
        except (OSError, AttributeError):  # gone, or no inode numbers (Windows: a locked file is not removed)
            return os.name == "nt"

    def __exit__(self, *exc) -> None:
        try:
            self.path.unlink()  # a finished run leaves no lock behind; removed while held, so no one locks it
        except OSError:  # Windows refuses to remove an open file: the released lock stays, harmless
            pass
        _unlock(self.fh)
        self.fh.close()
