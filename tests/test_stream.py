"""Streaming answers: the CLI's --stream / --format jsonl with --limit, and KnowledgeBase.stream,
against answers worked out by hand and against the sorted evaluator."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.cli.main import main
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.mapped import RelationIndex
from thinkingdb.engine.query import evaluate
from thinkingdb.engine.rules import compile_declarations
from thinkingdb.engine.stream import answer_stream
from thinkingdb.model import Declaration, Fact, Limits, PathRel, PathRepeat, Query, QueryPattern, Var

from strategies import SYMBOLS, facts
from test_closure_paths import paths

# r: a -> b, a -> c @0.5, b -> c, c -> d; link is transitive; s has a rule
FACTS = """\
a r b. a r c @0.5. b r c. c r d.
relation link transitive.
p link q @0.5. q link w. w link z @0.5.
rule two @0.8: ?x r ?y, ?y r ?z => ?x s ?z.
"""


@pytest.fixture
def db(tmp_path):
    src = tmp_path / "kb.tdb"
    src.write_text(FACTS)
    path = str(tmp_path / "kb.sqlite")
    assert main(["--db", path, "--quiet", "ingest", str(src)]) == 0
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tsv_stream_with_limit_stops_and_says_so(db, capsys):
    # both ends free: subjects in key order (a, b, c), each one's objects in key order
    code, out, err = run(capsys, "--db", db, "query", "? ?x r ?y.", "--stream", "--format", "tsv", "--limit", "2",
                         "--no-default-rules")
    assert code == 0
    assert out.splitlines() == ["x\ty\tscore", "a\tb\t1.0", "a\tc\t0.5"]
    assert "stopped at --limit 2; there are more answers" in err


def test_limit_at_the_number_of_answers_says_nothing_more(db, capsys):
    code, out, err = run(capsys, "--db", db, "query", "? a r ?y.", "--stream", "--format", "tsv", "--limit", "2",
                         "--no-default-rules")
    assert code == 0 and out.splitlines() == ["y\tscore", "b\t1.0", "c\t0.5"] and err == ""


def test_full_stream_is_every_answer_by_hand(db, capsys):
    code, out, _ = run(capsys, "--db", db, "query", "? ?x r ?y.", "--format", "jsonl", "--no-default-rules")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and all(set(r) == {"bindings", "score"} for r in rows)   # no proof unless asked
    got = sorted((r["bindings"]["x"], r["bindings"]["y"], r["score"]) for r in rows)
    assert got == [("a", "b", 1.0), ("a", "c", 0.5), ("b", "c", 1.0), ("c", "d", 1.0)]


def test_jsonl_proofs_when_asked(db, capsys):
    # a s d: a r b, b r c... a r c @0.5 then c r d gives 0.8*0.5; a r b, b r c gives a s c; b r c, c r d gives b s d
    code, out, _ = run(capsys, "--db", db, "query", "? ?x s ?y.", "--format", "jsonl", "--proofs",
                       "--no-default-rules")
    rows = {(r["bindings"]["x"], r["bindings"]["y"]): r for r in map(json.loads, out.splitlines())}
    assert code == 0 and sorted(rows) == [("a", "c"), ("a", "d"), ("b", "d")]
    assert rows[("a", "d")]["score"] == pytest.approx(0.8 * 0.5)
    assert rows[("a", "d")]["proof"]["rule"] == "two"


def test_text_stream_and_no_answers(db, capsys):
    code, out, _ = run(capsys, "--db", db, "query", "? p link ?y.", "--stream")
    # p link q @0.5, then through q link w and w link z @0.5: transitive weight 1 by the default declaration
    assert code == 0
    assert sorted(out.splitlines()) == sorted(["?y = q  (score 0.5)", "?y = w  (score 0.5)", "?y = z  (score 0.25)"])
    code, out, _ = run(capsys, "--db", db, "query", "? z link ?y.", "--stream")
    assert code == 1 and out == "no answers\n"


def test_negative_limit_is_a_usage_error(db, capsys):
    code, _, err = run(capsys, "--db", db, "query", "? ?x r ?y.", "--stream", "--limit", "-1")
    assert code == 2 and "--limit" in err


QUERIES = ["? ?x r ?y.", "? a r+ ?y.", "? ?x r ?y, ?y r ?z.", "? ?x s ?y.", "? ?x link ?y.", "? ?x ^r ?y.",
           "? ?x r* d."]


@pytest.mark.parametrize("q", QUERIES)
@pytest.mark.parametrize("aggregate", ["best", "noisy-or"])
def test_stream_has_the_answers_of_evaluate(db, q, aggregate):
    with KnowledgeBase(db) as kb:
        full = kb.query(q, aggregate=aggregate)
        streamed = list(kb.stream(q, aggregate=aggregate))
        key = lambda a: (tuple(sorted(a.bindings.items())), a.score)  # noqa: E731
        assert sorted(map(key, streamed)) == sorted(map(key, full.answers))
        first = kb.stream(q, aggregate=aggregate, limit=2)
        got = list(first)
        assert len(got) == min(2, len(full.answers)) and first.count == len(got)
        assert set(map(key, got)) <= set(map(key, full.answers))


def test_a_walk_from_a_bound_object_reports_the_node_bound_it_hit():
    # b s d alone. `? ?v s+ d.` walks back from d and touches b too: 2 symbols, over max_nodes=1, so
    # nothing is found and the cut is "nodes", as evaluate says; the stream had dropped its backward
    # walks' bounds (kept in a list copied before they were made): no answer and truncated None
    g = FactGraph([Fact("b", "s", "d")])
    plus = Query((QueryPattern(Var("v"), PathRepeat(PathRel("s"), 1, None), "d"),))
    s = answer_stream(plus, g, (), limits=Limits(max_nodes=1))
    assert list(s) == [] and s.truncated == "nodes"
    assert evaluate(plus, g, (), limits=Limits(max_nodes=1)).truncated == "nodes"
    s = answer_stream(plus, g, (), limits=Limits(max_nodes=2))   # room for both: b, nothing cut
    assert [a.bindings for a in s] == [{"v": "b"}] and s.truncated is None


def test_a_ground_pattern_is_looked_up_as_evaluate_does():
    # `? b s d.` over b s d with max_nodes=1: evaluate looks the fact up (one answer, nothing cut); the
    # stream walked from b, which touches b and d (over the bound): no answer, "nodes"
    g = FactGraph([Fact("b", "s", "d", 0.5)])
    q = Query((QueryPattern("b", PathRel("s"), "d"),))
    s = answer_stream(q, g, (), limits=Limits(max_nodes=1))
    assert [(a.bindings, a.score) for a in s] == [({}, 0.5)] and s.truncated is None
    want = evaluate(q, g, (), limits=Limits(max_nodes=1))
    assert [(a.bindings, a.score) for a in want.answers] == [({}, 0.5)] and want.truncated is None


TERMS = st.sampled_from((Var("x"), Var("y"), Var("x")) + SYMBOLS[:3])
TRANSITIVE = compile_declarations([Declaration("r", "transitive")])


@settings(max_examples=150, deadline=None)
@given(facts(relations=("r", "s"), max_size=10), st.lists(st.builds(QueryPattern, TERMS, paths(), TERMS), min_size=1,
                                                          max_size=2),
       st.sampled_from([(), TRANSITIVE]), st.sampled_from(["best", "noisy-or"]),
       st.sampled_from([Limits(max_nodes=1), Limits(max_nodes=2), Limits(max_nodes=4), Limits(max_derived=1),
                        Limits(max_derived=3), Limits()]))
def test_a_stream_has_the_answers_and_the_cut_of_evaluate(fs, patterns, rules, aggregate, limits):
    # under node and derived-fact bounds too: the same answers (scores, proofs) and the same truncated,
    # backward walks (a bound object, a free subject) and ground patterns included
    g, q = FactGraph(fs), Query(tuple(patterns))
    want = evaluate(q, g, rules, limits=limits, aggregate=aggregate, k=2)
    s = answer_stream(q, g, rules, limits=limits, aggregate=aggregate, k=2)
    got = sorted((json.dumps(a.to_json(), sort_keys=True) for a in s))
    assert got == sorted(json.dumps(a.to_json(), sort_keys=True) for a in want.answers)
    assert s.truncated == want.truncated


def test_a_limited_stream_leaves_the_graph_undecoded(tmp_path):
    src = tmp_path / "big.tsv"
    src.write_text("".join(f"n{i:04d}\tr\tn{(i * 7 + 1) % 1000:04d}\n" for i in range(1000)))
    with KnowledgeBase(str(tmp_path / "kb.sqlite"), default_rules=False) as kb:
        kb.ingest([str(src)])
        got = [a.bindings for a in kb.stream("? ?x r ?y.", limit=3)]
        assert got == [{"x": "n0000", "y": "n0001"}, {"x": "n0001", "y": "n0008"}, {"x": "n0002", "y": "n0015"}]
        index = kb.graph._out[kb.graph.relation_id("r")]
        assert isinstance(index, RelationIndex) and not index._full and len(index._rows) == 3


def test_text_stream_reads_labels_of_its_answers_only(tmp_path, capsys, monkeypatch):
    """The labels shown are the answers' own, read for their keys: never the store's whole label
    table (on a 1M-fact store that took 5 s and 124 MB before the first answer)."""
    src = tmp_path / "kb.tdb"
    src.write_text('"Web Server" uses "Open SSL". "Web Server" uses libc. other uses "Big Thing".\n')
    path = str(tmp_path / "kb.sqlite")
    assert main(["--db", path, "--quiet", "ingest", str(src)]) == 0
    asked = []
    real = KnowledgeBase.labels

    def labels(self, *, caller=None, as_of=None, keys=None):
        assert keys is not None, "the whole label table was read"
        asked.append(set(keys))
        return real(self, caller=caller, as_of=as_of, keys=keys)
    monkeypatch.setattr(KnowledgeBase, "labels", labels)
    code, out, _ = run(capsys, "--db", path, "query", "? web_server uses ?y.", "--stream", "--no-default-rules")
    assert code == 0
    assert sorted(out.splitlines()) == ["?y = Open SSL  (score 1)", "?y = libc  (score 1)"]
    assert set().union(*asked) == {"open_ssl", "libc"}
