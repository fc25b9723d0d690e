"""The graph's by-object indexes are built when first read (graph.py ``_ByObject``): whatever the
order of adds and reads, every by-object read equals an oracle built by hand from the asserted
triples, and a closure over whole relations never builds them (that is the memory they save). Symbol
ranks (an ``array('q')``) are positions in Python's sorted order of the keys."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, strategies as st

from thinkingdb.engine import oneround
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import Atom, Declaration, Fact, Rule, Var
from thinkingdb.engine.rules import compile_declarations

SYMS = ["a", "b", "c", "d"]
RELS = ["p", "q"]

ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS),
              st.sampled_from([0.25, 0.5, 1.0])),
    st.tuples(st.just("read"), st.sampled_from(RELS))), max_size=30)


def by_object_oracle(triples: dict, rel: str) -> dict:
    """``{object: {subject: confidence}}`` of ``rel`` from the triples, by hand."""
    out: dict = {}
    for (s, r, o), c in triples.items():
        if r == rel:
            out.setdefault(o, {})[s] = c
    return out


def by_object_read(g: FactGraph, rel: str) -> dict:
    rid = g.relation_id(rel)
    if rid is None:
        return {}
    return {g.symbol(o): {g.symbol(s): c for s, c in col.items()} for o, col in g._in[rid].items()}


@given(ops)
def test_by_object_reads_equal_the_oracle_in_any_order_of_adds_and_reads(seq):
    g, triples = FactGraph(), {}
    for op in seq:
        if op[0] == "add":
            _, s, r, o, c = op
            g.add(Fact(s, r, o, c))
            triples[(s, r, o)] = max(triples.get((s, r, o), 0.0), c)
        else:
            assert by_object_read(g, op[1]) == by_object_oracle(triples, op[1])
    for rel in RELS:
        assert by_object_read(g, rel) == by_object_oracle(triples, rel)
        for o in SYMS:
            assert g.subjects(rel, o) == by_object_oracle(triples, rel).get(o, {})


def test_closures_over_whole_relations_never_build_the_by_object_index():
    x, y, z = Var("x"), Var("y"), Var("z")
    facts = [Fact(f"n{i}", "r", f"n{i + 1}") for i in range(6)] + [Fact("n0", "s", "n3")]
    compose = (Rule("compose", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r2", z)),)
    recursive = (Rule("base", (Atom(x, "r", y),), Atom(x, "t", y)),
                 Rule("step", (Atom(x, "t", y), Atom(y, "r", z)), Atom(x, "t", z)))
    transitive = compile_declarations([Declaration("r", "transitive")])
    for rules, engine, derived, small in ((compose, "one-round", 5, -1), (compose, "one-round-python", 5, 10**9),
                                          (recursive, "columnar", 21, -1), (transitive, "transitive", 15, -1)):
        g = FactGraph(facts)
        with mock.patch.object(oneround, "SMALL_JOIN", small):
            res = closure(g, rules)
        assert (res.stats.engine, res.derived_count) == (engine, derived)
        assert [g._in.built(r) for r in range(g.relation_count)] == [None] * g.relation_count
        assert g.subjects("r", "n3") == {"n2": 1.0}   # read once: built, and right
        assert g._in.built(g.relation_id("r")) == {g.symbol_id(f"n{i + 1}"): {g.symbol_id(f"n{i}"): 1.0}
                                                  for i in range(6)}


@given(st.lists(st.text(max_size=4), min_size=0, max_size=25, unique=True))
def test_symbol_ranks_are_positions_in_python_sorted_order(keys):
    g = FactGraph(Fact(k, "r", keys[0]) for k in keys)
    syms = [g.symbol(i) for i in range(g.symbol_count)]
    order = sorted(syms)
    sym_rank, rel_rank = g.ranks()
    assert [sym_rank[i] for i in range(len(syms))] == [order.index(k) for k in syms]
    assert list(rel_rank) == ([0] if keys else [])
