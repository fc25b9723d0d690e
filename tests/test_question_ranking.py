"""Relational questions (issue 16): relation phrases, answer-carrying units above lexical neighbours,
the subject's own unit kept, and the trace's account of a miss — on small stores of our own."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.retrieval.expansion import SymbolMatcher
from thinkingdb.retrieval.fusion import cut_reasons
from thinkingdb.retrieval.pipeline import search
from thinkingdb.retrieval.profiles import ClosureBounds, get_profile
from thinkingdb.retrieval.question import QuestionReader

# kb-thinkingdb with a generous closure timeout: a loaded machine's first search (lazy imports)
# must not turn into a "time" cut in these tests, which are about ranking, not speed
DEEP = replace(get_profile("kb-thinkingdb"), closure=ClosureBounds(timeout_ms=60_000.0))

RULES = """\
relation part_of inverse has_part.
relation positively_regulates subrelation_of regulates.
alias "is a component of" => part_of.
rule part_of_after_is_a @0.6: ?x is_a ?y, ?y part_of ?z => ?x part_of ?z.
"""

# The chain: spoke wheel is_a rolling element, rolling element part_of drivetrain
#   =>  spoke wheel part_of drivetrain.
# Ten neighbours share the words "spoke wheel" and carry no fact that answers anything.
CHAIN = [
    {"id": "spoke-wheel", "topic": "Spoke wheel", "claim": "A spoke wheel has a rim held by tensioned spokes.",
     "triples": [["spoke wheel", "is_a", "rolling element"]]},
    {"id": "rolling", "topic": "Rolling element", "claim": "A round component that turns on an axle.",
     "triples": [["rolling element", "part_of", "drivetrain"]]},
    {"id": "drivetrain", "topic": "Drivetrain", "claim": "Everything that brings engine power to the road.",
     "triples": [["drivetrain", "is_a", "assembly"]]},
    {"id": "brake-pad", "topic": "Brake pad", "claim": "Friction material pressed on the disc.",
     "triples": [["pump regulator", "positively_regulates", "brake pad"]]},
]
NEIGHBOURS = [{"id": f"spoke-note-{i}", "topic": f"Spoke wheel part list {i}",
               "claim": f"Part {i} of the spoke wheel catalogue: spoke wheel parts."} for i in range(10)]


def build(tmp_path, units) -> KnowledgeBase:
    (tmp_path / "units.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    (tmp_path / "rules.tdb").write_text(RULES, encoding="utf-8")
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"))
    kb.ingest([str(tmp_path / "rules.tdb"), str(tmp_path / "units.jsonl")])
    return kb


@pytest.fixture
def kb(tmp_path):
    with build(tmp_path, CHAIN + NEIGHBOURS) as kb:
        yield kb


# -- relation phrases -------------------------------------------------------------------------------
READER = QuestionReader(SymbolMatcher(["wheel", "drivetrain", "pump_regulator"], []),
                        ["part_of", "regulates", "uses"], aliases={"is_a_component_of": "part_of"},
                        inverses={"has_part": "part_of"})


@pytest.mark.parametrize("text, expected", [
    # the relation key itself, in its forms
    ("What is the wheel part of?", ["wheel part_of ?x"]),
    ("What does the pump regulator regulate?", ["pump_regulator regulates ?x"]),
    # a passive: a relation word followed by "by" swaps the roles
    ("What is regulated by the pump regulator?", ["pump_regulator regulates ?x"]),
    ("What regulates the wheel?", ["?x regulates wheel"]),
    # a store alias
    ("Wheel is a component of what?", ["wheel part_of ?x"]),
    # an inverse name: "has part" asks part_of the other way round
    ("Drivetrain has part what?", ["?x part_of drivetrain"]),
    # extraction phrases, and their passive forms
    ("Which things belong to the drivetrain?", ["?x part_of drivetrain"]),
    ("What is used by the wheel?", ["wheel uses ?x"]),
    # two symbols: one ask for each
    ("Is the wheel part of the drivetrain?", ["?x part_of drivetrain", "wheel part_of ?x"]),
])
def test_relation_phrases_map_to_relations_and_roles(text, expected):
    assert sorted(a.describe() for a in READER.read(text).asks) == sorted(expected)


def test_phrases_of_relations_the_store_does_not_know_ask_nothing():
    reader = QuestionReader(SymbolMatcher(["wheel"], []), ["part_of"])
    assert reader.read("What does the wheel cause?").asks == ()     # "cause" is an extraction phrase
    assert reader.read("wheel").asks == () and reader.read("part of what?").asks == ()


def test_a_symbol_takes_its_words_before_a_relation_phrase_does():
    reader = QuestionReader(SymbolMatcher(["regulation_of_growth", "growth"], []), ["regulates"])
    q = reader.read("What does regulation of growth regulate?")
    assert [a.describe() for a in q.asks] == ["regulation_of_growth regulates ?x"]


# -- ranking ----------------------------------------------------------------------------------------
def test_units_carrying_an_answer_rank_above_lexical_neighbours(kb):
    res = search(kb, "What is spoke wheel part of?", profile=DEEP)
    ids = res.ids()
    # the chain (spoke-wheel, wheel), then the answer's own unit, ahead of every neighbour
    assert ids[:3] == ["spoke-wheel", "rolling", "drivetrain"]
    assert all(i.startswith("spoke-note") for i in ids[3:])
    assert res.results[1].proof.conclusion.object == "drivetrain"
    # the control: by fused score alone the chain's second unit is below every neighbour, and
    # kb-balanced drops it
    top = [t["unit_id"] for t in res.trace["fusion"]["top"]]
    assert all(top.index("rolling") > top.index(f"spoke-note-{i}") for i in range(10))
    assert "rolling" not in search(kb, "What is spoke wheel part of?", profile="kb-balanced").ids()


def test_the_subject_unit_is_kept_for_a_reverse_question(kb):
    res = search(kb, "Which things belong to the drivetrain?", profile=DEEP)
    # ?x part_of drivetrain: the best answer is asserted (rolling element, 1.0 x 0.8), the other
    # derived (spoke wheel, 0.6 x 0.8); the subject's unit, which carries no leaf, comes right
    # after the best chain, ahead of the second chain and of every neighbour
    assert res.ids()[:3] == ["rolling", "drivetrain", "spoke-wheel"]
    assert res.results[1].lanes["closure"]["tier"] == "subject"
    assert res.results[1].proof.conclusion == res.results[0].proof.conclusion


def test_no_facts_means_the_closure_lane_stays_silent(tmp_path):
    units = [{k: v for k, v in u.items() if k != "triples"} for u in CHAIN + NEIGHBOURS]
    with build(tmp_path, units) as kb:
        deep = search(kb, "What is spoke wheel part of?", profile=DEEP)
        flat = search(kb, "What is spoke wheel part of?", profile=replace(DEEP, expansion_depth=0))
        assert deep.ids() == flat.ids() and len(deep) == 8
        assert [r.score for r in deep] == [r.score for r in flat]
        assert deep.trace["lanes"]["closure"]["explain"]["answered"] is False


# -- the miss explained -----------------------------------------------------------------------------
def test_the_trace_says_which_chain_unit_a_cut_removed(kb):
    one = replace(DEEP, max_results=1)
    ex = search(kb, "What is spoke wheel part of?", profile=one).trace["lanes"]["closure"]["explain"]
    assert ex["answered"] is True
    assert ex["best_chain"] == {"fact": "spoke_wheel part_of drivetrain",
                                "units": {"spoke-wheel": "kept", "rolling": "max_results"}}
    assert ex["cut"] == {"rolling": "max_results", "drivetrain": "max_results"}
    assert ex["asks"][0]["answers"] == 1 and ex["asks"][0]["truncated"] is None


def test_the_trace_says_when_the_closure_found_no_answer(kb):
    ex = search(kb, "What does the drivetrain regulate?", profile=DEEP).trace["lanes"]["closure"]["explain"]
    assert ex["answered"] is False
    assert ex["question"]["asks"] == [{"relation": "regulates", "symbol": "drivetrain", "role": "subject",
                                       "phrase": "regulate"}]
    assert "drivetrain regulates ?x" in ex["reason"]
    # the control: the relation is answerable where facts exist (through the subrelation)
    ok = search(kb, "What does the pump regulator regulate?", profile=DEEP)
    assert ok.trace["lanes"]["closure"]["explain"]["answered"] is True and "brake-pad" in ok.ids()


def test_cut_reasons_follow_the_thresholds_in_order():
    ranked = [("a", 0.9), ("b", 0.5), ("c", 0.2), ("d", 0.1)]
    # min score 0.15 drops d; gap 0.25 of 0.9 = 0.225 drops c; b is cut by max_results
    assert cut_reasons(ranked, ["a"], ["b", "c", "d"], min_score=0.15, gap=0.25) == {
        "b": "max_results", "c": "gap", "d": "min_score"}
    # a pinned unit passes both thresholds: only max_results can remove it
    assert cut_reasons(ranked, ["a"], ["d"], min_score=0.15, gap=0.25, pinned=["d"]) == {"d": "max_results"}
