"""The writer protocol: one writer at a time per store file, and never into a file that was replaced.

Every write to a store — creating its schema, an ingest, a retract, discarding a store a failed first
ingest created — happens while holding an exclusive advisory lock (``flock``) on the store file
itself. After the lock is granted the writer checks that the path still names the file its connection
has open (same device and inode): if another process discarded that file meanwhile, the writer
reopens the path (creating the store again) and locks that instead. So:

* a second writer **waits** for the first (up to :data:`WRITE_WAIT_S`) instead of failing with
  ``database is locked``; hitting the wait bound is a :class:`~thinkingdb.errors.StoreError` that
  says so;
* a store is discarded only by the process that created it, only while it holds the lock and the
  store is still at generation 0, so another process's successful ingest can never be discarded or
  written into an unlinked file;
* a search saves its rebuilt index only when the lock is free at once (:meth:`WriterLock.try_acquire`):
  it never waits behind an ingest.

A new store's private file (``<path>.new-<pid>-<hex>``, see :func:`new_store_path`) holds a shared
``flock`` for as long as the process building it lives. A first ingest killed midway leaves that file
behind; the next open of the store removes it (:func:`sweep_abandoned`), but only when it is provably
abandoned: its lock is free **and** the process named in it is gone (the lock covers a process on
another host sharing the directory, the pid the instant between creating the file and locking it).

SQLite's own locks stay in force underneath; the advisory lock only orders whole write commands. On
systems without ``fcntl`` (Windows) the lock is a no-op and SQLite's busy timeout applies.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "f")
>>> _ = open(path, "w").close()
>>> a, b = WriterLock(path), WriterLock(path)
>>> a.open(); b.open()
>>> a.acquire(1.0) == file_id(path), b.try_acquire()
(True, False)
>>> a.release(); b.try_acquire()
True
>>> a.close(); b.close()
"""

from __future__ import annotations

import _thread
import os
import time

from ..errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["WRITE_WAIT_S", "WriterLock", "file_id", "new_store_path", "read_header", "sweep_abandoned"]

WRITE_WAIT_S = 600.0   # how long a writer waits for another writer before giving up


def file_id(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def new_store_path(path: str) -> str:
    """The private file a new store is built in until its first commit (same directory as ``path``).

    >>> import re; bool(re.fullmatch(r"kb\\.sqlite\\.new-\\d+-[0-9a-f]{8}", new_store_path("kb.sqlite")))
    True
    """
    return f"{path}.new-{os.getpid()}-{os.urandom(4).hex()}"


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:          # it exists, owned by someone else
        return False
    return False


def sweep_abandoned(path: str) -> list[str]:
    """Remove the private files of new stores at ``path`` whose builders died (see the module
    docstring); the names removed. Files still locked, or of a live process, are left alone.

    >>> import tempfile, subprocess, sys
    >>> d = tempfile.mkdtemp(); db = os.path.join(d, "kb.sqlite")
    >>> dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
    ...                       capture_output=True, text=True).stdout.strip()
    >>> for name in (f"kb.sqlite.new-{dead}-0badc0de", f"kb.sqlite.new-{dead}-0badc0de-wal",
    ...              f"kb.sqlite.new-{os.getpid()}-00000000", "kb.sqlite.new-x", "other.new-1-00000000"):
    ...     open(os.path.join(d, name), "w").close()
    >>> sorted(os.path.basename(f) for f in sweep_abandoned(db)) == sorted(
    ...     [f"kb.sqlite.new-{dead}-0badc0de", f"kb.sqlite.new-{dead}-0badc0de-wal"])
    True
    >>> sorted(os.listdir(d)) == sorted([f"kb.sqlite.new-{os.getpid()}-00000000", "kb.sqlite.new-x",
    ...                                  "other.new-1-00000000"])
    True
    """
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    stems: dict[str, int] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    prefix = base + ".new-"
    if not any(name.startswith(prefix) for name in names):   # the usual case: no pattern to compile
        return []
    import re
    pattern = re.compile(re.escape(base) + r"\.new-(\d+)-[0-9a-f]{8}(-wal|-shm|-journal)?")
    for name in names:
        m = pattern.fullmatch(name)
        if m:
            stems[os.path.join(folder, name[:len(name) - len(m.group(2) or "")])] = int(m.group(1))
    removed: list[str] = []
    for stem, pid in stems.items():
        if not _process_gone(pid):
            continue
        fd = None
        try:
            fd = os.open(stem, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            pass            # only a -wal/-shm of a private file already gone
        except OSError:
            continue
        try:
            if fd is not None and fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue    # someone still holds it (another host): not abandoned
            for suffix in ("-wal", "-shm", "-journal", ""):
                try:
                    os.remove(stem + suffix)
                    removed.append(stem + suffix)
                except FileNotFoundError:
                    pass
                except OSError:
                    break
        finally:
            if fd is not None:
                os.close(fd)
    return removed


# Closing any descriptor of a file drops every POSIX lock the process holds on it -- the SQLite
# locks of every connection of this process to that file, not only those of the store whose lock is
# closed. Two stores open on one file in one process (two KnowledgeBase handles; `serve`'s probe and
# its generations) then lost the first one's shared lock when the second closed: another process's
# last connection could checkpoint and delete the WAL under it, and this process read "a damaged
# store" (SQLITE_IOERR_SHORT_READ) or wrote into the deleted WAL. So a lock's descriptor is closed
# only with the last descriptor this process has open on that file; until then it is parked,
# unlocked, here. Keyed by (device, inode); guarded for threads (serve).
_OPEN: dict[tuple[int, int], int] = {}
_PARKED: dict[tuple[int, int], list[int]] = {}
_LIVE: dict[int, tuple[int, int]] = {}   # each open lock descriptor -> (device, inode)
_GUARD = _thread.allocate_lock()


def read_header(path: str, n: int) -> bytes:
    """The first ``n`` bytes of ``path``, read through a descriptor this process already holds on
    the file when there is one (opening and closing another would drop this process's SQLite locks
    on it, see above)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None:
        with _GUARD:
            fd = next((f for f, key in _LIVE.items() if key == (st.st_dev, st.st_ino)), None)
            if fd is not None:
                return os.pread(fd, n, 0)
    with open(path, "rb") as fh:
        return fh.read(n)


class WriterLock:
    """An exclusive ``flock`` on one store file (see the module docstring).

    The lock's file descriptor stays open as long as the store's SQLite connection: closing any
    descriptor of a file drops every POSIX lock the process holds on it, SQLite's included, so the
    descriptor is closed (:meth:`close`) only after the connection -- and only when no other lock of
    this process has the file open (see ``_OPEN``).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def open(self) -> None:
        """Open the descriptor on the file ``path`` names now (call right after the connection)."""
        if self._fd is None and os.path.exists(self.path):
            try:
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot lock the store for writing: {exc.strerror}") from None
            st = os.fstat(fd)
            with _GUARD:
                key = _LIVE[fd] = (st.st_dev, st.st_ino)
                _OPEN[key] = _OPEN.get(key, 0) + 1
            self._fd = fd

    def mark_alive(self) -> None:
        """Hold a shared lock on a new store's private file for this process's life (so
        :func:`sweep_abandoned` never takes it for abandoned)."""
        if self._fd is not None and fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_SH)

    def file_id(self) -> tuple[int, int] | None:
        """``(device, inode)`` of the file the descriptor has open."""
        if self._fd is None:
            return None
        st = os.fstat(self._fd)
        return st.st_dev, st.st_ino

    def _flock(self, flags: int) -> bool:
        if fcntl is None:
            return True
        try:
            fcntl.flock(self._fd, flags)
            return True
        except BlockingIOError:
            return False

    def acquire(self, wait_s: float = WRITE_WAIT_S) -> tuple[int, int] | None:
        """Wait for the lock; the ``(device, inode)`` locked (None: no file is open)."""
        if self._fd is None:
            return None
        if not self._held:
            deadline = time.monotonic() + wait_s
            pause = 0.005
            while not self._flock(fcntl.LOCK_EX | fcntl.LOCK_NB if fcntl else 0):
                if time.monotonic() > deadline:
                    raise StoreError(f"{self.path}: another process has been writing to this store for more "
                                     f"than {wait_s:g} s; try again when it has finished")
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
            self._held = True
        return self.file_id()

    def try_acquire(self) -> bool:
        """Take the lock only if it is free now."""
        if self._fd is None:
            return False
        if not self._held:
            self._held = self._flock(fcntl.LOCK_EX | fcntl.LOCK_NB if fcntl else 0)
        return self._held

    def release(self) -> None:
        if self._held:
            self._held = False
            if fcntl is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release and close the descriptor (only after the SQLite connection is closed)."""
        self.release()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)   # a private file's shared lock (mark_alive) too
            with _GUARD:
                key = _LIVE.pop(fd)
                _OPEN[key] -= 1
                if _OPEN[key]:
                    _PARKED.setdefault(key, []).append(fd)   # another store of this process has it open
                    return
                del _OPEN[key]
                closing = [fd] + _PARKED.pop(key, [])
            for x in closing:
                os.close(x)
