"""The single-source transitive search in pure Python (``thinkingdb.engine.smallsource``) against the
numpy one (``thinkingdb.engine.reach``), each forced through ``bulk.SMALL_REACH``: on generated graphs
with cycles, confidences below 1, a subrelation (or an inverse) declared into the closed relation, in
memory and memory-mapped, with either end bound, under every Limits setting: the same answers, scores,
order, proofs, ``truncated`` and stats, and ``why`` gives the same proof. A cold small question with the
default rules loads no numpy: tests/test_architecture.py."""

from __future__ import annotations


from hypothesis import given, settings
from hypothesis import strategies as st

import thinkingdb.engine.bulk as bulk
from thinkingdb.engine import smallsource
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate, why
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.model import Declaration, Fact, Limits, PathInv, PathRel, PathRepeat, Query, QueryPattern, Triple, Var

from strategies import SYMBOLS, facts
from test_bulk import mapped

LIMITS = [Limits(), Limits(max_derived=10_000), Limits(max_derived=0), Limits(max_derived=1), Limits(max_nodes=1),
          Limits(max_nodes=3), Limits(max_nodes=1_000), Limits(max_depth=1), Limits(max_rows=2),
          Limits(max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000)]
PATHS = [PathRel("r"), PathInv(PathRel("r")), PathRepeat(PathRel("r"), 1, None), PathRepeat(PathRel("r"), 0, None),
         PathRepeat(PathInv(PathRel("r")), 1, None), PathInv(PathRepeat(PathRel("r"), 0, None)),
         PathRepeat(PathRel("r"), 1, 2)]
RULES = {"sub": compile_declarations([Declaration("r", "transitive"), Declaration("s", "subrelation_of", "r")]),
         "plain": compile_declarations([Declaration("r", "transitive")]),
         "inverse": compile_declarations([Declaration("r", "transitive"), Declaration("s", "inverse", "r")])}


def run(reach, fn, *args, **kw):
    keep = bulk.SMALL_REACH
    bulk.SMALL_REACH = reach
    try:
        return fn(*args, **kw)
    finally:
        bulk.SMALL_REACH = keep


def summary(res):
    stats = None if res.stats is None else res.stats.replace(elapsed_ms=0.0)
    return ([a.to_json() for a in res.answers], [a.bindings for a in res.answers], res.truncated, res.more,
            stats, [None if a.proof is None else a.proof.to_json() for a in res.answers])


@settings(max_examples=200, deadline=None)
@given(facts(relations=("r", "s"), confidences=(1.0,) * 7 + (0.5,), max_size=18), st.sampled_from(SYMBOLS),
       st.sampled_from(SYMBOLS), st.booleans(), st.sampled_from(PATHS), st.sampled_from(sorted(RULES)), st.booleans(),
       st.sampled_from([2, 256]))
def test_the_pure_python_search_equals_the_numpy_one(tmp_path_factory, fs, const, other, subject_end, path,
                                                     rules, on_disk, small):
    g = mapped(fs, tmp_path_factory.mktemp("g")) if on_disk else FactGraph(fs)
    pat = QueryPattern(const, path, Var("x")) if subject_end else QueryPattern(Var("x"), path, const)
    for limits in LIMITS:
        got = run(small, evaluate, Query((pat,)), g, RULES[rules], limits=limits)
        want = run(0, evaluate, Query((pat,)), g, RULES[rules], limits=limits)
        assert summary(got) == summary(want), limits
        assert got.answers[:2] == want.answers[:2] and len(got.answers[1:]) == len(want.answers[1:])
        t = Triple(const, "r", other)
        p, q = run(small, why, t, g, RULES[rules], limits=limits), run(0, why, t, g, RULES[rules], limits=limits)
        assert (p and p.to_json()) == (q and q.to_json()), limits


def test_the_pure_python_search_runs_where_it_should():
    # a → b → c → a, c → d, d s e (s declared into r); all of confidence 1
    g = FactGraph([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "r", "a"), Fact("c", "r", "d"),
                   Fact("d", "s", "e")])
    q = Query((QueryPattern("a", PathRel("r"), Var("x")),))
    res = run(256, closure, g, RULES["sub"], goals=[q], limits=Limits(max_derived=100))
    assert isinstance(res, smallsource.SmallSourceResult)
    assert sorted(str(t) for t in res.derived) == ["a r a", "a r c", "a r d", "a r e"]   # a r b is asserted
    assert (res.stats.engine, res.stats.derived, res.stats.nodes) == ("transitive", 4, 5)
    p = res.proof(Triple("a", "r", "e"))     # walk a b c d e: a balanced tree, d s e through the declaration
    assert [str(x.conclusion) for x in p.premises] == ["a r c", "c r e"]
    assert [str(x.conclusion) for x in p.premises[1].premises[1].premises] == ["d s e"]
    assert not isinstance(run(3, closure, g, RULES["sub"], goals=[q], limits=Limits()), smallsource.SmallSourceResult)
    assert not isinstance(run(0, closure, g, RULES["sub"], goals=[q], limits=Limits()), smallsource.SmallSourceResult)
    half = FactGraph([Fact("a", "r", "b", 0.5), Fact("b", "r", "c")])   # a confidence below 1: the numpy path
    assert not isinstance(run(256, closure, half, RULES["sub"], goals=[q], limits=Limits()), smallsource.SmallSourceResult)


def test_a_mapped_relation_of_ones_beside_confidences_runs_without_numpy(tmp_path):
    # the graph file stores confidences (t has 0.5); r's own run of them is all 1: the pure-Python
    # search; once r has a 0.5 it is not
    q = Query((QueryPattern("a", PathRel("r"), Var("x")),))
    (tmp_path / "ones").mkdir()
    (tmp_path / "half").mkdir()
    ones = mapped([Fact("a", "r", "b"), Fact("b", "r", "c"), Fact("c", "t", "d", 0.5)], tmp_path / "ones")
    assert ones._out[ones.relation_id("r")]._conf is not None    # (the file does store confidences)
    res = run(256, closure, ones, RULES["plain"], goals=[q], limits=Limits())
    assert isinstance(res, smallsource.SmallSourceResult) and sorted(str(t) for t in res.derived) == ["a r c"]
    half = mapped([Fact("a", "r", "b"), Fact("b", "r", "c", 0.5), Fact("c", "t", "d")], tmp_path / "half")
    assert not isinstance(run(256, closure, half, RULES["plain"], goals=[q], limits=Limits()), smallsource.SmallSourceResult)
    assert smallsource._ones(half, half.relation_id("t")) is True and smallsource._ones(half, half.relation_id("r")) is False


def test_the_cli_prints_small_answers_as_the_numpy_path_does(tmp_path, capsys):
    """``R+`` answered as lists (SmallAnswers: scores a list, not an array) through the CLI's column
    printing, text and TSV, equal to the numpy path's output."""
    from thinkingdb.api import KnowledgeBase
    from thinkingdb.cli.main import main
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "depends_on", "b"), ("b", "depends_on", "c"), ("c", "depends_on", "a"), ("c", "depends_on", "d")])
    outs = []
    for reach in (256, 0):
        for fmt in ("text", "tsv"):
            assert run(reach, main, ["query", "--db", path, "? b depends_on+ ?x.", "--format", fmt]) == 0
            outs.append(capsys.readouterr().out)
    assert outs[:2] == outs[2:]
    assert outs[1] == "x\tscore\na\t1.0\nb\t1.0\nc\t1.0\nd\t1.0\n"    # b reaches c, a, d and itself


def test_a_relations_confidences_are_compared_a_block_at_a_time(tmp_path, monkeypatch):
    # blocks of 2 over r's run of 5 confidences: a 0.5 in any block (the last, short one too) is seen
    monkeypatch.setattr(smallsource, "_BLOCK", 2)
    monkeypatch.setattr(smallsource, "_ONES", smallsource._ONE * 2)
    for k, bad in enumerate([None, 0, 1, 2, 3, 4]):
        facts = [Fact("a", "r", f"b{i}", 0.5 if i == bad else 1.0) for i in range(5)] + [Fact("c", "t", "d", 0.5)]
        (tmp_path / str(k)).mkdir()
        g = mapped(facts, tmp_path / str(k))
        assert smallsource._ones(g, g.relation_id("r")) is (bad is None), bad
