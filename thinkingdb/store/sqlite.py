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
"""

from __future__ import annotations

import os
from contextlib import contextmanager

# json is imported by the functions that read or write rules, units, lane indexes and provenance
# details: a question on a store without stored rules does not load it here (~1.5 ms of a cold process)

try:   # the C module of the sqlite3 package, whose wrapper adds only date adapters and the datetime module they
    import _sqlite3 as sqlite3   # need (~2 ms of a cold question; no store binds a date); same classes and errors
except ImportError:   # pragma: no cover - an interpreter that has the package only
    import sqlite3

from ..arith import Arith, Constraint
from ..errors import StoreError
from .locking import WriterLock, file_id, new_store_path, sweep_abandoned
from ..model import Atom, Declaration, Fact, Node, Rule, Term, Triple, Var
from ..normalize import SYMBOL_MODES, Vocabulary
from ..values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator, Sequence

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

_SCHEMA = """
CREATE TABLE sources (id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    ingested_at TEXT NOT NULL, records INTEGER NOT NULL DEFAULT 0);
CREATE TABLE symbols (origin INTEGER NOT NULL, key TEXT NOT NULL, label TEXT NOT NULL,
    PRIMARY KEY (origin, key)) WITHOUT ROWID;
CREATE TABLE facts (id INTEGER PRIMARY KEY,
    subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL,
    confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    UNIQUE (subject, relation, object));
CREATE TABLE provenance (fact INTEGER NOT NULL, origin INTEGER NOT NULL, line INTEGER NOT NULL DEFAULT 0,
    unit_id TEXT, confidence REAL NOT NULL, detail TEXT);
{provenance_indexes}
CREATE TABLE units (
    id TEXT PRIMARY KEY, origin INTEGER NOT NULL, role TEXT, topic TEXT, claim TEXT, condition TEXT,
    procedure TEXT, utility_acts TEXT, utility_note TEXT, source TEXT, chunk TEXT, acl TEXT, region TEXT,
    effective_from TEXT, effective_to TEXT, extra TEXT, line INTEGER NOT NULL DEFAULT 0);
CREATE INDEX units_origin ON units (origin);
CREATE TABLE rules (name TEXT NOT NULL, origin INTEGER NOT NULL, body TEXT NOT NULL, line INTEGER NOT NULL,
    PRIMARY KEY (name, origin));
CREATE TABLE declarations (relation TEXT NOT NULL, kind TEXT NOT NULL, other TEXT NOT NULL DEFAULT '',
    origin INTEGER NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (relation, kind, other, origin));
CREATE TABLE aliases (phrase TEXT NOT NULL, relation TEXT NOT NULL, origin INTEGER NOT NULL,
    line INTEGER NOT NULL, PRIMARY KEY (phrase, origin));
CREATE TABLE lane_indexes (name TEXT PRIMARY KEY, params TEXT NOT NULL, data BLOB NOT NULL,
    built_at TEXT NOT NULL, generation INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE change_log (generation INTEGER PRIMARY KEY, parent TEXT NOT NULL, stamp TEXT NOT NULL,
    triples TEXT NOT NULL, units TEXT NOT NULL);
"""

PROVENANCE_INDEXES = (("provenance_fact", "CREATE INDEX provenance_fact ON provenance (fact)"),
                      ("provenance_origin", "CREATE INDEX provenance_origin ON provenance (origin)"),
                      ("provenance_unit", "CREATE INDEX provenance_unit ON provenance (unit_id) WHERE unit_id IS NOT NULL"))
"""The provenance indexes (name, statement): a bulk load into a store without facts builds them after it."""
_SCHEMA = _SCHEMA.format(provenance_indexes="".join(sql + ";\n" for _, sql in PROVENANCE_INDEXES))

UNIT_FIELDS = ("role", "topic", "claim", "condition", "procedure", "utility_acts", "utility_note",
               "source", "chunk", "acl", "region", "effective_from", "effective_to")

FactRow = tuple  # (subject, relation, object, confidence, line, unit_id | None, detail JSON | None)


class Unit(Value):
    """A knowledge unit: the seed fields, provenance, access control and validity dates (a frozen
    :class:`~thinkingdb.values.Value`)."""

    __slots__ = ("id", "role", "topic", "claim", "condition", "procedure", "utility_acts", "utility_note", "source",
                 "chunk", "acl", "region", "effective_from", "effective_to", "extra")
    id: str
    role: str
    topic: str
    claim: str
    condition: str
    procedure: str
    utility_acts: tuple[str, ...]
    utility_note: str
    source: str
    chunk: str
    acl: tuple[str, ...]
    region: str
    effective_from: str
    effective_to: str
    extra: str

    def __init__(self, id: str, role: str = "", topic: str = "", claim: str = "", condition: str = "",
                 procedure: str = "", utility_acts: tuple[str, ...] = (), utility_note: str = "", source: str = "",
                 chunk: str = "", acl: tuple[str, ...] = (), region: str = "", effective_from: str = "",
                 effective_to: str = "", extra: str = "{}") -> None:
        _set = object.__setattr__
        _set(self, "id", id)
        _set(self, "role", role)
        _set(self, "topic", topic)
        _set(self, "claim", claim)
        _set(self, "condition", condition)
        _set(self, "procedure", procedure)
        _set(self, "utility_acts", utility_acts)
        _set(self, "utility_note", utility_note)
        _set(self, "source", source)
        _set(self, "chunk", chunk)
        _set(self, "acl", acl)
        _set(self, "region", region)
        _set(self, "effective_from", effective_from)
        _set(self, "effective_to", effective_to)
        _set(self, "extra", extra)

    def text_fields(self) -> dict[str, str]:
        """The searchable fields (utility_acts joined by spaces, as DS009 indexes them).

        >>> Unit("u1", topic="TLS", utility_acts=("secure", "audit")).text_fields()
        {'topic': 'TLS', 'utility_acts': 'secure audit'}
        """
        out = {"role": self.role, "topic": self.topic, "claim": self.claim, "condition": self.condition,
               "procedure": self.procedure, "utility_acts": " ".join(self.utility_acts),
               "utility_note": self.utility_note}
        return {k: v for k, v in out.items() if v}


def _encode_term(t: Term) -> Any:
    if isinstance(t, Node):
        return {"node": t.relation, "args": [_encode_term(a) for a in t.args]}
    return {"var": t.name} if isinstance(t, Var) else t


def _decode_term(t: Any) -> Term:
    if isinstance(t, dict) and "node" in t:
        return Node(t["node"], tuple(_decode_term(a) for a in t["args"]))
    return Var(t["var"]) if isinstance(t, dict) else t


def _encode_expr(e: Any) -> Any:
    if isinstance(e, Arith):
        return {"op": e.op, "left": _encode_expr(e.left), "right": _encode_expr(e.right)}
    return _encode_term(e)


def _decode_expr(e: Any) -> Any:
    if isinstance(e, dict) and "op" in e:
        return Arith(e["op"], _decode_expr(e["left"]), _decode_expr(e["right"]))
    return _decode_term(e)


def rule_to_json(rule: Rule, unit: str | None = None) -> str:
    """A rule as the JSON text stored in the ``rules`` table (round-trips through :func:`rule_from_json`).

    >>> r = Rule("r", (Atom(Var("x"), "uses", Var("y")),), Atom(Var("y"), "used_by", Var("x")), 0.5)
    >>> rule_from_json("r", rule_to_json(r)) == r
    True
    >>> n = Rule("n", r.premises, Atom(Node("pair", (Var("x"), Var("y"))), "pair.1", Var("x")),
    ...          negated=(Atom(Var("x"), "banned", Var("_#1")),))
    >>> rule_from_json("n", rule_to_json(n)) == n
    True
    >>> c = Rule("c", r.premises, Atom(Var("x"), "next", Var("z")),
    ...          constraints=(Constraint(":=", Var("z"), Arith("+", Var("y"), "1")), Constraint("<", Var("z"), "9")))
    >>> rule_from_json("c", rule_to_json(c)) == c
    True
    """
    import json
    atoms = [[_encode_term(a.subject), a.relation, _encode_term(a.object)] for a in rule.premises]
    h = rule.head
    out = {"weight": rule.weight, "premises": atoms,
           "head": [_encode_term(h.subject), h.relation, _encode_term(h.object)]}
    if rule.negated:
        out["negated"] = [[_encode_term(a.subject), a.relation, _encode_term(a.object)] for a in rule.negated]
    if rule.constraints:
        out["constraints"] = [[c.op, _encode_expr(c.left), _encode_expr(c.right)] for c in rule.constraints]
    if unit is not None:   # a rule of a restricted unit: it applies only for callers who see the unit
        out["unit"] = unit
    return json.dumps(out)


def rule_from_json(name: str, body: str) -> Rule:
    """The inverse of :func:`rule_to_json`."""
    import json
    d = json.loads(body)
    atom = lambda a: Atom(_decode_term(a[0]), a[1], _decode_term(a[2]))  # noqa: E731
    return Rule(name, tuple(atom(a) for a in d["premises"]), atom(d["head"]), d["weight"],
                tuple(atom(a) for a in d.get("negated", ())),
                tuple(Constraint(op, _decode_expr(lt), _decode_expr(rt)) for op, lt, rt in d.get("constraints", ())))


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
    with open(path, "rb") as fh:
        header = fh.read(16)
    if header != b"SQLite format 3\x00":
        raise StoreError(f"{path}: not a ThinkingDB store (not an SQLite file); refusing to overwrite it")
    return True


class Store:
    """An open ThinkingDB SQLite file.

    >>> import tempfile, os
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
        if not readonly:
            sweep_abandoned(self.path)   # private files of first ingests killed midway (see locking)
        existed = _check_file(self.path)
        if not existed and (readonly or not create):
            raise StoreError(f"{self.path}: no such store; run `thinkingdb ingest` first")
        self.created = not existed and not os.path.exists(self.path)
        self.readonly = readonly
        self._closed = self._discarded = False
        # A new store is built in a private file and appears at ``path`` only with its first commit
        # (see thinkingdb.store.locking): a failed first ingest never shows, nor removes, a file at path.
        self._pending = new_store_path(self.path) if self.created else None
        self._loaded: tuple | None = None   # a bulk load's graph arrays, written as the graph file after commit
        self._lock = WriterLock(self.path)
        self._open()

    @property
    def file(self) -> str:
        """The file the connection has open: ``path``, or the private file of a store not yet committed."""
        return self._pending or self.path

    def _open(self) -> None:
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
        return self._conn

    def _init(self, readonly: bool) -> None:
        c = self.conn
        app, version, journal, tables, ours = c.execute(_PROBE).fetchone()
        if app == 0 and tables == 0:
            if readonly:
                raise StoreError(f"{self.path}: empty store")
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("BEGIN IMMEDIATE")
            if c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:   # another process was first
                c.execute("ROLLBACK")
                return self._init(readonly)
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            c.execute("INSERT INTO meta VALUES ('generation', '0')")
            c.execute("INSERT INTO meta VALUES ('symbols', 'iris')")
            c.execute("COMMIT")
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

    def check_before_write(self) -> None:
        """Refuse to write into a damaged store of up to :data:`CHECK_WRITE_BYTES` (checked once); give
        the connection its writing page cache (:data:`CACHE_KIB`; reading needs only :data:`READ_CACHE_KIB`:
        a full scan such as ``stats`` on a 1M-fact store peaked at 72 MB with the large cache, 23 MB without)."""
        self._check("integrity_check", CHECK_WRITE_BYTES)
        if not self._write_cache:
            self._conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self._write_cache = True

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent). A new store never committed to appears at ``path`` now,
        empty, unless another process made one there first (see :meth:`discard` for leaving none)."""
        if not self._closed:
            self._closed = True
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

    def discard(self) -> bool:
        """Close and forget a store this object created and never committed (its private file is
        removed; nothing was ever at ``path``). Using the store afterwards creates it again. Returns
        whether there was such a store."""
        if not self._pending or self._closed:
            return False
        self._closed = True
        self._conn.close()
        self._lock.close()
        _remove_store_files(self._pending)
        self._discarded = True
        self._pending = new_store_path(self.path)
        if not os.path.exists(self.path):   # a graph file made for the store that never was
            for suffix in (".graph", ".graph.lock"):
                _remove_store_files(self.path + suffix)
        return True

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        if not self._discarded:
            self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing writes under the writer protocol (:mod:`thinkingdb.store.locking`): waits for
        another writer instead of failing; bumps the store generation so cached graphs reload.

        The first commit of a new store moves it to ``path``; if another process created a store there
        meanwhile, :class:`StoreCreatedElsewhere` is raised (nothing of this transaction is kept) and
        the store is reopened on the other process's file, so the caller may simply try again.
        """
        if self.readonly:
            raise StoreError(f"{self.path}: the store is open read-only (read-only media or permissions)")
        self.check_before_write()
        self._writer_lock()
        current = False
        try:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"{self.path}: cannot write: {exc}") from exc
            try:
                track = self._track_start()
                self._touched = set()
                yield
                from .writelog import record
                record(self.conn, self._touched)   # which origins this write touched (store/writelog.py)
                self.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
                # a new random token per write: a graph file built from another store state never matches
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('token', ?)", (os.urandom(16).hex(),))  # secrets.token_hex(16)
                track = self._track_end(track)
                if self._loaded is not None:   # the stamp of exactly this commit
                    from .graphfile import store_stamp
                    self._loaded = (store_stamp(self), *self._loaded)
                self.conn.execute("COMMIT")
                self._touched = None
            except BaseException:
                self._loaded = None
                self._touched = None
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            if self._pending:
                self._publish()
            elif track is not None:
                from .graphdelta import advance
                current = advance(self.path, *track)
        finally:
            self._lock.release()
        self.generation = self._generation()
        if self.graph_file and not current:
            self.refresh_graph()

    def _track_start(self) -> tuple | None:
        """Note this transaction's fact changes for the graph file's delta (docs/storage.md)."""
        if not self.graph_file or self._pending:
            return None
        from .graphdelta import arm
        from .graphfile import store_stamp
        arm(self.conn)
        self._noted = 0
        return (store_stamp(self),)

    def _track_end(self, track: tuple | None) -> tuple | None:
        """``(parent stamp, new stamp, changes)`` for :func:`~thinkingdb.store.graphdelta.advance`,
        or None when the changes are too many for a delta."""
        if track is None:
            return None
        from . import changelog
        from .graphdelta import collect
        from .graphfile import store_stamp
        changes = collect(self.conn)
        stamp = store_stamp(self)
        logged = changelog.collect(self.conn, changes)
        if logged is not None:    # what the caller views depend on, for their next reader (store/changelog.py)
            changelog.record(self.conn, track[0], stamp, logged)
        return None if changes is None else (track[0], stamp, changes)

    def _note_rows(self, n: int) -> None:
        """A write of ``n`` more fact rows: past a delta's size, stop noting them (rebuilt whole)."""
        from .graphdelta import MAX_DELTA, disarm
        self._noted = getattr(self, "_noted", 0) + n
        if self._noted > MAX_DELTA:
            disarm(self.conn)

    def refresh_graph(self) -> None:
        """Rebuild the graph file beside the store after a write, so the next open maps it at once
        (a failure here only leaves the file stale: the next reader rebuilds it)."""
        from .graphdelta import build_graph
        loaded, self._loaded = self._loaded, None
        try:
            if loaded is not None and len(loaded) == 8:   # a bulk load's arrays: no read back of the facts
                from .graphdelta import delta_path
                from .graphfile import _locked, graph_path, write_graph
                stamp, *facts, pending = loaded
                path = graph_path(self.path)
                with _locked(path):
                    write_graph(path, stamp, *facts, arrays=pending() if pending is not None else None)
                    if os.path.exists(delta_path(self.path)):   # a delta over the old file is void
                        os.remove(delta_path(self.path))
                return
            build_graph(self)
        except (OSError, sqlite3.Error):
            pass

    def keep_loaded_graph(self, symbols: list[str], relations: list[str], s, r, o, conf, arrays=None) -> None:
        """The whole fact table of this transaction's store state, interned as the graph file takes it
        (:func:`~thinkingdb.store.graphfile.write_graph`): written after the commit instead of reading
        the facts back. Only for a transaction that wrote every fact of the store (a bulk load).
        ``arrays``: None, or a function giving the file's arrays (None if it could not) computed meanwhile."""
        if self.graph_file and self.conn.in_transaction:
            self._loaded = (symbols, relations, s, r, o, conf, arrays)

    def _writer_lock(self) -> None:
        """Hold the writer lock on the file our connection has open, reopening ``path`` if that file
        was replaced (a pending store locks nothing: no other process knows its file)."""
        for _ in range(100):
            if self._pending:
                if os.path.exists(self.path):     # another process created the store meanwhile: use it
                    self._adopt()
                    continue
                return
            got = self._lock.acquire()
            if got is not None and got == file_id(self.path):
                return
            self._lock.release()
            self._reopen()
        raise StoreError(f"{self.path}: the store file keeps being replaced; cannot write")

    def _publish(self) -> None:
        """Move a new store's private file to ``path`` once it holds a commit (never over another)."""
        tmp = self._pending
        self._seal()
        self._conn.close()
        self._lock.close()
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            _remove_store_files(tmp)
            self._pending = None
            self._adopt(reopen_only=True)
            raise StoreCreatedElsewhere(f"{self.path}: another process created this store at the same time; "
                                        "nothing was written, try again") from None
        _remove_store_files(tmp)
        self._pending = None
        self._reopen()

    def _seal(self) -> None:
        """Make the private file of a new store a WAL store, everything on disk (fsync), before it is linked."""
        if self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] != "wal":
            raise StoreError(f"{self.path}: the new store could not be switched to WAL mode")
        fd = os.open(self._pending, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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
        file never held a commit, and reading it would hide the published store's facts."""
        if self._pending and not self._closed and not self._conn.in_transaction and os.path.exists(self.path):
            self._adopt()
        return self._generation()

    # -- sources -----------------------------------------------------------------------------------
    def source_id(self, source: str, kind: str = "") -> int:
        """The origin id of ``source``, registering it (call inside a transaction)."""
        from .writelog import note
        row = self.conn.execute("SELECT id FROM sources WHERE source = ?", (source,)).fetchone()
        if row is not None:
            note(self, row[0])
            return row[0]
        kind = kind or os.path.splitext(source)[1].lstrip(".") or "api"
        origin = self.conn.execute("INSERT INTO sources (source, kind, ingested_at) VALUES (?, ?, datetime('now'))",
                                   (source, kind)).lastrowid
        note(self, origin)
        return origin

    def has_source(self, source: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sources WHERE source = ?", (source,)).fetchone() is not None

    def record_source(self, source: str, kind: str, records: int) -> None:
        """Set the record count (and kind) of a source, registering it if needed."""
        origin = self.source_id(source, kind)
        self.conn.execute("UPDATE sources SET kind = ?, records = ? WHERE id = ?", (kind, records, origin))

    # -- writing -----------------------------------------------------------------------------------
    def add_labels(self, labels: dict[str, str], source: str = "<api>") -> None:
        """Display labels of symbol keys (the first label a source gives is kept)."""
        self.add_label_rows(self.source_id(source), labels.items())

    def add_label_rows(self, origin: int, items: Iterable[tuple[str, str]]) -> None:
        from .writelog import note
        note(self, origin)
        self.conn.executemany(f"INSERT OR IGNORE INTO symbols VALUES ({int(origin)}, ?, ?)", items)

    def add_facts(self, rows: Iterable[tuple[Fact, str, int, str | None]]) -> int:
        """Insert facts with provenance; a duplicate triple keeps the highest confidence."""
        by_source: dict[str, list[FactRow]] = {}
        for f, src, line, unit in rows:
            by_source.setdefault(src, []).append((f.subject, f.relation, f.object, f.confidence, line, unit, None))
        return sum(self.add_fact_rows(self.source_id(src), batch) for src, batch in by_source.items())

    def add_fact_rows(self, origin: int, rows: Sequence[FactRow]) -> int:
        """The fast path: validated canonical rows ``(s, r, o, confidence, line, unit_id, detail)``.

        Rows go to a temporary staging table with one ``executemany``; two set-based statements then
        merge them into ``facts`` (max confidence) and append their provenance, in file order.
        """
        from .writelog import note
        c = self.conn
        note(self, origin)
        self._loaded = None   # the facts are no longer those of a bulk load alone
        if not self._stage:
            c.execute("CREATE TEMP TABLE IF NOT EXISTS stage (s TEXT, r TEXT, o TEXT, c REAL, line INTEGER, "
                      "unit TEXT, detail TEXT)")
            self._stage = True
        c.execute("DELETE FROM temp.stage")
        if self.graph_file:
            self._note_rows(len(rows))
        c.executemany("INSERT INTO temp.stage VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        # Sorted, so the unique index is walked in order rather than at random (large random inputs).
        c.execute("INSERT INTO facts (subject, relation, object, confidence) SELECT s, r, o, c FROM temp.stage "
                  "WHERE true ORDER BY s, r, o ON CONFLICT (subject, relation, object) DO UPDATE SET "
                  "confidence = max(confidence, excluded.confidence)")
        c.execute(f"INSERT INTO provenance SELECT f.id, {int(origin)}, st.line, st.unit, st.c, st.detail "
                  "FROM temp.stage st JOIN facts f ON f.subject = st.s AND f.relation = st.r AND f.object = st.o "
                  "ORDER BY st.rowid")
        return len(rows)

    def add_rules(self, rules: Iterable[tuple]) -> None:
        """Rules as ``(rule, source, line)`` or ``(rule, source, line, unit id)`` for a restricted unit's rule."""
        self.conn.executemany("INSERT OR REPLACE INTO rules VALUES (?, ?, ?, ?)",
                              [(r.name, self.source_id(src), rule_to_json(r, unit[0] if unit else None), line)
                               for r, src, line, *unit in rules])

    def add_declarations(self, decls: Iterable[tuple[Declaration, str, int]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO declarations VALUES (?, ?, ?, ?, ?)",
                              [(d.relation, d.kind, d.other or "", self.source_id(src), line)
                               for d, src, line in decls])

    def add_aliases(self, aliases: Iterable[tuple[str, str, str, int]]) -> None:
        from ..normalize import relation_key
        mode = self.symbol_mode
        self.conn.executemany("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?, ?)",
                              [(relation_key(p, mode), r, self.source_id(src), line) for p, r, src, line in aliases])

    def unit_owner(self, unit_ids: Sequence[str]) -> dict[str, str]:
        """Which source already holds each of ``unit_ids`` (absent ids are left out)."""
        out: dict[str, str] = {}
        ids = list(unit_ids)
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            sql = ("SELECT u.id, s.source FROM units u JOIN sources s ON s.id = u.origin WHERE u.id IN ("
                   + ",".join("?" * len(part)) + ")")
            out.update(self.conn.execute(sql, part))
        return out

    def add_units(self, units: Iterable[tuple[Unit, int]], source: str | None = None) -> None:
        """Insert units; ``source`` (the ingested file) defaults to each unit's own ``source`` field."""
        import json
        rows = []
        for u, line in units:
            origin = self.source_id(source if source is not None else (u.source or "<api>"))
            rows.append((u.id, origin, u.role, u.topic, u.claim, u.condition, u.procedure,
                         json.dumps(list(u.utility_acts)), u.utility_note, u.source, u.chunk,
                         json.dumps(list(u.acl)), u.region, u.effective_from, u.effective_to, u.extra, line))
        from .changelog import MAX_LOGGED, disarm
        if self.graph_file and len(rows) > MAX_LOGGED:   # too many for the change log: not noted one by one
            disarm(self.conn)
        self.conn.executemany("INSERT OR REPLACE INTO units VALUES (" + ",".join("?" * 17) + ")", rows)

    def retract_source(self, source: str) -> dict[str, int]:
        """Remove everything a source contributed, as if it had never been ingested (call inside a
        transaction). Facts asserted elsewhere too stay, with the max of their remaining confidences."""
        c = self.conn
        row = c.execute("SELECT id FROM sources WHERE source = ?", (source,)).fetchone()
        if row is None:
            return {"facts": 0, "units": 0, "provenance": 0}
        origin = row[0]
        from .writelog import note
        note(self, origin)
        self._loaded = None
        c.execute("CREATE TEMP TABLE IF NOT EXISTS touched (fact INTEGER PRIMARY KEY)")
        c.execute("DELETE FROM temp.touched")
        c.execute("INSERT OR IGNORE INTO temp.touched SELECT fact FROM provenance WHERE origin = ?", (origin,))
        if self.graph_file:   # a retract larger than a delta rebuilds the graph file whole (no notes kept)
            self._note_rows(c.execute("SELECT count(*) FROM temp.touched").fetchone()[0])
        removed = c.execute("DELETE FROM provenance WHERE origin = ?", (origin,)).rowcount
        facts = c.execute("DELETE FROM facts WHERE id IN (SELECT fact FROM temp.touched) AND NOT EXISTS "
                          "(SELECT 1 FROM provenance p WHERE p.fact = facts.id)").rowcount
        c.execute("UPDATE facts SET confidence = (SELECT max(p.confidence) FROM provenance p WHERE p.fact = facts.id) "
                  "WHERE id IN (SELECT fact FROM temp.touched)")
        units = c.execute("DELETE FROM units WHERE origin = ?", (origin,)).rowcount
        for table in ("symbols", "rules", "declarations", "aliases"):
            c.execute(f"DELETE FROM {table} WHERE origin = ?", (origin,))
        c.execute("DELETE FROM sources WHERE id = ?", (origin,))
        c.execute("DELETE FROM temp.touched")
        return {"facts": facts, "units": units, "provenance": removed}

    def save_index(self, name: str, params: dict, data: bytes) -> bool:
        """Save a lane index blob with its parameters (round-trips through :meth:`load_index`).

        Best effort: when another process is writing (or the store is read-only) nothing is saved and
        False is returned at once — a search never waits behind an ingest to save its index.
        """
        import json
        row = (name, json.dumps(params, sort_keys=True), data)
        if self.conn.in_transaction:   # inside the caller's own transaction (which holds the lock)
            self.conn.execute("INSERT OR REPLACE INTO lane_indexes VALUES (?, ?, ?, datetime('now'), ?)",
                              (*row, self.current_generation()))
            return True
        if self.readonly or self._pending:
            return False
        self.check_before_write()
        if not self._lock.try_acquire():
            return False
        try:
            if self._lock.file_id() != file_id(self.path):
                return False
            c = self.conn
            c.execute("PRAGMA busy_timeout = 0")
            try:
                c.execute("INSERT OR REPLACE INTO lane_indexes VALUES (?, ?, ?, datetime('now'), ?)",
                          (name, json.dumps(params, sort_keys=True), data, self.current_generation()))
            except sqlite3.OperationalError:
                return False
            finally:
                c.execute("PRAGMA busy_timeout = 5000")
            return True
        finally:
            self._lock.release()

    def load_index(self, name: str) -> tuple[dict, bytes, int] | None:
        """``(params, data, generation)`` of a saved lane index, or None."""
        import json
        row = self.conn.execute("SELECT params, data, generation FROM lane_indexes WHERE name = ?", (name,)).fetchone()
        return None if row is None else (json.loads(row[0]), row[1], row[2])

    # -- reading -----------------------------------------------------------------------------------
    def facts(self) -> Iterator[Fact]:
        for s, r, o, c in self.conn.execute("SELECT subject, relation, object, confidence FROM facts"):
            yield Fact(s, r, o, c)

    def fact_rows(self) -> list[tuple[str, str, str, float]]:
        return self.conn.execute("SELECT subject, relation, object, confidence FROM facts").fetchall()

    def provenance(self, t: Triple) -> list[dict]:
        """Every file, line and unit an asserted fact came from (extracted facts add their sentence)."""
        import json
        rows = self.conn.execute(
            "SELECT p.confidence, s.source, p.line, p.unit_id, p.detail FROM facts f "
            "JOIN provenance p ON p.fact = f.id JOIN sources s ON s.id = p.origin "
            "WHERE f.subject = ? AND f.relation = ? AND f.object = ? ORDER BY s.source, p.line, p.rowid",
            (t.subject, t.relation, t.object))
        out = []
        for c, s, ln, u, detail in rows:
            d = {"confidence": c, "source": s, "line": ln, "unit_id": u}
            if detail:
                d.update(json.loads(detail))
            out.append(d)
        return out

    def fact_confidence(self, t: Triple) -> float | None:
        row = self.conn.execute("SELECT confidence FROM facts WHERE subject = ? AND relation = ? AND object = ?",
                                (t.subject, t.relation, t.object)).fetchone()
        return None if row is None else row[0]

    def labels_of(self, keys) -> dict[str, str]:
        """The display labels of some symbol keys (as :meth:`labels` gives them; keys without one are left out)."""
        keys = list(keys)
        out: dict[str, str] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            # through sources: each (origin, key) is a primary-key lookup, not a scan of every label
            # (CROSS JOIN keeps sources outside: the planner otherwise scanned every symbol row)
            out.update((k, lab) for k, lab, _ in self.conn.execute(
                "SELECT s.key, s.label, min(s.origin) FROM sources o CROSS JOIN symbols s ON s.origin = o.id "
                f"WHERE s.key IN ({','.join('?' * len(part))}) GROUP BY s.key", part))
        return out

    def labels(self) -> dict[str, str]:
        """Display label per symbol key: the one given by the earliest source still present."""
        return {k: lab for k, lab, _ in
                self.conn.execute("SELECT key, label, min(origin) FROM symbols GROUP BY key")}

    def rules(self) -> list[Rule]:
        """Rules in force: for each name, the one of the latest source."""
        return [rule_from_json(n, b) for n, b, _ in
                self.conn.execute("SELECT name, body, max(origin) FROM rules GROUP BY name ORDER BY name")]

    def rule_rows(self) -> list[tuple[Rule, str | None]]:
        """Rules in force with the unit that scopes each (None: every caller), as :meth:`rules`."""
        out = []
        for n, b, _ in self.conn.execute("SELECT name, body, max(origin) FROM rules GROUP BY name ORDER BY name"):
            import json
            out.append((rule_from_json(n, b), json.loads(b).get("unit")))
        return out

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read transaction: everything read inside sees the store at one generation."""
        c = self.conn
        if c.in_transaction:
            yield
            return
        c.execute("BEGIN")
        try:
            yield
        finally:
            if c.in_transaction:
                c.execute("COMMIT")

    def declarations(self) -> list[Declaration]:
        return [Declaration(r, k, o or None) for r, k, o in
                self.conn.execute("SELECT DISTINCT relation, kind, other FROM declarations "
                                  "ORDER BY relation, kind, other")]

    @property
    def symbol_mode(self) -> str:
        """How this store keys IRIs and CURIEs (:data:`thinkingdb.normalize.SYMBOL_MODES`); a store made
        before the modes existed folds them (``folded``)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'symbols'").fetchone()
        return row[0] if row else "folded"

    def set_symbol_mode(self, mode: str) -> None:
        """Choose the symbol mode of a store that holds no facts yet; a store with facts keeps its own."""
        if mode not in SYMBOL_MODES:
            raise StoreError(f"unknown symbol mode {mode!r}; expected one of {', '.join(SYMBOL_MODES)}")
        if mode == self.symbol_mode:
            return
        if self.conn.execute("SELECT 1 FROM facts LIMIT 1").fetchone() or self.readonly:
            raise StoreError(f"{self.path}: the store keys symbols in mode {self.symbol_mode!r}; it cannot change "
                             f"to {mode!r} once it holds facts (ingest into a new store)")
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('symbols', ?)", (mode,))

    def vocabulary(self) -> Vocabulary:
        v = Vocabulary(mode=self.symbol_mode)
        for phrase, rel, _ in self.conn.execute("SELECT phrase, relation, max(origin) FROM aliases "
                                                "GROUP BY phrase ORDER BY phrase"):
            v.aliases[phrase] = rel
        for d in self.declarations():
            if d.kind == "inverse" and d.other:
                v.inverses[d.other] = d.relation
        return v

    def units(self) -> Iterator[Unit]:
        for row in self.conn.execute(f"SELECT {_UNIT_COLUMNS} FROM units ORDER BY id"):
            yield _unit(row)

    def unit(self, unit_id: str) -> Unit | None:
        row = self.conn.execute(f"SELECT {_UNIT_COLUMNS} FROM units WHERE id = ?", (unit_id,)).fetchone()
        return None if row is None else _unit(row)

    def unit_facts(self) -> dict[str, list[Triple]]:
        out: dict[str, list[Triple]] = {}
        for s, r, o, u in self.conn.execute(
                "SELECT f.subject, f.relation, f.object, p.unit_id FROM provenance p JOIN facts f ON f.id = p.fact "
                "WHERE p.unit_id IS NOT NULL ORDER BY p.unit_id, f.subject, f.relation, f.object"):
            lst = out.setdefault(u, [])
            t = Triple(s, r, o)
            if not lst or lst[-1] != t:
                lst.append(t)
        return out

    def sources(self) -> list[dict]:
        return [{"source": s, "kind": k, "ingested_at": t, "records": n}
                for s, k, t, n in self.conn.execute("SELECT source, kind, ingested_at, records FROM sources "
                                                    "ORDER BY source")]

    def dump(self) -> dict[str, list[tuple]]:
        """The logical content of every table, origin ids resolved to source names and sorted; two stores
        holding the same knowledge dump equal (used to check that retract is exact).

        >>> import tempfile, os
        >>> with Store(os.path.join(tempfile.mkdtemp(), "kb.sqlite")) as st:
        ...     sorted(st.dump())
        ['aliases', 'declarations', 'facts', 'lane_indexes', 'provenance', 'rules', 'sources', 'symbols', 'units']
        """
        q = lambda sql: sorted(self.conn.execute(sql).fetchall(), key=repr)  # noqa: E731
        src = "(SELECT source FROM sources WHERE id = origin)"
        return {
            "sources": q("SELECT source, kind, records FROM sources"),
            "symbols": q(f"SELECT key, label, {src} FROM symbols"),
            "facts": q("SELECT subject, relation, object, confidence FROM facts"),
            "provenance": q(f"SELECT f.subject, f.relation, f.object, {src}, line, unit_id, p.confidence, detail "
                            "FROM provenance p JOIN facts f ON f.id = p.fact"),
            "units": q(f"SELECT {_UNIT_COLUMNS}, line, {src} FROM units"),
            "rules": q(f"SELECT name, body, line, {src} FROM rules"),
            "declarations": q(f"SELECT relation, kind, other, line, {src} FROM declarations"),
            "aliases": q(f"SELECT phrase, relation, line, {src} FROM aliases"),
            "lane_indexes": q("SELECT name, params, data FROM lane_indexes"),
        }

    def stats(self) -> dict[str, int]:
        q = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        return {"facts": q("SELECT count(*) FROM facts"), "provenance": q("SELECT count(*) FROM provenance"),
                "symbols": q("SELECT count(DISTINCT key) FROM symbols"),
                "relations": q("SELECT count(DISTINCT relation) FROM facts"), "units": q("SELECT count(*) FROM units"),
                "rules": q("SELECT count(DISTINCT name) FROM rules"),
                "declarations": q("SELECT count(*) FROM (SELECT DISTINCT relation, kind, other FROM declarations)"),
                "aliases": q("SELECT count(DISTINCT phrase) FROM aliases"), "sources": q("SELECT count(*) FROM sources"),
                "schema_version": SCHEMA_VERSION}


_UNIT_COLUMNS = ("id, role, topic, claim, condition, procedure, utility_acts, utility_note, source, chunk, acl, "
                 "region, effective_from, effective_to, extra")


def _unit(row) -> Unit:
    import json
    (uid, role, topic, claim, condition, procedure, acts, note, source, chunk, acl, region, eff_from, eff_to,
     extra) = row
    return Unit(uid, role or "", topic or "", claim or "", condition or "", procedure or "",
                tuple(json.loads(acts or "[]")), note or "", source or "", chunk or "", tuple(json.loads(acl or "[]")),
                region or "", eff_from or "", eff_to or "", extra or "{}")
