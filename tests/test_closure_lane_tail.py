"""The closure lane's tail on large ontologies (issue 16): a goal's run reads only its scope's rows,
asks the same as an earlier one share its run, link asks stop once one links the named symbols, a
deepened ask skips the unbounded demand once it is known to be over its steps; and the question
reader's possessives and pronouns — on small hand-built graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thinkingdb.engine.closure import _asserted_in_scope, closure
from thinkingdb.engine.graph import FactGraph, relation_arrays
from thinkingdb.language import compile_source
from thinkingdb.model import Fact, Limits, PathRel, Query, QueryPattern, Triple, Var
from thinkingdb.retrieval import answers as answers_mod
from thinkingdb.retrieval.answers import answer_asks
from thinkingdb.retrieval.expansion import SymbolMatcher
from thinkingdb.retrieval.question import ANY, Ask, Question, QuestionReader

from strategies import facts

RULES = [r for r, _ in compile_source(
    "rule t @1.0: ?x part_of ?y, ?y part_of ?z => ?x part_of ?z.\n"
    "rule r @0.9: ?x is_a ?y, ?y part_of ?z => ?x part_of ?z.").rules]


# -- reading only the scope's rows -------------------------------------------------------------------
def _facts(arrays):
    return sorted(zip(*(a.tolist() for a in arrays)))


@settings(max_examples=60, deadline=None)
@given(facts(), st.sets(st.sampled_from("abcde")))
def test_a_scope_read_by_its_members_has_the_facts_of_the_whole_relation_filtered(fs, members):
    """Oracle: the whole relation read and filtered by the scope (the path taken without members)."""
    g = FactGraph(fs)
    scope = np.zeros(len(g._syms), dtype=bool)
    ids = sorted(g.symbol_id(m) for m in members if g.symbol_id(m) is not None)
    scope[ids] = True
    for r in range(len(g._out)):
        assert _facts(relation_arrays(g, r, scope, ids)) == _facts(relation_arrays(g, r, scope))
    flags = bytearray(scope.astype(np.uint8).tobytes())
    assert _asserted_in_scope(g, flags, ids) == _asserted_in_scope(g, flags)


def test_members_read_rows_only_and_keep_only_objects_in_scope():
    # a r b, a r c, c r a, d r a; scope {a, c}: hand-computed (a, c) and (c, a); b and d are out
    g = FactGraph([Fact("a", "r", "b"), Fact("a", "r", "c", 0.5), Fact("c", "r", "a"), Fact("d", "r", "a")])
    a, c = g.symbol_id("a"), g.symbol_id("c")
    scope = np.zeros(4, dtype=bool)
    scope[[a, c]] = True
    s, o, conf = relation_arrays(g, 0, scope, [a, c])
    assert sorted(zip(s.tolist(), o.tolist(), conf.tolist())) == sorted([(a, c, 0.5), (c, a, 1.0)])
    assert _asserted_in_scope(g, bytearray(scope.astype(np.uint8).tobytes()), [a, c]) == 2


# -- the unbounded demand's outcome -------------------------------------------------------------------
def test_the_stats_say_whether_the_depth_report_is_exact():
    g = FactGraph([Fact("spoke", "is_a", "rod"), Fact("rod", "part_of", "frame"), Fact("frame", "part_of", "bike")])
    goal = [Query((QueryPattern("spoke", PathRel("part_of"), Var("x")),))]
    lim = Limits(max_depth=1)
    assert closure(g, RULES, limits=lim, goals=goal).stats.exact_depth is True
    assert closure(g, RULES, limits=lim, goals=goal, exact_steps=1).stats.exact_depth is False   # over 1 step
    assert closure(g, RULES, limits=lim, goals=goal, exact_steps=0).stats.exact_depth is None    # not tried
    assert closure(g, RULES, goals=goal).stats.exact_depth is None                              # no depth bound


def test_a_deepened_ask_tries_the_unbounded_demand_once_when_it_is_too_large(monkeypatch):
    # spoke is_a rod, rod part_of n1, n1 part_of n2 ... n6: deepening runs depths 1, 2, 3 (every depth
    # finds a new answer and more lie deeper); with 1 exact step the demand is over at depth 1, and the
    # runs at depths 2 and 3 go straight to budgets (exact_steps 0)
    chain = [Fact("spoke", "is_a", "rod"), Fact("rod", "part_of", "n1")] + \
        [Fact(f"n{i}", "part_of", f"n{i + 1}") for i in range(1, 7)]
    seen = []
    from thinkingdb.engine import closure as closure_mod
    original = closure_mod.closure

    def spy(*a, **kw):
        seen.append(kw.get("exact_steps"))
        return original(*a, **kw)

    monkeypatch.setattr(closure_mod, "closure", spy)
    monkeypatch.setattr(answers_mod, "EXACT_STEPS", 1)
    q = Question(("spoke",), ("part_of",), (Ask("part_of", "spoke", "subject", "part of"),))
    exp = answer_asks(FactGraph(chain), RULES, q, {}, lambda u: True, {}, depth=3, max_nodes=64,
                      max_derived=1000, timeout_ms=60_000, enough=50)
    assert exp.stats["asks"][0]["depth"] == 3 and seen == [1, 0, 0]


# -- asks sharing a run; link asks ---------------------------------------------------------------------
def test_an_ask_the_same_as_an_earlier_one_shares_its_run():
    g = FactGraph([Fact("spoke", "is_a", "rod"), Fact("rod", "part_of", "frame")])
    units = {Triple("spoke", "is_a", "rod"): {"u1": 1.0}, Triple("rod", "part_of", "frame"): {"u2": 1.0}}
    one = Question(("spoke",), ("part_of",), (Ask("part_of", "spoke", "subject", "makes up"),))
    two = Question(("spoke",), ("part_of",), (Ask("part_of", "spoke", "subject", "makes up"),
                                               Ask("part_of", "spoke", "subject", "part of")))
    kw = dict(depth=3, max_nodes=64, max_derived=1000, timeout_ms=60_000)
    a = answer_asks(g, RULES, one, units, lambda u: True, {"frame": ["u3"]}, **kw)
    b = answer_asks(g, RULES, two, units, lambda u: True, {"frame": ["u3"]}, **kw)
    assert b.stats["asks"][1]["note"] == "same as ask 0" and b.stats["asks"][1]["ms"] == 0.0
    assert b.stats["asks"][1]["answers"] == b.stats["asks"][0]["answers"] == 1     # spoke part_of frame
    assert b.priority == a.priority == ("u1", "u2", "u3")
    assert {u: (c.tier, c.score) for u, c in b.credits.items()} == {u: (c.tier, c.score) for u, c in a.credits.items()}
    assert b.stats["candidates"] == a.stats["candidates"] == 1


def test_link_asks_stop_once_one_links_the_named_symbols():
    # a is_a m, m part_of n, n part_of z: a part_of z needs depth 2. z's own ask (z part_of w1, w1 part_of
    # w2 ...) finds nothing linking it to a at depth 1 and could deepen further: it is stopped at depth 1
    fs = [Fact("a", "is_a", "m"), Fact("m", "part_of", "n"), Fact("n", "part_of", "z"),
          Fact("z", "part_of", "w1")] + [Fact(f"w{i}", "part_of", f"w{i + 1}") for i in range(1, 6)]
    units = {f.triple: {f"u-{f.subject}": 1.0} for f in fs}
    q = Question(("a", "z"), (), (Ask(ANY, "a", "subject", ""), Ask(ANY, "z", "subject", "")))
    exp = answer_asks(FactGraph(fs), RULES, q, units, lambda u: True, {}, depth=3, max_nodes=64,
                      max_derived=1000, timeout_ms=60_000)
    first, second = exp.stats["asks"]
    assert (first["depth"], first["answers"]) == (2, 1)
    assert second["depth"] == 1 and second["note"] == "stopped: ask 0 linked the named symbols"
    assert second["truncated"] == "depth"   # the bound that stopped it is reported
    # the chain a is_a m, m part_of n, n part_of z: its three units lead
    assert exp.priority[:3] == ("u-a", "u-m", "u-n")


# -- possessives and pronouns ---------------------------------------------------------------------------
READER = QuestionReader(SymbolMatcher(["wheel", "drivetrain"], []), ["part_of", "regulates"],
                        inverses={"has_part": "part_of"})


@pytest.mark.parametrize("text, expected", [
    ("What are the drivetrain's parts?", ["?x part_of drivetrain"]),        # "A's parts": parts of A
    ("Drivetrain: what are its parts?", ["?x part_of drivetrain"]),         # "its parts", its = A
    ("What are the wheel's regulators?", ["?x regulates wheel"]),
    ("Wheel: which terms regulate it?", ["?x regulates wheel"]),            # "it" stands for A
    ("Wheel: what does it regulate?", ["wheel regulates ?x"]),
    ("Wheel: what is it part of?", ["wheel part_of ?x"]),
    ("What is it that regulates the wheel?", ["?x regulates wheel"]),       # "it" before A: no reference
    ("Which terms regulate it, the wheel?", ["?x regulates wheel"]),
])
def test_possessives_read_as_of_and_pronouns_stand_for_the_one_symbol(text, expected):
    assert sorted(a.describe() for a in READER.read(text).asks) == expected


def test_a_pronoun_with_two_mentions_is_not_read():
    # two symbols: "it" could be either; each is read where it stands (the wheel before "regulates")
    got = sorted(a.describe() for a in READER.read("Wheel, drivetrain: which terms regulate it?").asks)
    assert got == ["drivetrain regulates ?x", "wheel regulates ?x"]
