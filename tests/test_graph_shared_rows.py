"""Rows ``{object: 1.0}`` are shared by the subjects that have only that fact (graph.py ``_one``):
whatever the order of adds, patches and further adds, every subject's row equals an oracle kept by
hand from the asserted triples (highest confidence per triple), in the graph and in a patched copy,
and a change to one subject's row never shows in another's.

A patched graph shares the rows the patch did not touch with its source; either graph copies such a
row before it changes (``_cow``), so adds to both graphs after a patch, interleaved, never show in
the other one — by subject or by object."""

from __future__ import annotations

from hypothesis import given, strategies as st

from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Fact, Triple

SYMS = ["a", "b", "c", "d", "e"]
RELS = ["p", "q"]
CONFS = [0.25, 0.5, 1.0]

add = st.tuples(st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS), st.sampled_from(CONFS))
patch = st.dictionaries(st.builds(Triple, st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS)),
                        st.one_of(st.none(), st.sampled_from(CONFS)), max_size=6)


def apply(oracle: dict, s: str, r: str, o: str, c: float) -> None:
    if oracle.get((s, r, o), -1.0) < c:
        oracle[(s, r, o)] = c


def rows_of(g: FactGraph) -> dict:
    """Every ``(subject, relation) -> {object: confidence}`` as the graph's rows hold it."""
    out = {}
    for rid in range(g.relation_count):
        for s, row in g._out[rid].items():
            out[(g.symbol(s), g.relation(rid))] = {g.symbol(o): c for o, c in row.items()}
    return out


def cols_of(g: FactGraph) -> dict:
    """Every ``(relation, object) -> {subject: confidence}`` as the graph's by-object index holds it."""
    out = {}
    for rid in range(g.relation_count):
        for o, col in g._in[rid].items():
            out[(g.relation(rid), g.symbol(o))] = {g.symbol(s): c for s, c in col.items()}
    return out


def cols_expected(oracle: dict) -> dict:
    out: dict = {}
    for (s, r, o), c in oracle.items():
        out.setdefault((r, o), {})[s] = c
    return out


def rows_expected(oracle: dict) -> dict:
    out: dict = {}
    for (s, r, o), c in oracle.items():
        out.setdefault((s, r), {})[o] = c
    return out


@given(st.lists(add, max_size=30), patch, st.lists(st.tuples(st.booleans(), add), max_size=12), st.booleans())
def test_rows_match_the_oracle_through_adds_and_patches(first, changes, more, index_first):
    g, oracle = FactGraph(), {}
    for s, r, o, c in first:
        g.add(Fact(s, r, o, c))
        apply(oracle, s, r, o, c)
        assert rows_of(g) == rows_expected(oracle) and len(g) == len(oracle)
    if index_first:   # the by-object indexes built before the patch (else when first read)
        assert cols_of(g) == cols_expected(oracle)
    h = g.patched(changes)
    patched = dict(oracle)
    for t, c in changes.items():
        if c is None:
            patched.pop((t.subject, t.relation, t.object), None)
        else:
            patched[(t.subject, t.relation, t.object)] = c
    assert rows_of(g) == rows_expected(oracle) and len(g) == len(oracle)
    assert rows_of(h) == rows_expected(patched) and len(h) == len(patched)
    for to_patched, (s, r, o, c) in more:   # both graphs grow after the patch, interleaved
        graph, expected = (h, patched) if to_patched else (g, oracle)
        graph.add(Fact(s, r, o, c))
        apply(expected, s, r, o, c)
        for graph, expected in ((g, oracle), (h, patched)):
            assert rows_of(graph) == rows_expected(expected) and len(graph) == len(expected)
            assert cols_of(graph) == cols_expected(expected)


def test_adding_to_a_patched_graph_leaves_its_source_alone_and_back():
    g = FactGraph([Fact("a", "r", "b"), Fact("a", "r", "c"), Fact("x", "r", "o", 0.5), Fact("y", "r", "o", 0.5)])
    h = g.patched({})
    h.add(Fact("a", "r", "d"))                        # a new symbol in h: g has no id for it
    h.add(Fact("z", "r", "o", 0.7))                   # o's by-object column, shared until now
    h.add(Fact("x", "r", "o", 0.9))                   # a higher confidence for a shared fact
    assert g.objects("a", "r") == {"b": 1.0, "c": 1.0} and g.subjects("r", "o") == {"x": 0.5, "y": 0.5}
    assert h.objects("a", "r") == {"b": 1.0, "c": 1.0, "d": 1.0}
    assert h.subjects("r", "o") == {"x": 0.9, "y": 0.5, "z": 0.7} and len(g) == 4 and len(h) == 6
    g.add(Fact("a", "r", "e"))                        # and the source grows without touching the patch
    g.add(Fact("y", "r", "o", 0.8))
    assert h.objects("a", "r") == {"b": 1.0, "c": 1.0, "d": 1.0} and h.subjects("r", "o")["y"] == 0.5
    assert g.objects("a", "r") == {"b": 1.0, "c": 1.0, "e": 1.0} and g.subjects("r", "o") == {"x": 0.5, "y": 0.8}


def test_a_shared_row_is_copied_before_it_changes():
    g = FactGraph([Fact("x", "type", "student"), Fact("y", "type", "student"), Fact("z", "type", "staff", 0.5)])
    r, x, y, z = g.relation_id("type"), g.symbol_id("x"), g.symbol_id("y"), g.symbol_id("z")
    assert g._out[r][x] is g._out[r][y]              # one dict for both subjects
    assert g._out[r][z] == {g.symbol_id("staff"): 0.5}
    g.add(Fact("x", "type", "person"))
    g.add(Fact("y", "type", "student", 0.5))          # lower: nothing changes
    assert g.objects("x", "type") == {"student": 1.0, "person": 1.0}
    assert g.objects("y", "type") == {"student": 1.0}
    assert len(g) == 4


def test_a_row_only_its_subject_holds_becomes_its_own():
    g = FactGraph([Fact("a", "r", "b")])
    r, b, a = g.relation_id("r"), g.symbol_id("b"), g.symbol_id("a")
    before = id(g._out[r][a])   # (an id, not the dict: a reference held here would make it shared)
    g.add_many([Fact("a", "r", "c"), Fact("x", "r", "b"), Fact("y", "r", "b")])
    assert id(g._out[r][a]) == before                 # grown in place, not copied
    assert g._one == {b: {b: 1.0}}                   # a's {b: 1.0} left it when a grew; x and y share the new one
    assert g._out[r][g.symbol_id("x")] is g._one[b] is g._out[r][g.symbol_id("y")]
    h = g.patched({})
    h.add(Fact("x", "r", "c"))                        # g and y still hold x's row: copied
    assert g.objects("x", "r") == {"b": 1.0} and h.objects("y", "r") == {"b": 1.0}
    assert h.objects("x", "r") == {"b": 1.0, "c": 1.0}


def test_a_shared_one_row_given_to_a_subject_the_patch_emptied_is_still_copied():
    g = FactGraph([Fact("a", "r", "b", 0.5), Fact("a", "q", "c"), Fact("b", "q", "c"), Fact("x", "r", "o")])
    h = g.patched({Triple("a", "r", "b"): None})     # a's r-row copied by the patch, then emptied
    h.add(Fact("a", "r", "o"))                        # a now holds the {o: 1.0} row x holds in g
    h.add(Fact("a", "r", "p"))
    assert g.objects("x", "r") == {"o": 1.0} and g.objects("a", "r") == {"b": 0.5}
    assert h.objects("a", "r") == {"o": 1.0, "p": 1.0} and h.objects("x", "r") == {"o": 1.0}
