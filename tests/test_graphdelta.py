"""Writes update the graph file through its delta (docs/storage.md, "Writes"): the graph read from
base + delta equals an independent oracle (a dict of sources) and a full rebuild after every step of
generated ingest/retract sequences; stale, foreign and torn deltas are rebuilt; a writer killed with
SIGKILL at any moment leaves a state that is the old one, the new one, or detected as stale."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.engine.graph import FactGraph
from thinkingdb.store import deltacompose, graphdelta as gd
from thinkingdb.store import graphfile as gf

SYMS = ["a", "b", "c", "d", "e", "f"]
RELS = ["p", "q", "r"]
CONFS = [0.25, 0.5, 1.0]


def write_source(path, triples) -> None:
    path.write_text("".join(f"{s} {r} {o} @{c}.\n" for s, r, o, c in triples) or "a p a @0.5.\n", encoding="utf-8")


def retract(kb: KnowledgeBase, source: str) -> None:
    with kb.store.transaction():
        kb.store.retract_source(source)


def oracle(sources: dict[str, list]) -> dict[tuple, float]:
    """The store's facts by hand: every triple of every live source, at its highest confidence."""
    out: dict[tuple, float] = {}
    for triples in sources.values():
        for s, r, o, c in triples or [("a", "p", "a", 0.5)]:
            out[(s, r, o)] = max(out.get((s, r, o), 0.0), c)
    return out


def graph_view(g: FactGraph) -> dict:
    """Everything a reader can see of a graph: symbols, relations, counts and every row both ways."""
    syms = list(g._syms)
    rows = {}
    for rid, rel in enumerate(g._rels):
        for d, ix in (("out", g._out[rid]), ("in", g._in[rid])):
            got = {g._syms[k]: {g._syms[v]: c for v, c in ix.get(k, {}).items()} for k in range(len(syms))
                   if ix.get(k)}
            rows[(rel, d)] = (got, len(ix), bool(ix), [g._syms[k] for k in (ix.iter_keys() if hasattr(ix, "iter_keys") else ix)])
    return {"symbols": syms, "relations": g.relations(), "len": len(g),
            "sizes": {r: g.relation_size(g.relation_id(r)) for r in g.relations()}, "rows": rows,
            "lookup": {k: g.symbol_id(k) for k in SYMS + ["zz", "a0"]},
            "ranks": {k: g.key_rank(k) for k in SYMS + ["zz", "a0", "0"]}}


def facts_of(g: FactGraph) -> dict[tuple, float]:
    return {(f.subject, f.relation, f.object): f.confidence for f in g.facts()}


def check(kb: KnowledgeBase, tmp_path, sources) -> None:
    want = oracle(sources)
    g = kb.graph
    assert g.is_mapped
    assert facts_of(g) == want
    assert list(g._syms) == sorted({x for s, _, o in want for x in (s, o)})
    assert g.relations() == sorted({r for _, r, _ in want})
    for (s, r, o), c in want.items():
        assert g.objects(s, r)[o] == c and g.subjects(r, o)[s] == c
    # the same store read by a full rebuild (in memory, from SQLite) shows exactly the same graph
    mem = KnowledgeBase(str(tmp_path / "kb.sqlite"), graph_file=False)
    full = mem.graph
    assert graph_view(g) == graph_view(FactGraph.mapped(*_full_arrays(kb)))
    assert facts_of(full) == want
    for rid, rel in enumerate(g._rels):
        for d, ix in (("out", g._out[rid]), ("in", g._in[rid])):
            lead, other, conf = ix.edges() if hasattr(ix, "edges") else _plain_edges(ix)
            got = sorted(zip(lead.tolist(), other.tolist(), conf.tolist()))
            assert got == sorted(_plain_edges_list(ix)), (rel, d)
    mem.close()


def _plain_edges(ix):
    rows = [(k, v, c) for k, row in ix.items() for v, c in row.items()]
    return tuple(np.array([r[i] for r in rows]) for i in range(3))


def _plain_edges_list(ix):
    return [(k, v, c) for k, row in ix.items() for v, c in row.items()]


def _full_arrays(kb):
    """A graph file rebuilt whole from the store, beside it (not replacing it)."""
    path = str(kb.store.path) + ".check"
    got = gd.build_graph(kb.store, path)
    return got.arrays, got.relations, got.n_symbols, got.n_facts, path


triple = st.tuples(st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS), st.sampled_from(CONFS))
step = st.one_of(st.tuples(st.just("ingest"), st.integers(0, 3), st.lists(triple, max_size=6)),
                 st.tuples(st.just("retract"), st.integers(0, 3), st.just([])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=8), limit=st.sampled_from([1, 3, 4096]),
       full_after=st.sampled_from([0, 2048]))
def test_incremental_equals_full_rebuild(tmp_path_factory, monkeypatch, steps, limit, full_after):
    from thinkingdb.engine import mapped
    tmp_path = tmp_path_factory.mktemp("delta")
    monkeypatch.setattr(gd, "merge_limit", lambda n: limit)   # 1 and 3: merges happen all along
    monkeypatch.setattr(mapped, "FULL_AFTER", full_after)     # 0: a relation is merged whole at its first row
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "seed.tdb", [("a", "p", "b", 1.0), ("b", "q", "c", 0.5)])
    kb.ingest([str(tmp_path / "seed.tdb")])
    sources = {str(tmp_path / "seed.tdb"): [("a", "p", "b", 1.0), ("b", "q", "c", 0.5)]}
    for op, i, triples in steps:
        path = tmp_path / f"s{i}.tdb"
        if op == "ingest":
            write_source(path, triples)
            kb.ingest([str(path)])     # a source ingested again replaces its earlier version
            sources[str(path)] = list(triples)
        elif str(path) in sources:
            retract(kb, str(path))
            del sources[str(path)]
        check(kb, tmp_path, sources)
    kb.close()


def test_a_small_write_appends_to_the_delta_and_the_base_stays(tmp_path):
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0), ("b", "p", "c", 0.5), ("c", "q", "d", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    base_stamp = gf.open_graph(str(tmp_path / "kb.sqlite.graph")).stamp
    write_source(tmp_path / "b.tdb", [("e", "r", "a", 0.25), ("b", "p", "c", 1.0)])
    kb.ingest([str(tmp_path / "b.tdb")])
    retract(kb, str(tmp_path / "a.tdb"))
    base = gf.open_graph(str(tmp_path / "kb.sqlite.graph"))
    assert base.stamp == base_stamp                           # not rebuilt
    cur = gd.open_current(str(tmp_path / "kb.sqlite"), gf.store_stamp(kb.store))
    assert cur is not None and cur.overlay is not None
    # by hand: a.tdb gone; b.tdb's two facts stay; symbols a, b, c, e (d only occurred in a.tdb)
    assert facts_of(kb.graph) == {("e", "r", "a"): 0.25, ("b", "p", "c"): 1.0}
    assert list(kb.graph._syms) == ["a", "b", "c", "e"] and kb.graph.relations() == ["p", "r"]
    assert [a.bindings["x"] for a in kb.query("? ?x r a.").answers] == ["e"]
    kb.close()


def test_stale_delta_after_a_write_it_did_not_follow_is_rebuilt(tmp_path):
    """Another process writes with the graph file turned off: the delta no longer leads to the store's
    state, so it is not trusted; the next reader rebuilds and sees the write."""
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    write_source(tmp_path / "b.tdb", [("b", "p", "c", 1.0)])
    kb.ingest([str(tmp_path / "b.tdb")])
    assert os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    write_source(tmp_path / "c.tdb", [("c", "p", "d", 0.5)])
    code = f"""
        from thinkingdb.api import KnowledgeBase
        kb = KnowledgeBase({str(tmp_path / 'kb.sqlite')!r}, graph_file=False)
        kb.ingest([{str(tmp_path / 'c.tdb')!r}])
        kb.close()
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True)
    stamp = gf.store_stamp(kb.store)
    assert gd.open_current(str(tmp_path / "kb.sqlite"), stamp) is None       # detected stale
    assert facts_of(kb.graph) == {("a", "p", "b"): 1.0, ("b", "p", "c"): 1.0, ("c", "p", "d"): 0.5}
    assert gf.open_graph(str(tmp_path / "kb.sqlite.graph"), stamp) is not None   # rebuilt whole
    assert not os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    kb.close()


def test_foreign_and_torn_deltas_are_not_trusted(tmp_path):
    a = KnowledgeBase(str(tmp_path / "a.sqlite"))
    b = KnowledgeBase(str(tmp_path / "b.sqlite"))
    for kb, name in ((a, "a"), (b, "b")):
        write_source(tmp_path / f"{name}1.tdb", [("a", "p", "b", 1.0)])
        kb.ingest([str(tmp_path / f"{name}1.tdb")])
        write_source(tmp_path / f"{name}2.tdb", [("x", "p", name, 1.0)])
        kb.ingest([str(tmp_path / f"{name}2.tdb")])
    # b's delta put in place of a's: its stamps name another store state
    os.replace(tmp_path / "b.sqlite.graph.delta", tmp_path / "a.sqlite.graph.delta")
    assert gd.open_current(str(tmp_path / "a.sqlite"), gf.store_stamp(a.store)) is None
    assert facts_of(a.graph) == {("a", "p", "b"): 1.0, ("x", "p", "a"): 1.0}
    # a torn delta (cut anywhere) is refused
    write_source(tmp_path / "a3.tdb", [("y", "q", "z", 0.5)])
    a.ingest([str(tmp_path / "a3.tdb")])
    dpath = tmp_path / "a.sqlite.graph.delta"
    data = dpath.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 8):
        dpath.write_bytes(data[:cut])
        assert gd.open_current(str(tmp_path / "a.sqlite"), gf.store_stamp(a.store)) is None
    dpath.write_bytes(data[:40] + bytes([data[40] ^ 0xFF]) + data[41:])    # a flipped header byte
    assert gd.open_current(str(tmp_path / "a.sqlite"), gf.store_stamp(a.store)) is None
    assert facts_of(a.graph) == {("a", "p", "b"): 1.0, ("x", "p", "a"): 1.0, ("y", "q", "z"): 0.5}
    a.close()
    b.close()


def test_a_long_lived_reader_sees_another_process_write_through_the_delta(tmp_path):
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    assert facts_of(kb.graph) == {("a", "p", "b"): 1.0}
    write_source(tmp_path / "b.tdb", [("b", "p", "c", 0.5)])
    code = f"""
        from thinkingdb.api import KnowledgeBase
        kb = KnowledgeBase({str(tmp_path / 'kb.sqlite')!r})
        kb.ingest([{str(tmp_path / 'b.tdb')!r}])
        kb.close()
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True)
    assert os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    assert facts_of(kb.graph) == {("a", "p", "b"): 1.0, ("b", "p", "c"): 0.5}
    assert kb.graph.source == str(tmp_path / "kb.sqlite.graph")
    kb.close()


def test_a_transaction_too_large_for_a_delta_rebuilds_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(gd, "MAX_DELTA", 3)
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    write_source(tmp_path / "b.tdb", [(s, "p", o, 1.0) for s in "cdef" for o in "ab"])
    kb.ingest([str(tmp_path / "b.tdb")])
    stamp = gf.store_stamp(kb.store)
    assert gf.open_graph(str(tmp_path / "kb.sqlite.graph"), stamp) is not None
    assert not os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    assert len(kb.graph) == 9
    kb.close()


WRITER = """
import os, sys
from thinkingdb.api import KnowledgeBase
from thinkingdb.store import graphdelta
d, mode = sys.argv[1], sys.argv[2]
kb = KnowledgeBase(os.path.join(d, "kb.sqlite"))
if mode == "between":          # die after the commit, before the delta is written
    graphdelta.advance = lambda *a: os.kill(os.getpid(), 9)
if mode == "mid-delta":        # die halfway through writing the delta's temporary file
    real = os.replace
    def torn(src, dst):
        with open(src, "r+b") as fh:
            fh.truncate(os.path.getsize(src) // 2)
        os.kill(os.getpid(), 9)
    graphdelta.os.replace = torn
i = 0
while True:
    path = os.path.join(d, f"w{i % 5}.tdb")
    with open(path, "w") as fh:
        fh.write("".join(f"n{(i * 7 + k) % 13} p n{(i * 3 + k) % 11} @0.5.\\n" for k in range(i % 4 + 1)))
    kb.ingest([path])
    print(i, flush=True)
    i += 1
"""


def _store_facts(path) -> dict:
    import sqlite3
    con = sqlite3.connect(path)
    got = {(s, r, o): c for s, r, o, c in con.execute("SELECT subject, relation, object, confidence FROM facts")}
    con.close()
    return got


@pytest.mark.parametrize("mode", ["between", "mid-delta", "random"])
def test_kill_9_leaves_old_new_or_detected_stale(tmp_path, mode):
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "seed.tdb", [("n0", "p", "n1", 1.0)])
    kb.ingest([str(tmp_path / "seed.tdb")])
    kb.close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rounds = 4 if mode == "random" else 1
    rng = random.Random(7)
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), "normal" if mode == "random" else mode],
                                stdout=subprocess.PIPE, text=True)
        if mode == "random":
            proc.stdout.readline()                      # it is writing
            time.sleep(rng.uniform(0.0, 0.4))
            proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        truth = _store_facts(str(tmp_path / "kb.sqlite"))
        reader = KnowledgeBase(str(tmp_path / "kb.sqlite"))
        stamp = gf.store_stamp(reader.store)
        on_disk = gd.open_current(str(tmp_path / "kb.sqlite"), stamp)
        if mode != "random":
            assert on_disk is None                      # the committed write is not in the file: stale
        assert facts_of(reader.graph) == truth          # the reader sees exactly the store
        assert gd.open_current(str(tmp_path / "kb.sqlite"), stamp) is not None
        if mode != "random":    # the dead writer's torn temporary file went with the rebuild
            assert not [n for n in os.listdir(tmp_path) if ".tmp." in n]
        reader.close()


def test_labels_of_looks_keys_up_without_scanning_every_symbol(tmp_path):
    """Store side of a cold question: the labels of its answers are primary-key lookups (the planner
    scanned all 200k symbol rows of the 1M store, 30 ms, before sources was kept as the outer loop)."""
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [(f"n{i}", "p", f"n{i + 1}", 1.0) for i in range(300)])
    kb.ingest([str(tmp_path / "a.tdb")])
    seen = []
    kb.store.conn.set_trace_callback(seen.append)
    assert set(kb.store.labels_of(["n1", "n2", "zz"])) <= {"n1", "n2"}
    kb.store.conn.set_trace_callback(None)
    sql = next(s for s in seen if "FROM sources" in s)
    plan = " | ".join(r[3] for r in kb.store.conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "SEARCH s USING PRIMARY KEY" in plan and "SCAN s" not in plan, plan
    kb.close()


def test_a_retract_too_large_for_a_delta_rebuilds_whole(tmp_path, monkeypatch):
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    write_source(tmp_path / "b.tdb", [(s, "p", o, 1.0) for s in "cdef" for o in "ab"])
    kb.ingest([str(tmp_path / "b.tdb")])
    assert os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    monkeypatch.setattr(gd, "MAX_DELTA", 3)
    retract(kb, str(tmp_path / "b.tdb"))          # 8 facts: no notes kept, rebuilt whole
    stamp = gf.store_stamp(kb.store)
    assert gf.open_graph(str(tmp_path / "kb.sqlite.graph"), stamp) is not None
    assert not os.path.exists(tmp_path / "kb.sqlite.graph.delta")
    assert facts_of(kb.graph) == {("a", "p", "b"): 1.0}
    kb.close()


def test_a_row_lookup_reads_the_row_not_a_copy_of_the_keys(tmp_path):
    """A Python int searched in the file's int32 keys made numpy copy every key to int64 (16 MB and
    ~10 ms per lookup at 10M facts); a lookup now allocates about what the row holds."""
    import tracemalloc
    n = 300_000
    keys = [f"k{i:06d}" for i in range(n)]
    s = np.arange(n, dtype=np.int64)
    o = (s + 1) % n
    path = str(tmp_path / "g.graph")
    gf.write_graph(path, gf.Stamp(1, "t", n), keys, ["r"], s, np.zeros(n, np.int64), o, np.ones(n))
    ga = gf.open_graph(path)
    g = FactGraph.mapped(ga.arrays, ga.relations, ga.n_symbols, ga.n_facts, path)
    tracemalloc.start()
    got = g.objects("k123456", "r"), g.subjects("r", "k000000")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got == ({"k123457": 1.0}, {f"k{n - 1:06d}": 1.0})
    assert peak < 200_000, peak          # the keys alone are 1.2 MB as int32, 2.4 MB as int64


def _graph_of(path, facts: dict[tuple, float]) -> FactGraph:
    """A graph file written straight from ``facts`` (the expected graph, built without any delta)."""
    syms = sorted({x for s, _, o in facts for x in (s, o)})
    rels = sorted({r for _, r, _ in facts})
    rows = sorted(facts.items())
    col = lambda f: np.array([f(k) for k, _ in rows], dtype=np.int64)   # noqa: E731
    gf.write_graph(str(path), gf.Stamp(1, "t", 1), syms, rels, col(lambda k: syms.index(k[0])),
                   col(lambda k: rels.index(k[1])), col(lambda k: syms.index(k[2])),
                   np.array([c for _, c in rows], dtype=np.float64))
    got = gf.open_graph(str(path))
    return FactGraph.mapped(got.arrays, got.relations, got.n_symbols, got.n_facts, str(path))


edit = st.tuples(st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS),
                 st.sampled_from(CONFS + [None]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(triple, min_size=1, max_size=12), second=st.lists(triple, max_size=6),
       edits=st.lists(edit, max_size=12), bulk=st.sampled_from([0, 4096]))
def test_a_restricted_graph_is_the_file_with_the_changes_laid_over(tmp_path_factory, monkeypatch, first, second,
                                                                  edits, bulk):
    """What a caller who may not see some facts reasons over (``graphdelta.restricted``): the store's
    graph file and delta with the caller's differences on top, equal to a graph file written from the
    expected facts — with the symbol and triple lookups done one by one and as whole-array searches."""
    tmp_path = tmp_path_factory.mktemp("restricted")
    monkeypatch.setattr(deltacompose, "BULK_KEYS", bulk)
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    sources = {}
    for i, triples in enumerate([first, second] if second else [first]):   # a second write: base + delta
        write_source(tmp_path / f"s{i}.tdb", triples)
        kb.ingest([str(tmp_path / f"s{i}.tdb")])
        sources[i] = triples
    want = oracle(sources)
    changes = []
    for s, r, o, c in edits:
        changes.append((s, r, o, c))
        if c is None:
            want.pop((s, r, o), None)
        else:
            want[(s, r, o)] = c
    g = gd.restricted(kb.graph, changes)
    assert g is not None and g.is_mapped
    assert facts_of(kb.graph) == oracle(sources)          # the store's own graph is left as it was
    if want:
        assert graph_view(g) == graph_view(_graph_of(tmp_path / "want.graph", want))
    else:
        assert len(g) == 0 and g.relations() == []
    assert gd.restricted(FactGraph([]), changes) is None  # an in-memory graph is not laid over a file
    kb.close()


# -- temporary files of dead writers (graph, delta, view files, access table) ---------------------
def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


def test_remove_abandoned_takes_every_dead_writers_temporary_and_nothing_else(tmp_path):
    import fcntl
    from thinkingdb.store.viewfile import access_path, view_path
    store = str(tmp_path / "kb.sqlite")
    dead, live = _dead_pid(), os.getpid()
    # the files a store's writers write, named by hand (and each checked against its writer's naming)
    targets = ["kb.sqlite.graph", "kb.sqlite.graph.delta", *(f"kb.sqlite.graph.view{i}" for i in range(8)),
               "kb.sqlite.access"]
    assert {os.path.basename(view_path(store, f"{i:024x}")) for i in range(8)} | \
        {os.path.basename(p) for p in (gf.graph_path(store), gd.delta_path(store), access_path(store))} == set(targets)
    abandoned = [f"{t}.tmp.{dead}.0badc0de" for t in targets] + [f"kb.sqlite.access.tmp.{dead}.ffffffff"]
    kept = [f"kb.sqlite.access.tmp.{live}.0badc0de", f"kb.sqlite.graph.view3.tmp.{live}.12345678",
            f"kb.sqlite.graph.tmp.{live}.0badc0de",
            "kb.sqlite", "kb.sqlite.access", "kb.sqlite.graph", "kb.sqlite.graph.view3", "kb.sqlite.graph.lock",
            f"kb.sqlite.access.tmp.{dead}.0badc0d", f"kb.sqlite.access.tmp.{dead}.0BADC0DE",
            f"kb.sqlite.access.tmp.{dead}.0badc0de.x", f"kb.sqlite.access.tmp.x{dead}.0badc0de",
            f"kb.sqlite.accessory.tmp.{dead}.0badc0de", f"kb.sqlite.graph.view8.tmp.{dead}.0badc0de",
            f"kb.sqlite.graph.deltas.tmp.{dead}.0badc0de", f"other.sqlite.access.tmp.{dead}.0badc0de",
            f"kb.sqlite-wal.tmp.{dead}.0badc0de", f"x.kb.sqlite.access.tmp.{dead}.0badc0de"]
    locked = f"kb.sqlite.graph.view5.tmp.{dead}.aaaaaaaa"   # its pid looks gone, its writer holds it locked
    for name in abandoned + kept + [locked]:
        (tmp_path / name).write_bytes(name.encode())
    fd = os.open(tmp_path / locked, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        gone = gd.remove_abandoned(store)
    finally:
        os.close(fd)
    assert sorted(os.path.basename(p) for p in gone) == sorted(abandoned)
    assert sorted(os.listdir(tmp_path)) == sorted(kept + [locked])
    assert all((tmp_path / n).read_bytes() == n.encode() for n in kept)
    assert [os.path.basename(p) for p in gd.remove_abandoned(store)] == [locked]   # unlocked now


KILLED_WRITER = """
import os, sys
import numpy as np
from thinkingdb.store import graphfile
from thinkingdb.store.viewfile import ACCESS_MAGIC, VIEW_MAGIC, access_path, view_path
def die(*a):
    os._exit(9)                       # dies after writing its temporary file, before the rename
os.replace = die
store = sys.argv[1]
path, magic = (access_path(store), ACCESS_MAGIC) if sys.argv[2] == "access" else (view_path(store, "5"), VIEW_MAGIC)
graphfile.write_container(path, magic, {"format": 1}, {"a": np.arange(10)})
"""


@pytest.mark.parametrize("which", ["access", "view"])
def test_a_killed_access_or_view_writer_leaves_a_temporary_the_cleanup_removes(tmp_path, which):
    script = tmp_path / "w.py"
    script.write_text(KILLED_WRITER)
    store = str(tmp_path / "kb.sqlite")
    assert subprocess.run([sys.executable, str(script), store, which]).returncode == 9
    left = [n for n in os.listdir(tmp_path) if ".tmp." in n]
    assert len(left) == 1 and left[0].startswith("kb.sqlite.access.tmp." if which == "access" else "kb.sqlite.graph.view5.tmp.")
    assert [os.path.basename(p) for p in gd.remove_abandoned(store)] == left
    assert not [n for n in os.listdir(tmp_path) if ".tmp." in n]


def test_a_rebuild_and_an_access_rewrite_remove_dead_writers_temporaries(tmp_path):
    from thinkingdb.store.viewfile import load_access
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    write_source(tmp_path / "a.tdb", [("a", "p", "b", 1.0)])
    kb.ingest([str(tmp_path / "a.tdb")])
    store = kb.store.path
    dead = _dead_pid()
    names = [f"kb.sqlite.access.tmp.{dead}.0badc0de", f"kb.sqlite.graph.view2.tmp.{dead}.0badc0de"]
    live = f"kb.sqlite.access.tmp.{os.getpid()}.0badc0de"
    for n in names + [live]:
        (tmp_path / n).write_bytes(b"x")
    os.remove(gf.graph_path(store))                       # the next open rebuilds the graph file
    assert gd.load_or_build(kb.store) is not None
    assert sorted(n for n in os.listdir(tmp_path) if ".tmp." in n) == [live]
    for n in names:
        (tmp_path / n).write_bytes(b"x")
    stamp = gf.store_stamp(kb.store)
    table = load_access(store, stamp, lambda: [("u1", (), "", "", "")])   # no access file: written
    assert len(table) == 1 and os.path.exists(tmp_path / "kb.sqlite.access")
    assert sorted(n for n in os.listdir(tmp_path) if ".tmp." in n) == [live]
    kb.close()


def test_without_flock_a_container_is_still_written_and_dead_temporaries_still_removed(tmp_path, monkeypatch):
    import errno
    import fcntl
    calls = []

    def no_flock(fd, op):
        calls.append(op)
        raise OSError(errno.ENOLCK, "no locks")
    monkeypatch.setattr(fcntl, "flock", no_flock)
    path = str(tmp_path / "kb.sqlite.access")
    gf.write_container(path, b"TDBACCES", {"format": 1}, {"a": np.arange(3)})
    assert calls == [fcntl.LOCK_EX] and list(gf.map_container(path, b"TDBACCES")[1]["a"]) == [0, 1, 2]
    dead = _dead_pid()
    (tmp_path / f"kb.sqlite.access.tmp.{dead}.0badc0de").write_bytes(b"x")
    (tmp_path / f"kb.sqlite.access.tmp.{os.getpid()}.0badc0de").write_bytes(b"x")
    assert [os.path.basename(p) for p in gd.remove_abandoned(str(tmp_path / "kb.sqlite"))] == \
        [f"kb.sqlite.access.tmp.{dead}.0badc0de"]
    assert calls == [fcntl.LOCK_EX, fcntl.LOCK_EX | fcntl.LOCK_NB]


def test_every_file_beside_a_store_has_its_dead_writers_temporaries_removed(tmp_path):
    # each file a reader or writer writes beside kb.sqlite (graph, delta, views, topics, matcher, access)
    # leaves TARGET.tmp.PID.XXXXXXXX when its writer dies; every one of them is removed, a live one is not
    dead = _dead_pid()
    names = ["kb.sqlite.graph", "kb.sqlite.graph.delta", "kb.sqlite.graph.view0", "kb.sqlite.graph.view7",
             "kb.sqlite.topics", "kb.sqlite.matcher", "kb.sqlite.access"]
    for name in names:
        (tmp_path / f"{name}.tmp.{dead}.0badc0de").write_bytes(b"x")
    (tmp_path / f"kb.sqlite.matcher.tmp.{os.getpid()}.0badc0de").write_bytes(b"x")
    gone = sorted(os.path.basename(p) for p in gd.remove_abandoned(str(tmp_path / "kb.sqlite")))
    assert gone == sorted(f"{name}.tmp.{dead}.0badc0de" for name in names)
    assert sorted(os.listdir(tmp_path)) == [f"kb.sqlite.matcher.tmp.{os.getpid()}.0badc0de"]
