"""Opening a store (issue 20: a fresh process per question): a current store opens with one statement of
checks, the connection settings and the generation; every other kind of file is still told apart and
refused (or switched to WAL) exactly as when each check was a statement of its own."""

from __future__ import annotations

import os
import sqlite3

import pytest
from hypothesis import given, settings, strategies

import thinkingdb.store.sqlite as store_sqlite
from thinkingdb.errors import StoreError
from thinkingdb.model import Fact
from thinkingdb.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, Store


@pytest.fixture
def current(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    with Store(path) as st:
        with st.transaction():
            st.add_facts([(Fact("a", "r", "b", 1.0), "doc.tdb", 1, None)])
    return path


@pytest.fixture
def traced(monkeypatch):
    """The statements every connection the store opens runs (SQLite's own trace: a pragma function
    read inside a statement shows as a ``--`` line of its own and is not counted)."""
    statements: list[str] = []
    connect = store_sqlite.sqlite3.connect

    def tracing(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: statements.append(" ".join(sql.split())))
        return conn
    monkeypatch.setattr(store_sqlite.sqlite3, "connect", tracing)
    return statements


@pytest.mark.parametrize("small", [True, False])
def test_a_current_store_opens_with_one_statement_of_checks(current, traced, monkeypatch, small):
    """A store of at most QUICK_CHECK_OPEN_BYTES is quick-checked as well (a larger one is not)."""
    if not small:
        monkeypatch.setattr(store_sqlite, "QUICK_CHECK_OPEN_BYTES", 0)
    with Store(current) as st:
        opened = [s for s in traced if not s.startswith("--")]
        busy = st.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        settings = [st.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("synchronous", "cache_size", "temp_store")]
    assert opened[0].startswith("SELECT (SELECT application_id FROM pragma_application_id)")
    assert opened[1:] == ["PRAGMA quick_check(3)"] * small + ["PRAGMA synchronous = NORMAL;", "PRAGMA cache_size = -2048;", "PRAGMA temp_store = MEMORY",
                          "SELECT value FROM meta WHERE key = 'generation'"]
    # the settings the statements made before: 5 s busy timeout, NORMAL (1), 2 MiB page cache, MEMORY (2)
    assert busy == 5000 and settings == [1, -2048, 2]


def _make(path: str, app: int, version: int, tables: tuple[str, ...], journal: str = "wal") -> None:
    c = sqlite3.connect(path, isolation_level=None)
    c.execute(f"PRAGMA journal_mode = {journal}")
    for t in tables:
        c.execute(f"CREATE TABLE {t} (x)")
    c.execute(f"PRAGMA application_id = {app}")
    c.execute(f"PRAGMA user_version = {version}")
    c.close()


ALL = store_sqlite._TABLES


@pytest.mark.parametrize("app, version, tables, said", [
    (0, 0, ("people",), "a foreign SQLite database (application id 0x0)"),
    (0x1234, SCHEMA_VERSION, ALL, "a foreign SQLite database (application id 0x1234)"),
    (APPLICATION_ID, SCHEMA_VERSION + 1, ALL, f"written by a newer ThinkingDB (schema {SCHEMA_VERSION + 1}"),
    (APPLICATION_ID, SCHEMA_VERSION - 1, ALL, f"schema {SCHEMA_VERSION - 1} is older than {SCHEMA_VERSION}"),
    (APPLICATION_ID, SCHEMA_VERSION, tuple(t for t in ALL if t not in ("facts", "meta")),
     "a ThinkingDB store without its tables (facts, meta)"),
    # the tables' names in other places of the schema do not count: only tables are tables
    (APPLICATION_ID, SCHEMA_VERSION, tuple(t for t in ALL if t != "units") + ("units_x",),
     "a ThinkingDB store without its tables (units)"),
])
@pytest.mark.parametrize("readonly", [False, True])
def test_other_files_are_refused_untouched(tmp_path, app, version, tables, said, readonly):
    path = str(tmp_path / "other.sqlite")
    _make(path, app, version, tables)
    before = open(path, "rb").read()
    with pytest.raises(StoreError, match="refusing|newer|older") as err:
        Store(path, readonly=readonly)
    assert said in str(err.value) and str(err.value).startswith(path)
    assert open(path, "rb").read() == before


def test_a_view_named_as_a_table_does_not_count(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    _make(path, APPLICATION_ID, SCHEMA_VERSION, tuple(t for t in ALL if t != "rules"))
    c = sqlite3.connect(path)
    c.execute("CREATE VIEW rules AS SELECT 1")
    c.close()
    with pytest.raises(StoreError, match=r"without its tables \(rules\)"):
        Store(path)


def test_an_empty_sqlite_file_is_made_a_store_unless_read_only(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    sqlite3.connect(path).execute("PRAGMA user_version = 0").connection.close()   # a valid file, no schema
    with pytest.raises(StoreError, match="empty store"):
        Store(path, readonly=True)
    with Store(path) as st:
        app, version = (st.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("application_id", "user_version"))
        assert (app, version, st.generation) == (APPLICATION_ID, SCHEMA_VERSION, 0)
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("readonly, want", [(False, "wal"), (True, "delete")])
def test_a_store_in_rollback_journal_mode_is_made_wal_when_written(current, readonly, want):
    c = sqlite3.connect(current, isolation_level=None)
    assert c.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    c.close()
    with Store(current, readonly=readonly) as st:
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == want
        assert [str(f.triple) for f in st.facts()] == ["a r b"]
    assert os.path.exists(current)


@settings(max_examples=1000, deadline=None)
@given(strategies.text())
def test_the_file_url_is_urllib_s(path):
    """What urllib.parse.quote gives for the path's file-system bytes, without importing urllib: the same
    text (for valid UTF-8 text, quote(path) itself), or the same UnicodeEncodeError for a surrogate no
    file name can hold."""
    from urllib.parse import quote
    try:
        want = quote(os.fsencode(path))
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            store_sqlite._file_url(path)
        return
    assert store_sqlite._file_url(path) == want
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in path):   # valid text: quote(path) itself, as before
        assert want == quote(path)


def test_a_store_under_a_directory_named_by_non_utf8_bytes_opens(tmp_path):
    # the review's case: b"caf\xe9" (Latin-1) reads back as "caf\udce9"; by hand, the URI path holds %E9
    bad = os.path.join(os.fsencode(str(tmp_path)), b"caf\xe9")
    os.mkdir(bad)
    path = os.fsdecode(os.path.join(bad, b"kb.sqlite"))
    assert store_sqlite._file_url(path).endswith("/caf%E9/kb.sqlite")
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "r", "b")])
    assert os.path.exists(os.path.join(bad, b"kb.sqlite"))
    with KnowledgeBase(path, create=False) as kb:
        assert [a.bindings for a in kb.query("? a r ?x.").answers] == [{"x": "b"}]


def test_a_store_whose_path_needs_quoting_opens(tmp_path):
    """Characters a URI reserves (``?``, ``#``, ``%``, a space) and non-ASCII ones in the store's path."""
    folder = tmp_path / "a b?#%é"
    folder.mkdir()
    path = str(folder / "kb 1.sqlite")
    with Store(path) as st:
        with st.transaction():
            st.add_facts([(Fact("a", "r", "b", 1.0), "doc.tdb", 1, None)])
    with Store(path, readonly=True) as st:
        assert [str(f.triple) for f in st.facts()] == ["a r b"]
    assert sorted(os.listdir(folder))[0] == "kb 1.sqlite"
