"""The copy-on-write changes an incremental refresh is made of, each against the same thing built from
scratch (the oracle), and each leaving the original as it was (old snapshots keep serving it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lexical import BM25Index
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Fact, Triple
from thinkingdb.retrieval.expansion import SymbolMatcher

SYMS = [f"s{i}" for i in range(7)]
triples = st.builds(Triple, st.sampled_from(SYMS), st.sampled_from(["r", "q"]), st.sampled_from(SYMS))
states = st.dictionaries(triples, st.sampled_from([0.5, 1.0]), max_size=14)
changes = st.lists(st.dictionaries(triples, st.sampled_from([None, None, 0.3, 0.9]), max_size=8), max_size=3)


def _graph(state: dict) -> FactGraph:
    return FactGraph(Fact(t.subject, t.relation, t.object, c) for t, c in state.items())


def _shape(g: FactGraph) -> tuple:
    rows = sorted((f.subject, f.relation, f.object, f.confidence) for f in g.facts())
    return rows, len(g), g.symbol_count, g.relations(), sorted(g._sym)


@given(states, changes)
def test_a_patched_graph_is_the_graph_of_the_patched_facts(state, steps):
    g = _graph(state)
    for ch in steps:
        before = _shape(g)
        h = g.patched(ch)
        assert _shape(g) == before                      # the original is untouched
        for t, c in ch.items():
            if c is None:
                state.pop(t, None)
            else:
                state[t] = c
        fresh = _graph(state)
        assert _shape(h) == _shape(fresh)
        assert all(h._sym[k] == i for i, k in enumerate(h._syms))     # ids stay 0..n-1
        for r in range(len(h._rels)):                  # both directions agree, no empty rows
            for s, row in h._out[r].items():
                assert row and all(h._in[r][o][s] == c for o, c in row.items())
            for o, col in h._in[r].items():
                assert col and all(h._out[r][s][o] == c for s, c in col.items())
        for t in ch:
            assert h.confidence(t) == fresh.confidence(t)
        assert sorted(h.objects("s0", "r").items()) == sorted(fresh.objects("s0", "r").items())
        g = h


WORDS = "red blue fox wine cat dog sea sky tree".split()
docs = st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join), min_size=1)
edits = st.lists(st.tuples(st.sampled_from([f"d{i}" for i in range(14)]),
                           st.none() | st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)),
                 max_size=8)


@given(docs, st.lists(edits, max_size=3), st.booleans())
def test_a_forked_bm25_index_changed_scores_as_one_rebuilt(start, rounds, compact_often):
    idx = BM25Index()
    if compact_often:
        idx._DELTA_MIN = idx._DEAD_MIN = 2          # exercise compaction inside the forks
    idx.rebuild(start.items())
    queries = WORDS + ["red fox", "sea sky tree"]
    original = {q: idx.search(q, k=20) for q in queries}
    state, cur = dict(start), idx
    for edit in rounds:
        new = cur.fork()
        for doc, text in edit:
            if text is None:
                if doc in state:
                    new.remove(doc)
                    del state[doc]
            else:
                new.add(doc, text)
                state[doc] = text
        fresh = BM25Index()
        fresh.rebuild(state.items())
        for q in queries:
            assert [(h.doc_id, round(h.score, 9)) for h in new.search(q, k=20)] == \
                   [(h.doc_id, round(h.score, 9)) for h in fresh.search(q, k=20)], q
        cur = new
    assert {q: idx.search(q, k=20) for q in queries} == original


def test_a_forked_hdc_index_leaves_the_original():
    from hdc import HDCIndex, HDCParams
    idx = HDCIndex(HDCParams(dim=1024))
    idx.add_many([("a", {"topic": "laptop returns"}), ("b", {"topic": "shipping times"})])
    before = idx.search("laptop returns", k=5)
    new = idx.fork()
    new.remove("a")
    new.add("c", {"topic": "laptop returns policy"})
    fresh = HDCIndex(HDCParams(dim=1024))
    fresh.add_many([("b", {"topic": "shipping times"}), ("c", {"topic": "laptop returns policy"})])
    assert new.search("laptop returns", k=5) == fresh.search("laptop returns", k=5)
    assert idx.search("laptop returns", k=5) == before and [u for u, _ in before][:1] == ["a"]


KEYS = ["cell", "cell_wall", "open_ssl", "nginx", "the", "x1", "pigment_process"]
LABELS = {"open_ssl": "OpenSSL", "cell_wall": "Cell Wall", "nginx": "NGINX web server"}


@given(st.sets(st.sampled_from(KEYS)), st.sets(st.sampled_from(KEYS)), st.dictionaries(
    st.sampled_from(KEYS), st.sampled_from(["Open SSL", "cellular wall", "pigment"]), max_size=2))
def test_a_patched_matcher_matches_as_one_built_anew(before, after, relabel):
    old_labels = {k: LABELS[k] for k in before if k in LABELS}
    new_labels = {k: relabel.get(k, LABELS.get(k)) for k in after if relabel.get(k, LABELS.get(k))}
    m = SymbolMatcher(sorted(before), ["part_of"], labels=old_labels)
    diff = {}
    for k in set(before) | set(after):
        was = old_labels.get(k, k) if k in before else None
        now = new_labels.get(k, k) if k in after else None
        if was != now:
            diff[k] = (was, now)
    n = m.patched(diff, ["part_of", "uses"])
    fresh = SymbolMatcher(sorted(after), ["part_of", "uses"], labels=new_labels)
    for text in ("is the cell wall part of a cell", "nginx uses open ssl", "NGINX web server uses OpenSSL",
                 "pigment process and the cellular wall", "x1 part of the pigment"):
        assert n.match(text) == fresh.match(text), text
    assert m.match("nginx uses open ssl") == SymbolMatcher(sorted(before), ["part_of"], labels=old_labels).match(
        "nginx uses open ssl")
