"""What a path that can match zero steps (``r*``, ``r{0,n}``) matches (docs/closure.md, "zero steps"): it
pairs every symbol of the model — in an asserted or a derived fact, of any relation — with itself, and a
pattern with both ends one constant holds iff that symbol is in the model. The same in goal-directed
evaluation, in the full closure and in the answer stream, whichever rules the question's relations need."""

import pytest

from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.stream import answer_stream
from thinkingdb.language import compile_source

# newsym is only in the derived fact `c m newsym` (rule r, of a relation the questions never name);
# knew is only a head constant of rules r2 and r3 (r3 of h itself), which never fire (no zz fact): it is
# in no fact at all.
KB = ("a h b.\nc k d.\nrule r: ?x k ?y => ?x m newsym.\nrule r2: ?x zz ?y => knew m ?y.\n"
      "rule r3: ?x zz ?y => knew h ?y.\n")
EVERY = {("a", "a"), ("a", "b"), ("b", "b"), ("c", "c"), ("d", "d"), ("newsym", "newsym")}

CASES = [   # (question, answers as sets of binding tuples in variable order), by hand from KB
    ("? ?v h* ?x.", EVERY),
    ("? ?v h{0,3} ?x.", EVERY),
    ("? ?v h+ ?x.", {("a", "b")}),
    ("? ?v h* ?v.", {("a",), ("b",), ("c",), ("d",), ("newsym",)}),
    ("? newsym h* newsym.", {()}),
    ("? newsym h{0,2} newsym.", {()}),
    ("? newsym h* ?x.", {("newsym",)}),
    ("? ?x h{0,1} newsym.", {("newsym",)}),
    ("? a h* a.", {()}),
    ("? a h* ?x.", {("a",), ("b",)}),
    ("? knew h{0,3} knew.", set()),   # main: yes (knew is interned as r2's head constant)
    ("? knew h* knew.", set()),
    ("? knew h* ?x.", set()),
    ("? zzz h* zzz.", set()),
    ("? zzz h{0,3} zzz.", set()),
]


def _program():
    p = compile_source(KB + "".join(q for q, _ in CASES))
    return FactGraph([f for f, _ in p.facts]), [r for r, _ in p.rules], p.queries


def _rows(answers, query):
    names = [v.name for v in query.variables()]
    return {tuple(a.bindings[n] for n in names) for a in answers}


@pytest.mark.parametrize("i", range(len(CASES)), ids=[q for q, _ in CASES])
def test_zero_steps_match_the_symbols_of_the_model_in_every_mode(i):
    g, rules, queries = _program()
    q, want = queries[i], CASES[i][1]
    for goal_directed in (True, False):
        assert _rows(evaluate(q, g, rules, goal_directed=goal_directed).answers, q) == want, goal_directed
        assert _rows(list(answer_stream(q, g, rules, goal_directed=goal_directed)), q) == want, goal_directed


def test_the_cli_agrees_with_and_without_stream(tmp_path, capsys):
    import json

    from thinkingdb.cli.main import main
    (tmp_path / "kb.tdb").write_text(KB)
    db = str(tmp_path / "kb.sqlite")
    assert main(["--db", db, "--quiet", "ingest", str(tmp_path / "kb.tdb")]) == 0
    for q, want in CASES:
        capsys.readouterr()
        main(["--db", db, "--json", "query", q, "--no-default-rules"])
        doc = json.loads(capsys.readouterr()[0])
        got = {tuple(a["bindings"][v] for v in doc["variables"]) for a in doc["answers"]}
        assert got == want, q
        main(["--db", db, "query", q, "--no-default-rules", "--format", "jsonl"])
        lines = [json.loads(x) for x in capsys.readouterr()[0].splitlines()]
        assert {tuple(r["bindings"][v] for v in doc["variables"]) for r in lines} == want, q


# -- generated programs against a naive fixpoint (the model's symbols) -----------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

from thinkingdb.model import Atom, Fact, PathRel, PathRepeat, Query, QueryPattern, Rule, Var  # noqa: E402

SYMS, RELS, HEAD_CONSTANTS = ("a", "b", "c"), ("r", "s", "t"), ("a", "new1", "new2")
X, Y, Z = Var("x"), Var("y"), Var("z")


@st.composite
def _rule(draw):
    n = draw(st.integers(1, 2))
    terms = st.sampled_from((X, Y, Z)[:n + 1])
    premises = tuple(Atom(draw(terms), draw(st.sampled_from(RELS)), draw(terms)) for _ in range(n))
    bound = sorted({t for p in premises for t in (p.subject, p.object)}, key=lambda v: v.name)
    head = st.one_of(st.sampled_from(bound), st.sampled_from(HEAD_CONSTANTS))
    return Rule(f"g{draw(st.integers(0, 10**6))}", premises,
                Atom(draw(head), draw(st.sampled_from(RELS)), draw(head)))


def _naive_symbols(fs, rules) -> set[str]:
    """The symbols of every fact of the naive fixpoint (asserted facts and all they entail)."""
    known = {(f.subject, f.relation, f.object) for f in fs}

    def envs(premises, env):
        if not premises:
            yield env
            return
        p = premises[0]
        for s, r, o in list(known):
            if r != p.relation:
                continue
            e, ok = dict(env), True
            for t, v in ((p.subject, s), (p.object, o)):
                if isinstance(t, Var):
                    ok = ok and e.setdefault(t, v) == v
                else:
                    ok = ok and t == v
            if ok:
                yield from envs(premises[1:], e)

    while True:
        new = {(e.get(r.head.subject, r.head.subject), r.head.relation, e.get(r.head.object, r.head.object))
               for r in rules for e in envs(r.premises, {})} - known
        if not new:
            return {x for s, _, o in known for x in (s, o)}
        known |= new


@settings(max_examples=60, deadline=None)
@given(st.lists(st.builds(Fact, st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS)),
                min_size=1, max_size=6),
       st.lists(_rule(), max_size=3, unique_by=lambda r: r.name), st.sampled_from(RELS), st.sampled_from((None, 2)))
def test_zero_step_pairs_are_the_naive_models_symbols_in_every_mode(fs, rules, rel, most):
    g, model = FactGraph(fs), _naive_symbols(fs, rules)
    path = PathRepeat(PathRel(rel), 0, most)
    free = Query((QueryPattern(Var("v"), path, Var("w")),))
    results = []
    for goal_directed in (True, False):
        res = evaluate(free, g, rules, goal_directed=goal_directed)
        results.append(sorted((a.bindings["v"], a.bindings["w"], a.score) for a in res.answers))
        results.append(sorted((a.bindings["v"], a.bindings["w"], a.score)
                              for a in answer_stream(free, g, rules, goal_directed=goal_directed)))
    assert all(r == results[0] for r in results)
    assert {v for v, w, _ in results[0] if v == w} == model
    for sym in sorted(model | set(HEAD_CONSTANTS) | {"zzz"}):
        ground = Query((QueryPattern(sym, path, sym),))
        for goal_directed in (True, False):
            assert bool(evaluate(ground, g, rules, goal_directed=goal_directed).answers) == (sym in model)
            assert bool(list(answer_stream(ground, g, rules, goal_directed=goal_directed))) == (sym in model)
        for one in (Query((QueryPattern(sym, path, Var("w")),)), Query((QueryPattern(Var("w"), path, sym),))):
            got = [sorted(a.bindings["w"] for a in evaluate(one, g, rules, goal_directed=gd).answers)
                   for gd in (True, False)]
            got += [sorted(a.bindings["w"] for a in answer_stream(one, g, rules, goal_directed=gd))
                    for gd in (True, False)]
            assert all(x == got[0] for x in got)
            assert (sym in got[0]) == (sym in model) and (got[0] == [] or sym in model)
