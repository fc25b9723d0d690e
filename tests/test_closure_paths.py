"""Property paths and conjunctions against an independent max-product matrix oracle and networkx."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, strategies as st

from strategies import SYMBOLS, facts
from thinkingdb.engine.graph import FactGraph
from thinkingdb.model import (Declaration, Fact, Limits, PathAlt, PathInv, PathRel, PathRepeat, PathSeq, Query,
                              QueryPattern, Triple, Var)
from thinkingdb.engine.proofs import check_proof
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import compile_declarations

REL = st.sampled_from(["r", "s"])


def paths():
    return st.recursive(
        st.builds(PathRel, REL),
        lambda inner: st.one_of(
            st.builds(PathInv, inner),
            st.builds(lambda a, b: PathSeq((a, b)), inner, inner),
            st.builds(lambda a, b: PathAlt((a, b)), inner, inner),
            st.builds(lambda p, lo, extra: PathRepeat(p, lo, None if extra is None else lo + extra),
                      inner, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 2)))),
        max_leaves=4)


# -- oracle: paths as max-product matrices over the symbols --------------------------------------
def mat(path, fs):
    best = {}
    for f in fs:
        k = (f.subject, f.relation, f.object)
        best[k] = max(best.get(k, -1.0), f.confidence)
    if isinstance(path, PathRel):
        return {(s, o): c for (s, r, o), c in best.items() if r == path.relation}
    if isinstance(path, PathInv):
        return {(o, s): c for (s, o), c in mat(path.path, fs).items()}
    if isinstance(path, PathSeq):
        out = mat(path.parts[0], fs)
        for part in path.parts[1:]:
            out = compose(out, mat(part, fs))
        return out
    if isinstance(path, PathAlt):
        out = {}
        for opt in path.options:
            for k, v in mat(opt, fs).items():
                out[k] = max(out.get(k, -1.0), v)
        return out
    m = mat(path.path, fs)
    power = {(x, x): 1.0 for f in fs for x in (f.subject, f.object)}   # zero steps: the graph's symbols
    for _ in range(path.min):
        power = compose(power, m)
    out = dict(power)
    steps = path.max - path.min if path.max is not None else 4 * len(SYMBOLS) ** 2
    for _ in range(steps):
        power = compose(power, m)
        grown = dict(out)
        for k, v in power.items():
            grown[k] = max(grown.get(k, -1.0), v)
        if grown == out and path.max is None:
            break
        out = grown
    return out


def compose(a, b):
    out = {}
    for (x, y), v in a.items():
        for (y2, z), w in b.items():
            if y == y2:
                out[(x, z)] = max(out.get((x, z), -1.0), v * w)
    return out


@given(facts(relations=("r", "s")), paths(), st.sampled_from(SYMBOLS))
def test_paths_from_subject_match_oracle(fs, path, s):
    res = evaluate(Query((QueryPattern(s, path, Var("o")),)), FactGraph(fs), ())
    got = {a.bindings["o"]: a.score for a in res.answers}
    want = {o: v for (x, o), v in mat(path, fs).items() if x == s}
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-9) for k in got)
    g = FactGraph(fs)
    for a in res.answers:
        assert check_proof(a.proof, (), g.confidence) == []


@given(facts(relations=("r", "s")), paths(), st.sampled_from(SYMBOLS))
def test_paths_from_object_match_oracle(fs, path, o):
    res = evaluate(Query((QueryPattern(Var("s"), path, o),)), FactGraph(fs), ())
    got = {a.bindings["s"]: a.score for a in res.answers}
    want = {s: v for (s, x), v in mat(path, fs).items() if x == o}
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-9) for k in got)


@given(facts(relations=("r", "s"), max_size=10), paths())
def test_unbound_paths_and_order(fs, path):
    res = evaluate(Query((QueryPattern(Var("a"), path, Var("b")),)), FactGraph(fs), ())
    got = {(a.bindings["a"], a.bindings["b"]): a.score for a in res.answers}
    want = mat(path, fs)
    assert got.keys() == want.keys()
    keys = [(-a.score, a.bindings["a"], a.bindings["b"]) for a in res.answers]
    assert keys == sorted(keys)


@given(facts(relations=("r",), confidences=(1.0,), max_size=20), st.sampled_from(SYMBOLS))
def test_plus_equals_networkx_descendants(fs, s):
    dg = nx.DiGraph([(f.subject, f.object) for f in fs])
    want = set()
    if s in dg:
        want = nx.descendants(dg, s) | ({s} if any(s in c for c in nx.simple_cycles(dg)) else set())
    res = evaluate(Query((QueryPattern(s, PathRepeat(PathRel("r"), 1, None), Var("x")),)), FactGraph(fs), ())
    assert {a.bindings["x"] for a in res.answers} == want


@given(facts(relations=("r", "s"), max_size=10))
def test_conjunction_equals_join_of_patterns(fs):
    g = FactGraph(fs)
    p1, p2 = PathRel("r"), PathSeq((PathRel("s"), PathRel("r")))
    res = evaluate(Query((QueryPattern(Var("x"), p1, Var("y")), QueryPattern(Var("y"), p2, Var("z")))), g, ())
    m1, m2 = mat(p1, fs), mat(p2, fs)
    want = {(x, y, z): v * w for (x, y), v in m1.items() for (y2, z), w in m2.items() if y == y2}
    got = {(a.bindings["x"], a.bindings["y"], a.bindings["z"]): a.score for a in res.answers}
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-9) for k in got)


def test_paths_over_derived_facts_and_bounds():
    fs = [Fact(f"n{i}", "part_of", f"n{i + 1}") for i in range(8)]
    rules = compile_declarations([Declaration("part_of", "inverse", "has_part")])
    res = evaluate(Query((QueryPattern("n3", PathRepeat(PathRel("has_part"), 1, 2), Var("x")),)), FactGraph(fs), rules)
    assert [a.bindings["x"] for a in res.answers] == ["n1", "n2"]
    assert res.answers[1].proof.premises[0].kind == "rule"
    walk = evaluate(Query((QueryPattern("n0", PathRepeat(PathRel("part_of"), 1, None), Var("x")),)),
                    FactGraph(fs), (), limits=Limits(max_nodes=3))
    assert walk.truncated == "nodes" and len(walk.answers) < 8


def test_max_answers_flags_more():
    g = FactGraph([Fact("a", "r", x) for x in "bcdef"])
    res = evaluate(Query((QueryPattern("a", PathRel("r"), Var("x")),)), g, (), max_answers=2)
    assert [a.bindings["x"] for a in res.answers] == ["b", "c"] and res.more
