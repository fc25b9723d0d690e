"""Relation phrases in their English forms (issue 16): auxiliaries in any inflection, function words
left out or put in, a phrase split by its symbol, fronted prepositions and objects, two keys named by
the same words, and asks deepened one depth at a time — on small hand-built stores."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from thinkingdb.api import KnowledgeBase
from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.language import compile_source
from thinkingdb.model import Fact, Limits, PathRel, Query, QueryPattern, Triple, Var
from thinkingdb.retrieval.answers import answer_asks
from thinkingdb.retrieval.expansion import SymbolMatcher
from thinkingdb.retrieval.pipeline import search
from thinkingdb.retrieval.profiles import ClosureBounds, get_profile
from thinkingdb.retrieval.question import QuestionReader

DEEP = replace(get_profile("kb-thinkingdb"), closure=ClosureBounds(timeout_ms=60_000.0))

READER = QuestionReader(SymbolMatcher(["wheel", "drivetrain", "pump_regulator"], []),
                        ["part_of", "regulates", "uses", "is_a"], aliases={"includes": "has_part"},
                        inverses={"has_part": "part_of"})

WHEEL_IN = ["wheel part_of ?x"]          # what the wheel is part of
PARTS_OF = ["?x part_of drivetrain"]     # the drivetrain's parts


@pytest.mark.parametrize("text, expected", [
    # the inverse name "has part" in any inflection of "have", with or without "as (a)"
    ("What does the drivetrain have part?", PARTS_OF),
    ("The drivetrain had part what?", PARTS_OF),
    ("Drivetrain has as a part what?", PARTS_OF),
    ("Drivetrain, having part what?", PARTS_OF),
    # the phrase split by its symbol: the symbol inside is the object of "has"
    ("What has the wheel as a part?", WHEEL_IN),
    ("Which assemblies have the wheel as part?", WHEEL_IN),
    # "is" in any form, and articles, may come between the words of "part of"
    ("What is the wheel a part of?", WHEEL_IN),
    ("What were the wheels a part of?", WHEEL_IN),   # "wheels" stems to the symbol "wheel"
    ("What is a part of the drivetrain?", PARTS_OF),
    # the part-whole phrases of the extraction table, both directions
    ("What contains the wheel?", WHEEL_IN),
    ("What does the drivetrain contain?", PARTS_OF),
    ("What is the wheel contained in?", WHEEL_IN),
    ("The drivetrain consists of what?", PARTS_OF),
    ("What is the drivetrain composed of?", PARTS_OF),
    # a fronted preposition ends the phrase; "by" stranded this way is a passive
    ("Of what is the wheel a part?", WHEEL_IN),
    ("By what is the wheel regulated?", ["?x regulates wheel"]),
    ("By what is the wheel used?", ["?x uses wheel"]),
    # a fronted object noun: "which parts does D have" is "D has parts"
    ("Which parts does the drivetrain have?", PARTS_OF),
    # a store alias of an inverse name reads the other way too
    ("What does the drivetrain include?", PARTS_OF),
    ("What includes the wheel?", WHEEL_IN),
    # the passive after the symbol: "what is W regulated by" asks who regulates W
    ("What is the wheel regulated by?", ["?x regulates wheel"]),
    ("What does the pump regulator regulate?", ["pump_regulator regulates ?x"]),
])
def test_relation_phrases_in_their_english_forms(text, expected):
    assert sorted(a.describe() for a in READER.read(text).asks) == sorted(expected)


def test_a_phrase_of_function_words_only_stands_as_written_and_yields_to_a_content_phrase():
    assert [a.describe() for a in READER.read("The wheel is a what?").asks] == ["wheel is_a ?x"]
    # "is a part of": the content phrase "part of" wins over "is a"
    assert [a.describe() for a in READER.read("What is a part of the drivetrain?").asks] == PARTS_OF
    # "is" and "a" alone are function words: they ask nothing
    assert READER.read("the wheel is the drivetrain").relations == ()


def test_words_between_the_words_of_a_phrase_break_it():
    # "has" ... "part" with a content word (not a symbol) between them is no phrase
    assert READER.read("What has the wheel got, as a spare part?").asks == ()
    # at most one symbol inside a phrase
    assert READER.read("What has the wheel drivetrain as a part?").relations == ()


def test_keys_named_by_the_same_words_are_one_mention():
    m = SymbolMatcher(["vesicle_coat", "vesicle_coating", "coat_protein"], [])
    reader = QuestionReader(m, ["part_of"])
    q = reader.read("What is part of vesicle coating?")
    assert q.groups == (("vesicle_coat", "vesicle_coating"),)
    assert sorted(a.describe() for a in q.asks) == ["?x part_of vesicle_coat", "?x part_of vesicle_coating"]
    # no relation phrase and one mention: not a "how is A related to B" question
    assert reader.read("vesicle coating").asks == ()
    two = reader.read("How is coat protein related to vesicle coating?")
    assert len(two.groups) == 2 and {a.relation for a in two.asks} == {"*"}


def test_an_answer_for_one_mention_with_two_keys_is_strong_not_weak():
    g = FactGraph([Fact("coat_protein", "part_of", "vesicle_coat"), Fact("vesicle_coating", "is_a", "process")])
    reader = QuestionReader(SymbolMatcher(["vesicle_coat", "vesicle_coating", "coat_protein"], []), ["part_of"])
    q = reader.read("What is part of vesicle coating?")
    units = {Triple("coat_protein", "part_of", "vesicle_coat"): {"u1": 1.0}}
    exp = answer_asks(g, [], q, units, lambda u: True, {"coat_protein": ["u2"]}, depth=3, max_nodes=64,
                      max_derived=100, timeout_ms=10_000)
    # one mention: the answer is strong (1.0 x 0.8) and carried first; as two symbols it was weak
    assert exp.credits["u1"].tier == "strong" and exp.credits["u1"].score == pytest.approx(0.8)
    assert exp.priority[:2] == ("u1", "u2")


# -- deepening ----------------------------------------------------------------------------------------
CHAIN_RULES = [r for r, _ in compile_source(
    "rule t @1.0: ?x part_of ?y, ?y part_of ?z => ?x part_of ?z.\n"
    "rule r @0.9: ?x is_a ?y, ?y part_of ?z => ?x part_of ?z.").rules]
# spoke: one asserted part_of (depth 0), one through is_a (depth 1), one more through transitivity
# (depth 2): spoke part_of rim; spoke is_a rod, rod part_of frame => spoke part_of frame;
# rim part_of wheel => spoke part_of wheel (transitive, depth 1); frame part_of bike => depth 2
DEEPEN = FactGraph([Fact("spoke", "part_of", "rim"), Fact("spoke", "is_a", "rod"), Fact("rod", "part_of", "frame"),
                    Fact("rim", "part_of", "wheel"), Fact("frame", "part_of", "bike")])


def _answers(enough):
    reader = QuestionReader(SymbolMatcher(["spoke", "rim", "rod", "frame", "wheel", "bike"], []), ["part_of", "is_a"])
    exp = answer_asks(DEEPEN, CHAIN_RULES, reader.read("What is spoke part of?"), {}, lambda u: True, {}, depth=3,
                      max_nodes=64, max_derived=1000, timeout_ms=10_000, enough=enough)
    return exp.stats["asks"][0]


def test_an_ask_stops_deepening_once_it_has_enough_answers():
    one = _answers(1)      # depth 1: rim (asserted), wheel (transitive), frame (the rule) = 3 answers
    assert (one["depth"], one["answers"]) == (1, 3)
    four = _answers(4)     # depth 2 adds bike (spoke part_of frame, frame part_of bike)
    assert (four["depth"], four["answers"]) == (2, 4)
    # more than there are: nothing deeper exists after depth 2 (the exact depth report says so)
    assert (_answers(50)["depth"], _answers(50)["answers"]) == (2, 4)


@pytest.mark.parametrize("seed", range(12))
def test_goal_directed_runs_without_exact_depth_steps_give_the_full_closures_answers(seed):
    """exact_steps=0 (depth budgets only) against the full reference closure as the oracle: the
    same answers with the same scores at every depth."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(14)]
    facts = {Fact(rng.choice(nodes), rng.choice(["is_a", "part_of"]), rng.choice(nodes)) for _ in range(26)}
    g = FactGraph(sorted(f for f in facts if f.subject != f.object))
    start = nodes[seed % len(nodes)]
    for depth in (1, 2, 3):
        lim = Limits(max_depth=depth, timeout_ms=60_000)
        full = closure(g, CHAIN_RULES, limits=lim, engine="reference")
        want = {o: round(v, 9) for o in nodes if (v := full.score(Triple(start, "part_of", o))) is not None}
        goal = [Query((QueryPattern(start, PathRel("part_of"), Var("x")),))]
        got = closure(g, CHAIN_RULES, limits=lim, goals=goal, exact_steps=0)
        have = {o: round(v, 9) for o in nodes if (v := got.score(Triple(start, "part_of", o))) is not None}
        assert have == want


# -- end to end -----------------------------------------------------------------------------------------
UNITS = [
    {"id": "spoke", "topic": "Spoke", "claim": "A thin rod from hub to rim.",
     "triples": [["spoke", "is_a", "rod"]]},
    {"id": "rod", "topic": "Rod", "claim": "A straight bar.", "triples": [["rod", "part_of", "wheel assembly"]]},
    {"id": "wheel-assembly", "topic": "Wheel assembly", "claim": "Hub, spokes and rim together."},
] + [{"id": f"note-{i}", "topic": f"Wheel assembly note {i}",
      "claim": f"Note {i} on the wheel assembly: what the wheel assembly has, its parts."} for i in range(10)]


@pytest.mark.parametrize("question", ["What does the wheel assembly have as a part?",
                                      "Which parts does the wheel assembly have?",
                                      "What does the wheel assembly contain?"])
def test_a_reverse_question_in_any_form_returns_the_chain_first(tmp_path, question):
    (tmp_path / "u.jsonl").write_text("".join(json.dumps(u) + "\n" for u in UNITS), encoding="utf-8")
    (tmp_path / "r.tdb").write_text("relation part_of inverse has_part.\n"
                                    "rule r @0.9: ?x is_a ?y, ?y part_of ?z => ?x part_of ?z.\n", encoding="utf-8")
    with KnowledgeBase(str(tmp_path / "kb.sqlite")) as kb:
        kb.ingest([str(tmp_path / "r.tdb"), str(tmp_path / "u.jsonl")])
        res = search(kb, question, profile=DEEP)
        # ?x part_of wheel_assembly: rod (asserted, 1.0 x 0.8) first with its unit, then the
        # subject's unit, then spoke (0.9 x 0.8) with its chain — ahead of every lexical note
        assert res.ids()[:3] == ["rod", "wheel-assembly", "spoke"]
        assert res.trace["lanes"]["closure"]["explain"]["answered"] is True


def test_competing_symbol_spans_go_to_the_words_as_written():
    m = SymbolMatcher(["regulation_of_pigmentation", "pigment_biosynthetic_process", "pigmentation"], [])
    reader = QuestionReader(m, ["regulates"])
    q = reader.read("Which terms are regulators of pigment biosynthetic process?")
    # "regulators of pigment" stems like "regulation of pigmentation", but no content word is
    # written as in that name; "pigment biosynthetic process" has all three
    assert [a.describe() for a in q.asks] == ["?x regulates pigment_biosynthetic_process"]
    # with no competitor, an inflected name still matches
    assert reader.read("What regulates pigmentations?").symbols == ("pigmentation",)
    assert reader.read("What does regulation of pigmentation regulate?").symbols == ("regulation_of_pigmentation",)


def test_a_relation_word_written_otherwise_is_left_to_the_relation_phrase():
    m = SymbolMatcher(["regulation_of_protein_localization", "protein_localization"], [])
    reader = QuestionReader(m, ["regulates"])
    # "regulator" stems like "regulation" but is written otherwise and is a relation word: with
    # both spans matching "protein localization" as written, the word goes to the phrase
    q = reader.read("Name a regulator of protein localization: what regulates it?")
    assert q.symbols == ("protein_localization",)
    assert "?x regulates protein_localization" in [a.describe() for a in q.asks]   # ("it": not read)
    # written as in the name, the longer symbol wins
    q = reader.read("What does regulation of protein localization regulate?")
    assert [a.describe() for a in q.asks] == ["regulation_of_protein_localization regulates ?x"]


@pytest.mark.parametrize("text, expected", [
    ("What parts make up the drivetrain?", PARTS_OF),
    ("The wheel makes up what?", WHEEL_IN),
    ("Which assemblies include the wheel as a part?", WHEEL_IN),
    ("What is the wheel included in?", WHEEL_IN),
    ("What does the drivetrain include?", PARTS_OF),
])
def test_the_part_whole_phrases_make_up_and_include(text, expected):
    reader = QuestionReader(SymbolMatcher(["wheel", "drivetrain"], []), ["part_of"])
    assert sorted(a.describe() for a in reader.read(text).asks) == sorted(expected)


@pytest.mark.parametrize("engine", ["reference", "columnar"])
def test_a_derived_cap_hit_within_the_depth_bound_is_reported_over_a_foreseen_depth_cut(engine):
    """Depth budgets only (exact_steps=0): the demand foresees that ``a r f`` lies past depth 2 and
    marks the run ``"depth"``; but the cap of one derived fact is hit in round 1, before any depth
    cut, and the full closure says ``"derived"`` (found by the hunt, with EXACT_STEPS shrunk to 3)."""
    chain = ["a", "b", "c", "d", "e", "f"]
    g = FactGraph([Fact(x, "r", y) for x, y in zip(chain, chain[1:])])
    rules = [r for r, _ in compile_source("rule t: ?x r ?y, ?y r ?z => ?x r ?z.").rules]
    lim = Limits(max_depth=2, max_derived=1, timeout_ms=60_000)
    full = closure(g, rules, limits=lim, engine="reference")
    # by hand: round 1 derives a r c, b r d, c r e, d r f — four new facts over a cap of one
    assert full.truncated == "derived"
    goal = [Query((QueryPattern("a", PathRel("r"), Var("u")),))]
    got = closure(g, rules, limits=lim, goals=goal, exact_steps=0, engine=engine)
    assert got.truncated == "derived"
    # and without the cap the same run reports the depth cut (a r f needs depth 3)
    assert closure(g, rules, limits=replace(lim, max_derived=None), goals=goal, exact_steps=0,
                   engine=engine).truncated == "depth"
