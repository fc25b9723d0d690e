"""The embedded store: one SQLite file (WAL mode) holding units, facts, provenance, rules,
declarations, aliases, labels and saved lane indexes.

The file is stamped with an application id and a schema version; a foreign or newer file is refused,
never overwritten. Writes happen inside :meth:`Store.transaction`, so an ingest that fails or is killed
leaves the previous state intact.

Layout (schema 2). Every ingested file is a row of ``sources`` with a small integer id, its *origin*;
everything else records the origin that contributed it, so :meth:`Store.retract_source` can remove a
file's contribution exactly — labels, rules, declarations and aliases are kept per origin too, and the
one in force is the one from the earliest (labels) or latest (rules) origin still present. Facts have an
integer id; provenance rows point at it, which keeps the hot insert path to one text index::

    sources(id, source, kind, ingested_at, records)
    facts(id, subject, relation, object, confidence)      UNIQUE (subject, relation, object)
    provenance(fact, origin, line, unit_id, confidence, detail)
    symbols(origin, key, label)   units(id, origin, ...)   rules / declarations / aliases (…, origin)

This module holds what a question needs: opening and checking a store, its generation, and the rows
a question reads (rules, declarations, aliases, labels of its answers). The rest of :class:`Store` is
defined beside it and imported on first use (:class:`_Method`): writing in
:mod:`~thinkingdb.store.transact` and :mod:`~thinkingdb.store.adding`, whole-store reads in
:mod:`~thinkingdb.store.contents`, units in :mod:`~thinkingdb.store.unit`, rules as JSON in
:mod:`~thinkingdb.store.rulejson` (a question does not unmarshal the code of ingest).
"""

from __future__ import annotations

import os
from _thread import RLock

# json is imported by the functions that read or write rules, units, lane indexes and provenance
# details: a question on a store without stored rules does not load it here (~1.5 ms of a cold process)
# nor is SQLite's module imported here: see _load_sqlite

from grammar import _import_module   # (one project: the lazy imports of both packages)

from ..errors import StoreError
from .locking import WriterLock, new_store_path, read_header, sweep_abandoned
from ..model import Declaration
from ..normalize import Vocabulary

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from ..model import Rule

APPLICATION_ID = 0x54444231  # "TDB1"
SCHEMA_VERSION = 2
DEFAULT_PATH = "./thinkingdb.sqlite"
CACHE_KIB = 65536  # page cache of a writing connection: index maintenance of large ingests stays in memory
READ_CACHE_KIB = 2048  # page cache until the first write: a question reads a few pages (the graph file holds the facts)
QUICK_CHECK_OPEN_BYTES = 8 << 20
"""An existing store up to this size (file + WAL) is checked with ``PRAGMA quick_check`` when opened."""
CHECK_WRITE_BYTES = 64 << 20
"""...and one up to this size with ``PRAGMA integrity_check`` before its first write: a damaged file is
refused, never written into. Larger stores are not checked (the checks read every page: docs/storage.md)."""
_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def _file_url(path: str) -> str:
    """The path part of a ``file:`` URI: on POSIX ``urllib.parse.quote`` of the path's file-system bytes
    (``os.fsencode``) — the characters of :data:`_URL_SAFE` kept, every other byte as ``%XX`` — written
    out here: importing urllib.parse (which loads ipaddress) would cost every cold question ~2 ms where
    the interpreter's start has not loaded it already. The bytes, not the UTF-8 text: a directory whose
    name is not UTF-8 (its bytes decoded as lone surrogates) is opened, not refused.

    >>> _file_url("/tmp/kb.sqlite"), _file_url("/tmp/a b/é?#.sqlite")
    ('/tmp/kb.sqlite', '/tmp/a%20b/%C3%A9%3F%23.sqlite')
    """
    if os.name == "nt":   # pragma: no cover - drive letters and backslashes
        from urllib.request import pathname2url
        return pathname2url(path)
    if _URL_SAFE.issuperset(path):
        return path
    return "".join(chr(b) if chr(b) in _URL_SAFE else f"%{b:02X}" for b in os.fsencode(path))


class _Reading:
    """The context of :meth:`Store.reading` (a class: ``contextlib`` costs a cold question ~0.5 ms). It holds
    the store's transaction lock (``Store._txn``) throughout: threads sharing a handle share its connection,
    and one thread's ``BEGIN`` inside another's transaction failed ("cannot start a transaction within a
    transaction"), or read another thread's uncommitted write."""

    __slots__ = ("conn", "lock", "began")

    def __init__(self, conn, lock) -> None:
        self.conn, self.lock, self.began = conn, lock, False

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            if not self.conn.in_transaction:
                self.conn.execute("BEGIN")
                self.began = True
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, *exc) -> None:
        try:
            if self.began and self.conn.in_transaction:
                self.conn.execute("COMMIT")
        finally:
            self.lock.release()


class StoreCreatedElsewhere(StoreError):
    """Two processes created the same new store at once; the one that lost wrote nothing (retry)."""


_TABLES = ("sources", "symbols", "facts", "provenance", "units", "rules", "declarations", "aliases",
           "lane_indexes", "meta")
# What opening a store checks, in one statement: application id, schema version, journal mode, how many
# schema objects there are and how many of the tables a store has (the list of those missing is read
# only when one is): an open of a current store runs this, the connection settings and the generation.
_PROBE = ("SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
          "(SELECT journal_mode FROM pragma_journal_mode), (SELECT count(*) FROM sqlite_master), "
          "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (" + ", ".join(f"'{t}'" for t in _TABLES)
          + "))")
# connection settings, set once per connection and never inside a transaction (cache_size is raised by
# Store.check_before_write); SQLite's busy timeout is connect's timeout
_SETTINGS = f"PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{READ_CACHE_KIB}; PRAGMA temp_store = MEMORY"
BUSY_TIMEOUT_S = 5.0
# Store.vocabulary: (0, mode, NULL) when the store names one (else 'folded', made before the modes), (1,
# phrase, relation) per alias, (2, relation, name) per inverse declaration, in the order of the separate
# reads it replaces (a name declared the inverse of two relations: the last relation in order wins)
_VOCABULARY = ("SELECT 0, value, NULL FROM meta WHERE key = 'symbols' UNION ALL "
               "SELECT 1, phrase, relation FROM (SELECT phrase, relation, max(origin) FROM aliases GROUP BY phrase) "
               "UNION ALL SELECT DISTINCT 2, relation, other FROM declarations WHERE kind = 'inverse' AND other != '' "
               "ORDER BY 1, 2, 3")
# the rows of rule_rows() and declarations(), in the order they are read (the state file keeps them as read)
_RULES = "SELECT name, body, origin FROM rules ORDER BY name, origin DESC"
_DECLARATIONS = "SELECT DISTINCT relation, kind, other FROM declarations ORDER BY relation, kind, other"


def _load_sqlite():
    """SQLite's module, imported by the first connection (a question the state file answers opens none:
    store/statefile.py). The C module of the sqlite3 package, whose wrapper adds only date adapters and
    the datetime module they need (~2 ms of a cold question; no store binds a date); same classes and
    errors. Other modules import ``sqlite3`` from here (the module's ``__getattr__``)."""
    global sqlite3
    try:
        import _sqlite3 as sqlite3
    except ImportError:   # pragma: no cover - an interpreter that has the package only
        import sqlite3
    return sqlite3


def _remove_store_files(file: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(file + suffix)
        except FileNotFoundError:
            pass


def _writable(file: str) -> bool:
    return os.access(file, os.W_OK) and os.access(os.path.dirname(os.path.abspath(file)) or ".", os.W_OK)


def _check_file(path: str) -> bool:
    """True when ``path`` exists and is non-empty; raise if it is not an SQLite file."""
    if not os.path.exists(path):
        return False
    if os.path.isdir(path):
        raise StoreError(f"{path}: is a directory, not a ThinkingDB store")
    if os.path.getsize(path) == 0:
        return False
    # through a descriptor this process holds on the file already, if any: opening and closing another
    # would drop every POSIX lock of this process on it, another open store's SQLite locks included
    if read_header(path, 16) != b"SQLite format 3\x00":
        raise StoreError(f"{path}: not a ThinkingDB store (not an SQLite file); refusing to overwrite it")
    return True


class _Method:
    """A :class:`Store` method defined in another module of this package, imported the first time it is
    looked up; the function then replaces this placeholder on the class (later lookups are plain)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __get__(self, obj, owner=None):
        func = getattr(_import_module(self.module, __package__), self.name)
        setattr(owner if owner is not None else type(obj), self.name, func)
        return func if obj is None else func.__get__(obj, owner)


class Store:
    """An open ThinkingDB SQLite file.

    >>> import tempfile, os
    >>> from thinkingdb.model import Fact, Triple
    >>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
    >>> with Store(path) as st:
    ...     with st.transaction():
    ...         n = st.add_facts([(Fact("a", "r", "b", 0.5), "doc.tdb", 1, None)])
    ...     [str(f.triple) for f in st.facts()], st.provenance(Triple("a", "r", "b"))[0]["source"]
    (['a r b'], 'doc.tdb')
    """

    def __init__(self, path: str = DEFAULT_PATH, *, create: bool = True, readonly: bool = False,
                 graph_file: bool = True):
        self.path = str(path)
        self.graph_file = graph_file   # keep the graph file beside the store current after writes
        self.readonly = readonly
        self._closed = self._discarded = False
        self._loaded: tuple | None = None   # a bulk load's graph arrays, written as the graph file after commit
        self._state = RLock()   # held while a new store's handle adopts or publishes (see current_generation)
        # held by a read or write transaction on the connection, which the handle's threads share (taken
        # after _state where both are: reading(), transact.transaction and save_index, keys._write,
        # statefile.save)
        self._txn = RLock()
        self._conn = None
        # the rows a question reads, from the state file while it is current: no connection until one is
        # needed (store/statefile.py); a store without a graph file reads SQLite as before
        self.question = None
        if graph_file:
            from .statefile import read_state
            self.question = read_state(os.path.abspath(self.path))
        if self.question is not None:
            self.path = self.question.path   # (absolute: the connection, made later, is to this file though the
            # process changed directory meanwhile)
            self.created, self._pending, self._lock = False, None, WriterLock(self.path)
            self.generation = self.question.stamp.generation
            return
        self._connect(create)

    def _connect(self, create: bool = True) -> None:
        readonly = self.readonly
        if not readonly:
            sweep_abandoned(self.path)   # private files of first ingests killed midway (see locking)
        existed = _check_file(self.path)
        if not existed and (readonly or not create):
            raise StoreError(f"{self.path}: no such store; run `thinkingdb ingest` first")
        self.created = not existed and not os.path.exists(self.path)
        # A new store is built in a private file and appears at ``path`` only with its first commit
        # (see thinkingdb.store.locking): a failed first ingest never shows, nor removes, a file at path.
        self._pending = new_store_path(self.path) if self.created else None
        self._lock = WriterLock(self.path)
        self._open()

    @property
    def connected(self) -> bool:
        """Whether this handle has opened its SQLite connection (a question answered from the state file
        opens none)."""
        return self._conn is not None

    @property
    def file(self) -> str:
        """The file the connection has open: ``path``, or the private file of a store not yet committed."""
        return self._pending or self.path

    def _open(self) -> None:
        _load_sqlite()
        file = self.file
        self._checked = ""   # the PRAGMA check this connection passed
        self._write_cache = False   # the page cache raised to CACHE_KIB (before the first write)
        if not self.readonly and os.path.exists(file) and not _writable(file):
            self.readonly = True   # read-only media or permissions: stats, search and queries still work
        modes = ["ro", "ro&immutable=1"] if self.readonly else ["rwc"]
        for i, mode in enumerate(modes):
            try:
                uri = f"file:{_file_url(os.path.abspath(file))}?mode={mode}"
                self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                                             timeout=BUSY_TIMEOUT_S)
                self._init(self.readonly)
                break
            except sqlite3.DatabaseError as exc:
                self._conn.close()
                if i + 1 < len(modes) and ("unable to open" in str(exc) or "readonly" in str(exc)):
                    # a WAL store in a read-only directory (no -shm can be made): open it as immutable,
                    # unless its -wal holds commits the main file lacks (immutable would not see them)
                    wal = file + "-wal"
                    if os.path.exists(wal) and os.path.getsize(wal) > 0:
                        raise StoreError(f"{self.path}: on read-only media with unmerged writes in "
                                         f"{wal}; open it once where it can be written") from exc
                    continue
                raise StoreError(f"{self.path}: cannot open store: {exc}") from exc
        if self._pending and not self.readonly:
            # A private file no other process knows: no WAL and no syncs while it is built (a crash
            # leaves only the private file); _seal makes it a WAL store on disk before it is linked in.
            self._conn.execute("PRAGMA journal_mode = MEMORY")
            self._conn.execute("PRAGMA synchronous = OFF")
        self._lock.close()
        self._lock = WriterLock(file)
        self._lock.open()
        if self._pending:
            self._lock.mark_alive()
        self._id = self._lock.file_id()
        self.generation = self._generation()
        self._stage = False

    @property
    def conn(self) -> sqlite3.Connection:
        """The SQLite connection (a store discarded after a failed first ingest is created again on use)."""
        if self._discarded:
            self._discarded = self._closed = False
            self._open()
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        if self._conn is None:   # opened from the state file: connect now
            with self._state:
                if self._conn is None:
                    self._connect(False)   # (the store was there when opened: one gone since is not made again)
        return self._conn

    def _init(self, readonly: bool) -> None:
        c = self.conn
        app, version, journal, tables, ours = c.execute(_PROBE).fetchone()
        if app == 0 and tables == 0:
            if readonly:
                raise StoreError(f"{self.path}: empty store")
            c.execute("PRAGMA journal_mode = WAL")
            if not self._create_schema():   # another process was first
                return self._init(readonly)
        elif app != APPLICATION_ID:
            raise StoreError(f"{self.path}: a foreign SQLite database (application id {app:#x}), not a "
                             "ThinkingDB store; refusing to touch it")
        elif version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer ThinkingDB (schema {version}, this one reads "
                             f"{SCHEMA_VERSION}); upgrade thinkingdb")
        elif version < SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema {version} is older than {SCHEMA_VERSION} and has no migration; "
                             "ingest the sources again into a new store")
        elif ours != len(_TABLES):
            missing = set(_TABLES) - {n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            raise StoreError(f"{self.path}: a ThinkingDB store without its tables ({', '.join(sorted(missing))}): "
                             "damaged; refusing to touch it")
        else:
            self._check("quick_check", QUICK_CHECK_OPEN_BYTES)
            if not readonly and journal != "wal":
                c.execute("PRAGMA journal_mode = WAL")
        c.executescript(_SETTINGS)

    def _check(self, pragma: str, max_bytes: int) -> None:
        """Refuse a damaged store (``PRAGMA quick_check`` or ``integrity_check``) when it is at most
        ``max_bytes`` on disk (file and WAL); a store that fails is never written to."""
        if self._checked == "integrity_check" or self._checked == pragma or self._pending:
            return
        file = self.file
        size = sum(os.path.getsize(f) for f in (file, file + "-wal") if os.path.exists(f))
        if size > max_bytes:
            return
        try:
            found = [str(row[0]) for row in self._conn.execute(f"PRAGMA {pragma}(3)")]
        except (sqlite3.Error, ValueError) as exc:   # a damaged header or page can fail the check itself
            found = [str(exc)]
        if found != ["ok"]:
            said = " ".join("; ".join(found).split())[:300]
            raise StoreError(f"{self.path}: a damaged store (SQLite {pragma}: {said}); refusing to read or "
                             "write it")
        self._checked = pragma

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent). A new store never committed to appears at ``path`` now,
        empty, unless another process made one there first (see :meth:`discard` for leaving none)."""
        if not self._closed:
            self._closed = True
            if self._conn is None:
                return
            if self._pending:
                try:
                    self._seal()
                except (sqlite3.Error, OSError):
                    pass
            self._conn.close()
            self._lock.close()
            if self._pending:
                try:
                    os.link(self._pending, self.path)
                except OSError:
                    pass   # another store is there already (or no hard links here): ours was empty
                _remove_store_files(self._pending)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        if not self._discarded:
            self.close()

    def _adopt(self, reopen_only: bool = False) -> None:
        if self._pending and not reopen_only:
            self._conn.close()
            self._lock.close()
            _remove_store_files(self._pending)
            self._pending = None
        self.created = False
        self._open()

    def _reopen(self) -> None:
        try:
            self._conn.close()
        except sqlite3.Error:
            pass
        self._lock.close()
        self.created = self.created and self._pending is not None
        self._open()

    def _generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0


    def current_generation(self) -> int:
        """The generation as stored now (another process may have written). A new store not committed
        yet whose path another process has published meanwhile is adopted first: this handle's private
        file never held a commit, and reading it would hide the published store's facts. The check and
        the read hold the handle's state lock, which a transaction of a new store holds until it has
        published: another thread never adopts, nor reads a connection, while that one is replaced."""
        with self._state:   # (read from the state file while the store is unchanged; else this connects)
            if self._conn is None and not self._closed:
                question = self._question()
                if question is not None:
                    return question.stamp.generation
            if self._pending and not self._closed and not self._conn.in_transaction and os.path.exists(self.path):
                self._adopt()
            return self._generation()

    # -- what a question reads -----------------------------------------------------------------------
    def labels_of(self, keys) -> dict[str, str]:
        """The display labels of some symbol keys (as :meth:`labels` gives them; keys without one are left out)."""
        keys = list(keys)
        out: dict[str, str] = {}
        # one read transaction (answers read their labels late, perhaps while another thread of this
        # handle is writing: they waited for its commit or rollback, not read its uncommitted rows)
        with self.reading():
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                # through sources: each (origin, key) is a primary-key lookup, not a scan of every label
                # (CROSS JOIN keeps sources outside: the planner otherwise scanned every symbol row)
                out.update((k, lab) for k, lab, _ in self.conn.execute(
                    "SELECT s.key, s.label, min(s.origin) FROM sources o CROSS JOIN symbols s ON s.origin = o.id "
                    f"WHERE s.key IN ({','.join('?' * len(part))}) GROUP BY s.key", part))
        return out

    def rules(self) -> list[Rule]:
        """Rules in force, each once (an ingest refuses a second rule of a stored name unless it is the
        same rule, so a store written since holds one rule per name)."""
        return list(dict.fromkeys(rule for rule, _ in self.rule_rows()))

    def rule_rows(self) -> list[tuple[Rule, str | None]]:
        """Rules in force with the unit that scopes each (None: every caller): for each name, the public
        rule of the latest source, and the rule of every restricted unit that states it (the same rule
        scoped to several units — each note's ``relation knows transitive.`` — is one row per unit)."""
        out, public = [], set()
        question = self._question()
        rows = question.rules if question is not None else \
            self.conn.execute(_RULES)
        for n, b, origin in rows:
            import json   # (a store without rules, a question's usual case, loads neither)

            from .rulejson import rule_from_json
            unit = json.loads(b).get("unit")
            if unit is None:
                if n in public:
                    continue   # (an older store's second public rule of one name: the latest source's holds)
                public.add(n)
            out.append((rule_from_json(n, b), unit))
        return list(dict.fromkeys(out))

    def reading(self) -> _Reading:
        """One read transaction: everything read inside sees the store at one generation (inside a
        transaction already open, that one)."""
        return _Reading(self.conn, self._txn)

    def question_rows(self) -> dict[str, list]:
        """The rows of :meth:`vocabulary`, :meth:`rule_rows` and :meth:`declarations` as SQLite gives them
        now (what the state file keeps: store/statefile.py), read in the caller's transaction."""
        conn = self.conn
        return {"vocabulary": conn.execute(_VOCABULARY).fetchall(), "rules": conn.execute(_RULES).fetchall(),
                "declarations": conn.execute(_DECLARATIONS).fetchall()}

    def _question(self):
        """The state file's rows (statefile.QuestionState) while this open handle has no connection and the
        store is unchanged since they were read; else None, connected now (a closed handle raises). Checked
        at each read, not only by current_generation: a query is parsed, and add_facts orients its facts,
        before the generation is checked, and an older state's aliases, inverses or symbol mode would then
        apply to the store as it is now."""
        if self._conn is None and not self._closed:
            with self._state:
                question = self.question
                if self._conn is None and question is not None and question.still_current():
                    return question
        self.conn   # (connects; a closed handle raises here)
        return None

    def declarations(self) -> list[Declaration]:
        question = self._question()
        rows = question.declarations if question is not None else \
            self.conn.execute(_DECLARATIONS)
        return [Declaration(r, k, o or None) for r, k, o in rows]

    @property
    def symbol_mode(self) -> str:
        """How this store keys IRIs and CURIEs (:data:`thinkingdb.normalize.SYMBOL_MODES`); a store made
        before the modes existed folds them (``folded``)."""
        if self._question() is not None:
            return self.vocabulary().mode
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'symbols'").fetchone()
        return row[0] if row else "folded"

    def vocabulary(self) -> Vocabulary:
        """The store's symbol mode, aliases in force (each phrase's from its latest source) and inverse
        declarations (name -> canonical relation), in one statement (a question reads it twice)."""
        mode, aliases, inverses = "folded", {}, {}
        question = self._question()
        for part, a, b in (question.vocabulary if question is not None else self.conn.execute(_VOCABULARY)):
            if part == 0:
                mode = a
            elif part == 1:
                aliases[a] = b
            else:
                inverses[b] = a
        return Vocabulary(aliases, inverses, mode)




# the methods of Store defined beside this module, each imported on first use (_Method)
_ELSEWHERE = {
    ".transact": ("check_before_write", "transaction", "refresh_graph", "keep_loaded_graph", "save_index",
                  "set_symbol_mode", "discard", "_create_schema", "_seal"),   # writing, a new store's schema
    ".adding": ("source_id", "record_source", "add_labels", "add_label_rows", "add_facts", "add_fact_rows", "add_rules",
                "add_declarations", "add_aliases", "unit_owner", "add_units", "retract_source"),   # rows a write adds
    ".contents": ("has_source", "load_index", "facts", "fact_rows", "provenance", "fact_confidence", "labels", "units",
                  "unit", "unit_facts", "sources", "dump", "stats"),   # whole-store reads
}
for _module, _names in _ELSEWHERE.items():
    for _name in _names:
        setattr(Store, _name, _Method(_module, _name))

# the names this module held before its write path, units and rules moved beside it (PEP 562: loaded on use)
_MOVED = {"Unit": ".unit", "UNIT_FIELDS": ".unit", "_UNIT_COLUMNS": ".unit", "_unit": ".unit",
          "rule_to_json": ".rulejson", "rule_from_json": ".rulejson", "_SCHEMA": ".transact",
          "PROVENANCE_INDEXES": ".transact", "FactRow": ".adding"}


def __getattr__(name: str):
    if name == "sqlite3":
        return _load_sqlite()
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(module, __package__), name)
    globals()[name] = value
    return value
