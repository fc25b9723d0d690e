"""What a question reads from SQLite, kept beside the store (``kb.sqlite.state``) so that a question on
an unchanged store opens no SQLite connection at all (issue 20).

A cold question used to open the store to read a handful of small things before the graph file gave it
the facts: the store's stamp (:func:`~thinkingdb.store.graphfile.store_stamp`), its vocabulary (symbol
mode, aliases, inverse declarations), rules and declarations, and whether it holds units. Loading
SQLite's C module and the two standard modules it imports (``functools``, ``collections``), connecting,
checking the schema and reading those rows cost a fresh process ~5 ms, more than the question itself on
a large store. This file holds those rows, written by a reader of the store (never by a write).

**When it is trusted.** :func:`read_state` returns the rows only when all of these hold:

* the file checks out (magic, format version, CRC-32 of its body, one JSON object);
* the store file is the one the rows were read from, untouched since: same device, inode, size and
  modification time as recorded;
* the store's write-ahead log is absent or empty, so everything committed is in the store file itself.

A ThinkingDB write removes the file before it begins (:func:`drop`, under the writer lock:
:mod:`~thinkingdb.store.locking`), so a question never trusts it past a commit it could have seen; a
write by anything else (the ``sqlite3`` shell, an older ThinkingDB) appends to the log or, once merged,
changes the store file's size or time. The graph file must then also be the store at the recorded stamp
(:func:`~thinkingdb.store.graphdelta.open_current`), or the question reads SQLite as before.

**When it is written.** :func:`save` runs after a question read the store the usual way (the file was
missing or stale), only for a store without units (their access rules need SQLite) and only when the
writer lock is free at once: holding it, it reads the stamp again and every row it records in one read
transaction, checks the log is empty, and replaces the file (a temporary file renamed over it). Holding
the lock means no ThinkingDB write can commit in between; a store written meanwhile gets no file.

>>> import tempfile, os
>>> from thinkingdb.api import KnowledgeBase
>>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
>>> with KnowledgeBase(path) as kb:
...     _ = kb.add_text("a r b. b r c.")
>>> os.path.exists(state_path(path))          # a write leaves none
False
>>> with KnowledgeBase(path) as kb:           # the first question reads SQLite and writes it
...     len(kb.query("? a r ?x."))
1
>>> read_state(path).stamp.generation
1
>>> with KnowledgeBase(path) as kb:           # the next opens no connection
...     len(kb.query("? ?x r ?y.")), kb.store.connected
(2, False)
"""

from __future__ import annotations

import os
import zlib

from .graphfile import Stamp, _json_object

__all__ = ["FORMAT", "QuestionState", "state_path", "read_state", "save", "drop"]

FORMAT = 1
MAGIC = b"TDBSTATE"
_PREFIX = 16   # magic (8 bytes), format version (4, little-endian), CRC-32 of the body (4)


def state_path(store_path: str) -> str:
    """The state file of a store: its path plus ``.state``.

    >>> state_path("kb.sqlite")
    'kb.sqlite.state'
    """
    return f"{store_path}.state"


def _file_key(st) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _log_path(store_path: str) -> str:
    """The store's write-ahead log: beside the file a symbolic link names, where SQLite puts it (a store
    reached by a link and written by its own name has its log there, none beside the link)."""
    return os.path.realpath(store_path) + "-wal"


def _log_empty(log: str) -> bool:
    try:
        return os.stat(log).st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


class QuestionState:
    """The rows a question reads from SQLite, at ``stamp``: ``vocabulary``, ``rules`` (name, body, origin)
    and ``declarations`` (relation, kind, other), as ``Store.question_rows`` read them."""

    __slots__ = ("path", "stamp", "vocabulary", "rules", "declarations", "_key", "_log")

    def __init__(self, path: str, stamp: Stamp, vocabulary: list, rules: list, declarations: list, key: list,
                 log: str) -> None:
        self.path, self.stamp = path, stamp
        self.vocabulary, self.rules, self.declarations = vocabulary, rules, declarations
        self._key = key   # the store file's device, inode, size and time when read
        self._log = log   # its write-ahead log (_log_path)

    def still_current(self) -> bool:
        """The store file is as it was when read and its log empty (two ``stat`` calls): nothing wrote.
        The log first: a commit merged into the store file between the two calls then shows in the second."""
        try:
            return _log_empty(self._log) and _file_key(os.stat(self.path)) == self._key
        except OSError:
            return False


def read_state(store_path: str) -> QuestionState | None:
    """The state file's rows when they are the store's now (see the module docstring), else None.
    Never raises for a bad, foreign or stale file."""
    spath, log = state_path(store_path), _log_path(store_path)
    try:
        if not _log_empty(log):   # (before the store file's stat, as in QuestionState.still_current)
            return None
        db = os.stat(store_path)
        with open(spath, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if len(data) < _PREFIX or data[:8] != MAGIC or int.from_bytes(data[8:12], "little") != FORMAT:
        return None
    body = data[_PREFIX:]
    if zlib.crc32(body) != int.from_bytes(data[12:16], "little"):
        return None
    try:
        v = _json_object(body.decode("utf-8"))
        if v["store"] != _file_key(db):
            return None
        stamp = Stamp(v["generation"], v["token"], v["max_fact"])
        return QuestionState(store_path, stamp, [tuple(r) for r in v["vocabulary"]], [tuple(r) for r in v["rules"]],
                             [tuple(r) for r in v["declarations"]], _file_key(db), log)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def save(store, stamp: Stamp) -> bool:
    """Write the state file of ``store`` if it is still at ``stamp`` and holds no units (see the module
    docstring); whether it was written. Never waits for a writer, never raises for a file it cannot write."""
    if store.readonly or store._pending or not store.connected:
        return False
    if not store._txn.acquire(blocking=False):   # another thread of this handle is in a transaction
        return False
    try:
        return _save(store, stamp)
    finally:
        store._txn.release()


def _save(store, stamp: Stamp) -> bool:
    import json

    from .graphfile import store_stamp
    from .locking import file_id
    if store.conn.in_transaction:   # inside a write: its rows are not committed, and its lock is not ours to release
        return False
    lock = store._lock
    if lock.held or not lock.try_acquire():
        return False
    try:
        log = _log_path(store.path)
        if lock.file_id() != file_id(store.path) or not _log_empty(log):
            return False
        # the store file's key before the rows and again after: a program writing without the lock (the
        # sqlite3 shell) and merging its log meanwhile changes it, and rows read before its write are not
        # recorded under the key of the file after it
        key = _file_key(os.stat(store.path))
        with store.reading():
            if store_stamp(store) != stamp:
                return False
            conn = store.conn
            if conn.execute("SELECT 1 FROM units LIMIT 1").fetchone() or \
                    conn.execute("SELECT 1 FROM provenance WHERE unit_id IS NOT NULL LIMIT 1").fetchone():
                return False
            rows = store.question_rows()
        if not _log_empty(log) or _file_key(os.stat(store.path)) != key:
            return False
        body = json.dumps({"store": key, "generation": stamp.generation, "token": stamp.token,
                           "max_fact": stamp.max_fact, **rows}, ensure_ascii=False).encode("utf-8")
        path = state_path(store.path)
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(MAGIC + FORMAT.to_bytes(4, "little") + zlib.crc32(body).to_bytes(4, "little") + body)
            os.replace(tmp, path)
        except OSError:
            try:
                os.remove(tmp)
            except OSError:
                pass
            return False
        return True
    finally:
        lock.release()


def drop(store_path: str) -> None:
    """Remove the state file of a store (a write is about to begin: the writer lock is held)."""
    try:
        os.remove(state_path(store_path))
    except FileNotFoundError:
        pass
    except OSError as exc:   # left in place, it could be trusted after this write: refuse the write
        from ..errors import StoreError
        raise StoreError(f"{state_path(store_path)}: cannot remove it before writing: {exc.strerror}") from None
