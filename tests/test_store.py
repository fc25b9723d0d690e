"""The SQLite store: file checks, round trips, atomicity of failed ingests, exact retract."""

import json
import sqlite3

import pytest

from thinkingdb.errors import IngestError, StoreError
from thinkingdb.store.ingest import ingest
from thinkingdb.model import Fact, Triple
from thinkingdb.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, Store, Unit

VOCAB = "alias requires => depends_on.\nrelation part_of inverse has_part.\n"
TDB = """alias needs => depends_on.
relation depends_on transitive.
rule cap @0.9: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
nginx depends_on OpenSSL @0.6.
car has_part wheel.
nginx uses pcre.
"""
TSV = "nginx\trequires\topenssl\t0.9\nNGINX\tuses\tZlib\n# comment\nlibc\tpart_of\tos\n"
JSONL = (json.dumps({"id": "u1", "topic": "TLS", "claim": "nginx uses OpenSSL", "source": "handbook.pdf",
                     "acl": ["staff"], "region": "eu", "effective_from": "2024-01-01",
                     "triples": [["nginx", "uses", "openssl", 0.4], ["openssl", "provides", "tls"]]}) + "\n"
         + json.dumps({"id": "u2", "claim": "zlib compresses", "triples": [["zlib", "provides", "compression"]]}) + "\n")
MD = "atlas_id: n-1\n# Notes\nnginx uses OpenSSL. Zlib provides compression.\n## Cars\nA wheel is part of the car.\n"


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in (("v.tdb", VOCAB), ("a.tdb", TDB), ("b.tsv", TSV), ("c.jsonl", JSONL), ("d.md", MD)):
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        out[name] = str(p)
    return out


def test_new_store_is_stamped(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    Store(path).close()
    c = sqlite3.connect(path)
    assert c.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("setup,message", [
    (lambda c: c.execute("CREATE TABLE t (x)"), "foreign SQLite database"),
    (lambda c: (c.execute(f"PRAGMA application_id = {APPLICATION_ID}"), c.execute("CREATE TABLE t (x)"),
                c.execute("PRAGMA user_version = 99")), r"newer ThinkingDB \(schema 99"),
    (lambda c: (c.execute(f"PRAGMA application_id = {APPLICATION_ID}"), c.execute("CREATE TABLE t (x)"),
                c.execute("PRAGMA user_version = 1")), "schema 1 is older"),
])
def test_foreign_newer_older_files_are_refused_untouched(tmp_path, setup, message):
    path = tmp_path / "other.sqlite"
    c = sqlite3.connect(path)
    setup(c)
    c.commit()
    c.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=message):
        Store(str(path))
    assert path.read_bytes() == before


def test_text_file_is_refused(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    with pytest.raises(StoreError, match="not an SQLite file"):
        Store(str(p))
    assert p.read_text() == "hello"


def test_missing_store_without_create(tmp_path):
    with pytest.raises(StoreError, match="no such store"):
        Store(str(tmp_path / "none.sqlite"), create=False)


def test_save_load_index_round_trip(tmp_path):
    path = str(tmp_path / "kb.sqlite")
    blob = bytes(range(256)) * 3
    with Store(path) as st:
        assert st.load_index("bm25") is None
        with st.transaction():
            st.save_index("bm25", {"k1": 1.2, "b": 0.75, "version": 1}, blob)
    with Store(path, readonly=True) as st:
        params, data, gen = st.load_index("bm25")
    assert params == {"b": 0.75, "k1": 1.2, "version": 1} and data == blob and gen == 0


def test_units_round_trip(tmp_path):
    u = Unit("u1", role="policy", topic="TLS", claim="c", utility_acts=("a", "b"), source="s.pdf", acl=("x",),
             region="eu", effective_from="2024-01-01", effective_to="2025-01-01", extra='{"k": 1}')
    with Store(str(tmp_path / "kb.sqlite")) as st:
        with st.transaction():
            st.add_units([(u, 3)], "units.jsonl")
        assert st.unit("u1") == u and list(st.units()) == [u] and st.unit("nope") is None


def test_duplicates_merge_max_confidence_full_provenance(tmp_path):
    with Store(str(tmp_path / "kb.sqlite")) as st:
        with st.transaction():
            st.add_facts([(Fact("a", "r", "b", 0.3), "x.tdb", 1, None), (Fact("a", "r", "b", 0.8), "y.tdb", 5, "u"),
                          (Fact("a", "r", "b", 0.5), "x.tdb", 9, None)])
        assert st.fact_confidence(Triple("a", "r", "b")) == 0.8
        assert [(p["source"], p["line"], p["confidence"], p["unit_id"]) for p in st.provenance(Triple("a", "r", "b"))] \
            == [("x.tdb", 1, 0.3, None), ("x.tdb", 9, 0.5, None), ("y.tdb", 5, 0.8, "u")]
        assert st.stats()["facts"] == 1 and st.stats()["provenance"] == 3


@pytest.mark.parametrize("bad_name,bad_text", [
    ("bad.tdb", "a b c.\nbroken\n"),
    ("bad.tsv", "a\tb\tc\n" * 30000 + "x\ty\tz\t1.5\n"),     # the error comes after a first written chunk
    ("bad.jsonl", '{"id": "u9"}\n{"id": "u9"}\n'),
    ("bad.md", "# T\n```tdb\nbroken\n```\n"),
    ("bad.tsv", "a\tb\tc\n\xff\n"),
])
def test_failed_ingest_leaves_store_byte_for_byte_unchanged(tmp_path, files, bad_name, bad_text):
    path = tmp_path / "kb.sqlite"
    with Store(str(path)) as st:
        ingest(st, [files["a.tdb"], files["c.jsonl"]])
    before = path.read_bytes()
    bad = tmp_path / bad_name
    bad.write_bytes(bad_text.encode("utf-8") if "\xff" not in bad_text else bad_text.encode("latin-1"))
    with Store(str(path)) as st:
        with pytest.raises(IngestError):
            ingest(st, [files["b.tsv"], str(bad)])
    assert path.read_bytes() == before
    assert not (tmp_path / "kb.sqlite-wal").exists() or (tmp_path / "kb.sqlite-wal").stat().st_size == 0


def test_failed_first_ingest_leaves_no_file(tmp_path):
    path = tmp_path / "new.sqlite"
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\n")
    st = Store(str(path))
    with pytest.raises(IngestError, match="bad.tsv:1:1: expected 3 or 4"):
        ingest(st, [str(bad)])
    assert not path.exists() and not (tmp_path / "new.sqlite-wal").exists()
    good = tmp_path / "good.tsv"
    good.write_text("a\tb\tc\n")
    assert ingest(st, [str(good)]).facts == 1  # the store comes back on use
    st.close()
    assert path.exists()


def _fresh(tmp_path, name, paths):
    with Store(str(tmp_path / name)) as st:
        ingest(st, paths)
        return st.dump()


@pytest.mark.parametrize("gone", ["a.tdb", "b.tsv", "c.jsonl", "d.md"])
def test_retract_is_exactly_never_ingested(tmp_path, files, gone):
    # v.tdb holds the vocabulary the others were normalized with; it stays (see docs/ingest.md)
    order = ["v.tdb", "a.tdb", "b.tsv", "c.jsonl", "d.md"]
    with Store(str(tmp_path / "all.sqlite")) as st:
        for name in order:  # separate commands, as a user would run them
            ingest(st, [files[name]])
        with st.transaction():
            st.retract_source(files[gone])
        after = st.dump()
    expected = _fresh(tmp_path, "rest.sqlite", [files[n] for n in order if n != gone])
    assert after == expected
    assert gone not in json.dumps(after)


def test_retract_then_values_by_hand(tmp_path, files):
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [files["v.tdb"], files["a.tdb"], files["b.tsv"]])
        assert st.fact_confidence(Triple("nginx", "depends_on", "openssl")) == 0.9
        assert st.labels()["openssl"] == "OpenSSL"
        assert st.vocabulary().aliases == {"needs": "depends_on", "requires": "depends_on"}
        with st.transaction():
            st.retract_source(files["a.tdb"])
        assert st.fact_confidence(Triple("nginx", "depends_on", "openssl")) == 0.9
        assert st.labels()["openssl"] == "openssl"  # the remaining source's spelling
        assert st.rules() == [] and st.vocabulary().aliases == {"requires": "depends_on"}
        # b.tsv was read while part_of inverse has_part was in force; its facts are kept as stored
        assert sorted(str(f.triple) for f in st.facts()) == ["libc part_of os", "nginx depends_on openssl",
                                                             "nginx uses zlib"]


def test_reingest_replaces_the_source(tmp_path, files):
    p = tmp_path / "a.tdb"
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [files["v.tdb"], files["a.tdb"], files["b.tsv"]])
        p.write_text("x uses y.\n")
        ingest(st, [str(p)])
        got = st.dump()
    expected = _fresh(tmp_path, "fresh.sqlite", [files["v.tdb"], files["b.tsv"], str(p)])
    assert got == expected


def test_page_cache_is_small_until_the_first_write(tmp_path):
    """Reading needs SQLite's small page cache (a full scan of a large store stays small); the first
    write gives the connection the large one that keeps an ingest's index maintenance in memory."""
    from thinkingdb.store import sqlite as st
    path = str(tmp_path / "kb.sqlite")
    with Store(path) as store:   # created (its first commit moves it into place and reconnects)
        with store.transaction():
            store.add_facts([(Fact("a", "r", "b"), "x.tdb", 1, None)])
    cache = lambda store: store.conn.execute("PRAGMA cache_size").fetchone()[0]  # noqa: E731
    with Store(path) as store:
        assert cache(store) == -st.READ_CACHE_KIB
        assert store.stats()["facts"] == 1 and cache(store) == -st.READ_CACHE_KIB
        with store.transaction():
            store.add_facts([(Fact("b", "r", "c"), "x.tdb", 2, None)])
        assert cache(store) == -st.CACHE_KIB
    with Store(path) as store:   # a new connection reads with the small cache again
        assert cache(store) == -st.READ_CACHE_KIB and store.stats()["facts"] == 2
