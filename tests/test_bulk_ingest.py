"""The bulk fact path of an ingest into a store without facts (thinkingdb.store.bulk) writes the same
store as the staged merge it replaces: the two paths are compared dump for dump on generated input
(several seeds and formats, duplicates, inverses, units, a source read twice), and the graph file
written from the bulk load's arrays equals the one rebuilt from the facts."""

from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest

from thinkingdb.store import bulk
from thinkingdb.store.graphfile import graph_path, open_graph, read_facts, store_stamp, write_graph
from thinkingdb.store.ingest import ingest
from thinkingdb.store.sqlite import Store


def _files(tmp_path, seed: int) -> list[str]:
    """A TSV with duplicates and confidences, a .tdb with an inverse, JSON Lines units and N-Quads (no
    has_part in the TSV: an inverse declared after facts of its name is refused, docs/ingest.md)."""
    rng = random.Random(seed)
    names = [f"Entity {i}" for i in range(40)] + ["ex:Paris", "ex:paris", "open-ssl", "Open SSL"]
    rels = ["uses", "dependsOn", "has_part", "part_of", "ex:knows"]
    tsv = tmp_path / f"a{seed}.tsv"
    tsv.write_text("subject\trelation\tobject\tconfidence\n" + "".join(
        f"{rng.choice(names)}\t{rng.choice(rels[:2] + rels[3:])}\t{rng.choice(names)}\t{rng.randrange(1, 101) / 100}\n"
        for _ in range(rng.randrange(150, 300))), encoding="utf-8")
    tdb = tmp_path / f"b{seed}.tdb"
    tdb.write_text("relation part_of inverse has_part.\n" + "".join(
        f'"{rng.choice(names)}" {rng.choice(rels)} "{rng.choice(names)}" @0.{rng.randrange(1, 10)}.\n'
        for _ in range(rng.randrange(50, 120))), encoding="utf-8")
    units = tmp_path / f"c{seed}.jsonl"
    units.write_text("".join(json.dumps({"id": f"u{seed}-{i}", "claim": "x", "triples": [
        [rng.choice(names), rng.choice(rels), rng.choice(names), rng.randrange(1, 11) / 10] for _ in range(3)]}) + "\n"
        for i in range(20)), encoding="utf-8")
    paths = [str(tsv), str(tdb), str(units)]
    try:
        import pyoxigraph  # noqa: F401
        nq = tmp_path / f"d{seed}.nq"
        nq.write_text("".join(f"<http://ex.org/{rng.randrange(30)}> <http://ex.org/r{rng.randrange(3)}> "
                              f"<http://ex.org/{rng.randrange(30)}> <http://ex.org/g{rng.randrange(2)}> .\n"
                              for _ in range(100)), encoding="utf-8")
        paths.append(str(nq))
    except ImportError:
        pass
    return paths


def _staged_only(monkeypatch) -> None:
    """Make every FactWriter take the staged merge (the path of a store that holds facts)."""
    init = bulk.FactWriter.__init__

    def staged(self, store):
        init(self, store)
        self.bulk = False
    monkeypatch.setattr(bulk.FactWriter, "__init__", staged)


def _provenance_rows(path: str) -> list[tuple]:
    """Provenance in insertion order, facts by their triple (ids differ between the two paths)."""
    c = sqlite3.connect(path)
    try:
        return c.execute("SELECT f.subject, f.relation, f.object, p.origin, p.line, p.unit_id, p.confidence, p.detail "
                         "FROM provenance p JOIN facts f ON f.id = p.fact ORDER BY p.rowid").fetchall()
    finally:
        c.close()


@pytest.mark.parametrize("seed, one_key", [(1, True), (2, True), (3, True), (1, False)])
def test_bulk_and_staged_paths_write_the_same_store(tmp_path, monkeypatch, seed, one_key):
    paths = _files(tmp_path, seed)
    paths.append(paths[0])   # a source read twice in one ingest: the second reading replaces the first
    monkeypatch.setattr(bulk, "BULK_MIN", 10)   # the provenance indexes are dropped and built again
    if not one_key:   # the triples sorted by three columns, as when their ranks do not fit one integer
        monkeypatch.setattr(bulk, "_KEY_LIMIT", 0)
    with Store(str(tmp_path / "bulk.sqlite")) as st:
        ingest(st, paths)
        got = st.dump()
    monkeypatch.undo()
    _staged_only(monkeypatch)
    with Store(str(tmp_path / "staged.sqlite")) as st:
        ingest(st, paths)
        want = st.dump()
    assert got["facts"] and got["provenance"]
    assert got == want
    assert _provenance_rows(str(tmp_path / "bulk.sqlite")) == _provenance_rows(str(tmp_path / "staged.sqlite"))
    c = sqlite3.connect(str(tmp_path / "bulk.sqlite"))
    indexes = sorted(r[0] for r in c.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'provenance' "
                                               "AND type = 'index'"))
    c.close()
    assert indexes == sorted(sql for _, sql in bulk.PROVENANCE_INDEXES)


def test_duplicates_keep_the_highest_confidence_and_every_provenance_line(tmp_path):
    tsv = tmp_path / "d.tsv"
    tsv.write_text("a\tr\tb\t0.25\nc\tr\td\nA\tr\tB\t0.75\na\tr\tb\t0.5\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [str(tsv)])
        assert sorted(st.fact_rows()) == [("a", "r", "b", 0.75), ("c", "r", "d", 1.0)]
        from thinkingdb.model import Triple
        assert [(p["line"], p["confidence"]) for p in st.provenance(Triple("a", "r", "b"))] == \
            [(1, 0.25), (3, 0.75), (4, 0.5)]


def test_graph_file_from_the_bulk_arrays_equals_the_rebuilt_one(tmp_path):
    paths = _files(tmp_path, 5)
    db = str(tmp_path / "kb.sqlite")
    with Store(db) as st:
        ingest(st, paths)
    st = Store(db, readonly=True)
    try:
        stamp = store_stamp(st)
        got = open_graph(graph_path(db), stamp)
        assert got is not None and got.n_facts == len(st.fact_rows())
        _, symbols, relations, s, r, o, c = read_facts(st)
        rebuilt = str(tmp_path / "rebuilt.graph")
        write_graph(rebuilt, stamp, symbols, relations, s, r, o, c)
        want = open_graph(rebuilt, stamp)
        assert got.symbols() == want.symbols() and got.relations == want.relations
        assert sorted(got.arrays) == sorted(want.arrays)
        for name in want.arrays:
            assert np.array_equal(got.arrays[name], want.arrays[name]), name
    finally:
        st.close()


def test_an_ingest_into_a_store_with_facts_takes_the_staged_path(tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("x\tr\ty\t0.5\n", encoding="utf-8")
    b.write_text("x\tr\ty\t0.25\ny\tr\tz\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [str(a)])
        with st.transaction():
            assert bulk.FactWriter(st).bulk is False
        ingest(st, [str(b)])
        assert sorted(st.fact_rows()) == [("x", "r", "y", 0.5), ("y", "r", "z", 1.0)]
        from thinkingdb.store.graphdelta import open_current
        assert open_current(st.path, store_stamp(st)) is not None   # the graph file (and its delta) current


def _same_blank_nodes(monkeypatch) -> None:
    """Blank nodes are local to one reading (a random prefix): the same prefix for every reading here."""
    from types import SimpleNamespace
    from thinkingdb.store import rdf
    monkeypatch.setattr(rdf, "secrets", SimpleNamespace(token_hex=lambda n: "0" * (2 * n)))


def _ntriples(path, lines: int, seed: int) -> None:
    """Generated N-Triples: plain IRI lines (with repeats), literals, language tags, blank nodes, labels,
    comments, a CRLF line, a tab-separated line, an escaped IRI, a reified statement with a confidence
    and an inverse declared at the end, so every way of reading a line meets the bulk path."""
    rng = random.Random(seed)
    ex, rdf = "http://example.org/", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    out = []
    for i in range(lines):
        s, o, p, x = rng.randrange(300), rng.randrange(300), rng.randrange(6), rng.random()
        subj = f"_:b{s % 7}" if x < 0.02 else f"<{ex}e{s}>"
        obj = f'"v {o}"' if x < 0.06 else f'"w {o}"@en' if x < 0.08 else f"<{ex}e{o}>"
        line = f"{subj} <{ex}r{p}> {obj} ."
        if x > 0.995:
            line = f"<{ex}e{s}>\t<{ex}r{p}>  <{ex}e{o}> . # tabs"
        elif x > 0.99:
            line = f'<{ex}e{s}> <http://www.w3.org/2000/01/rdf-schema#label> "Entity {s}" .'
        elif x > 0.985:
            line = "# a comment"
        elif x > 0.98:
            line = f"<{ex}e\\u0041{s}> <{ex}r{p}> <{ex}e{o}> .\r"
        out.append(line)
    out += [f"<{ex}e1> <{ex}r1> <{ex}e2> ."] * 2 + [f"_:st <{rdf}subject> <{ex}e1> .", f"_:st <{rdf}predicate> <{ex}r1> .",
            f"_:st <{rdf}object> <{ex}e2> .", f'_:st <urn:thinkingdb:confidence> "0.25" .',
            f"<{ex}inv> <http://www.w3.org/2002/07/owl#inverseOf> <{ex}r5> ."]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.mark.parametrize("lines, seed, memo", [(400, 1, None), (25_000, 2, None), (25_000, 3, 40)])
def test_ntriples_bulk_load_writes_the_store_of_the_row_by_row_path(tmp_path, monkeypatch, lines, seed, memo):
    """25,000 lines: several 1 MiB blocks and batches; ``memo``: the IRI memo of the reader emptied
    every 40 IRIs (thinkingdb.store.ntlines.MEMO)."""
    pytest.importorskip("pyoxigraph")
    nt = tmp_path / "g.nt"
    _ntriples(nt, lines, seed)
    _same_blank_nodes(monkeypatch)
    if memo is not None:
        from thinkingdb.store import ntlines
        monkeypatch.setattr(ntlines, "MEMO", memo)
    with Store(str(tmp_path / "bulk.sqlite")) as st:
        report = ingest(st, [str(nt)])
        got = st.dump()
    from thinkingdb.store import ingest as ingest_module
    monkeypatch.setattr(ingest_module, "read_rdf", lambda *a, **k: None)   # the reader is not asked for columns
    _staged_only(monkeypatch)
    with Store(str(tmp_path / "staged.sqlite")) as st:
        assert ingest(st, [str(nt)]).facts == report.facts
        want = st.dump()
    ex = "http://example.org/"
    assert report.facts > lines * 0.9 and got["symbols"] and len(got["facts"]) < report.facts   # labels, repeats
    assert any(p[:3] == (f"{ex}e1", f"{ex}r1", f"{ex}e2") and p[6] == 0.25 for p in got["provenance"])
    assert any(f[1] == f"{ex}inv" for f in got["facts"]) and not any(f[1] == f"{ex}r5" for f in got["facts"])
    assert got == want
    assert _provenance_rows(str(tmp_path / "bulk.sqlite")) == _provenance_rows(str(tmp_path / "staged.sqlite"))
    st = Store(str(tmp_path / "bulk.sqlite"), readonly=True)
    try:   # the graph file made from the load's arrays (in a thread) is the one rebuilt from the facts
        stamp = store_stamp(st)
        graph = open_graph(graph_path(str(tmp_path / "bulk.sqlite")), stamp)
        _, symbols, relations, s, r, o, c = read_facts(st)
        rebuilt = str(tmp_path / "rebuilt.graph")
        write_graph(rebuilt, stamp, symbols, relations, s, r, o, c)
        want_graph = open_graph(rebuilt, stamp)
        assert graph is not None and sorted(graph.arrays) == sorted(want_graph.arrays)
        for name in want_graph.arrays:
            assert np.array_equal(graph.arrays[name], want_graph.arrays[name]), name
    finally:
        st.close()


def test_columns_and_rows_of_the_rdf_reader_are_the_same_rows_in_the_same_order(tmp_path, monkeypatch):
    pytest.importorskip("pyoxigraph")
    from thinkingdb.normalize import Vocabulary
    from thinkingdb.store.rdf import read_rdf
    from thinkingdb.store.records import Interner
    nt = tmp_path / "g.nt"
    _ntriples(nt, 3000, 4)
    _same_blank_nodes(monkeypatch)
    rows = [r for b in read_rdf(str(nt), "g.nt", Vocabulary()) for r in b.rows]
    batches = list(read_rdf(str(nt), "g.nt", Vocabulary(), ids=Interner()))
    assert any(b.columns for b in batches) and all(not b.columns for b in read_rdf(str(nt), "g.nt", Vocabulary()))
    assert [r for b in batches for r in b.all_rows()] == rows
