"""Stratified negation: compile-time stratification, results against a naive oracle, proofs that
show the absence relied on, and bounds (a truncated lower stratum is never trusted)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.engine.proofs import check_proof
from thinkingdb.engine.rules import StratificationError, strata
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source
from thinkingdb.model import Atom, Fact, Limits, Rule, Triple, Var


def run(text: str, limits: Limits = Limits()):
    p = compile_source(text)
    g = FactGraph([f for f, _ in p.facts])
    rules = [r for r, _ in p.rules]
    return closure(g, rules, limits=limits), g, rules


CAPS = """
harbor requires sandboxing. harbor requires logging. harbor uses ploinky. ploinky provides sandboxing.
kestrel requires logging. kestrel uses syslogd. syslogd provides logging.
rule cap: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
rule lacks: ?x requires ?c, not ?x has_capability ?c => ?x lacks ?c.
"""


def test_negation_derives_exactly_the_missing_capabilities():
    res, _, _ = run(CAPS)
    lacks = {t for t in res.derived if t.relation == "lacks"}
    # harbor gets sandboxing through ploinky, kestrel gets logging through syslogd: only harbor/logging
    assert lacks == {Triple("harbor", "lacks", "logging")}
    assert res.truncated is None and res.stats.engine == "stratified"


def test_proof_shows_the_absence_relied_on_and_checks():
    res, g, rules = run(CAPS)
    proof = res.proof(Triple("harbor", "lacks", "logging"))
    assert [p.kind for p in proof.premises] == ["asserted", "absent"]
    assert proof.premises[1].conclusion == Triple("harbor", "has_capability", "logging")
    assert "absent" in proof.to_text()
    assert check_proof(proof, rules, g.confidence) == []
    # the checker notices an "absent" leaf that is in fact asserted
    bad = Fact("harbor", "has_capability", "logging")
    assert check_proof(proof, rules, FactGraph(list(g.facts()) + [bad]).confidence) != []


def test_cycle_through_negation_is_a_compile_error_naming_the_cycle():
    text = ("a e b.\nrule p_rule: ?x e ?y, not ?x q ?y => ?x p ?y.\nrule r_rule: ?x p ?y => ?x r ?y.\n"
            "rule q_rule: ?x r ?y => ?x q ?y.\n")
    with pytest.raises(ParseError) as info:
        compile_source(text, "cyc.tdb")
    d = info.value.diagnostics[0]
    assert (d.source, d.line, d.code) == ("cyc.tdb", 2, "cyclic_negation")
    assert d.reason == ("the rules are not stratifiable: a cycle through negation: p needs not q (rule p_rule), "
                        "q needs r (rule q_rule), r needs p (rule r_rule)")


def test_a_cycle_closed_by_a_declaration_is_a_compile_error_at_the_rule():
    # b needs not c (rule r0); `relation b subrelation_of c` makes c need b: no stratum order exists.
    # Before, the file compiled and ingested, and then every query of the store failed with no location.
    text = "n1 h n5.\nrelation b subrelation_of c.\nrule r0: ?x h ?y, not ?x c ?y => ?x b ?y.\n"
    with pytest.raises(ParseError) as info:
        compile_source(text, "decl.tdb")
    d = info.value.diagnostics[0]
    assert (d.source, d.line, d.column, d.code) == ("decl.tdb", 3, 1, "cyclic_negation")
    assert d.reason == ("the rules are not stratifiable: a cycle through negation: b needs not c (rule r0), "
                        "c needs b (rule b_subrelation_of_c)")
    for decl in ("relation c symmetric.", "relation c transitive.", "relation h subrelation_of c."):
        compile_source(text.replace("relation b subrelation_of c.", decl))   # no cycle: these compile


def test_an_ingest_that_closes_a_cycle_with_the_store_is_refused_and_changes_nothing(tmp_path):
    # each file compiles alone; together b needs not c (rule r0) and c needs b (the declaration).
    # Before, both ingests succeeded and then `? ?x c ?y.` itself failed with no file or line.
    from thinkingdb.api import open_kb
    from thinkingdb.errors import IngestError
    (tmp_path / "decl.tdb").write_text("relation b subrelation_of c.\n")
    (tmp_path / "rule.tdb").write_text("n1 h n5.\nn1 c n2.\nrule r0: ?x h ?y, not ?x c ?y => ?x b ?y.\n")
    for first, second in (("decl.tdb", "rule.tdb"), ("rule.tdb", "decl.tdb")):
        with open_kb(str(tmp_path / f"{first}.sqlite"), default_rules=False) as kb:
            kb.ingest([str(tmp_path / first)])
            before = kb.stats()
            with pytest.raises(IngestError) as info:
                kb.ingest([str(tmp_path / second)])
            d = info.value.diagnostics[0]
            assert (d.source, d.line, d.column, d.code) == (str(tmp_path / "rule.tdb"), 3, 1, "cyclic_negation")
            assert "b needs not c (rule r0), c needs b (rule b_subrelation_of_c)" in d.reason
            assert kb.stats() == before
            assert len(kb.query("? ?x c ?y.").answers) == (1 if first == "rule.tdb" else 0)


def test_self_negation_is_refused():
    with pytest.raises(ParseError, match="ok needs not ok"):
        compile_source("rule r: ?x a ?y, not ?x ok ?y => ?x ok ?y.")


def test_strata_order_and_one_stratum_without_negation():
    x, y = Var("x"), Var("y")
    base = Rule("base", (Atom(x, "e", y),), Atom(x, "p", y))
    neg = Rule("neg", (Atom(x, "e", y),), Atom(x, "q", y), negated=(Atom(x, "p", y),))
    top = Rule("top", (Atom(x, "q", y),), Atom(x, "t", y), negated=(Atom(y, "q", x),))
    assert strata([top, neg, base]) == ((2,), (1,), (0,))
    assert strata([base, Rule("b2", (Atom(x, "p", y),), Atom(x, "p2", y))]) == ((0, 1),)
    with pytest.raises(StratificationError) as info:
        strata([Rule("n", (Atom(x, "e", y),), Atom(x, "p", y), negated=(Atom(y, "p", x),))])
    assert info.value.cycle == (("p", "n", True, "p"),)


def test_anonymous_variable_in_negation_means_any():
    res, _, _ = run("a owns k1. b owns k2. k2 broken yes. a person t. b person t. c person t.\n"
                    "rule ok: ?x person t, not ?x owns ?_ => ?x has_nothing t.\n")
    assert {t.subject for t in res.derived} == {"c"}


def test_truncated_lower_stratum_is_not_trusted():
    # a chain: reach is transitive; unreached(x) needs the complete reach relation
    facts = " ".join(f"n{i} next n{i + 1}." for i in range(6))
    text = (facts + " n0 start yes. " + " ".join(f"n{i} node yes." for i in range(7)) +
            "\nrule r0: ?x start yes, ?x next ?y => n0 reach ?y.\nrule r1: ?z reach ?x, ?x next ?y => ?z reach ?y."
            "\nrule un: ?x node yes, not n0 reach ?x => ?x unreached yes.\n")
    full, _, _ = run(text)
    assert {t.subject for t in full.derived if t.relation == "unreached"} == {"n0"}
    cut, _, _ = run(text, Limits(max_depth=2))
    assert cut.truncated == "depth"
    # with reach cut at depth 2 an absence proves nothing: no unreached fact is derived at all
    assert not [t for t in cut.derived if t.relation == "unreached"]
    cut, _, _ = run(text, Limits(max_derived=3))
    assert cut.truncated == "derived"
    assert not [t for t in cut.derived if t.relation == "unreached"]


# -- an independent oracle: naive stratified evaluation over plain sets --------------------------

def naive(facts: set[Triple], rules: list[Rule]) -> set[Triple]:
    known = set(facts)
    for stratum in strata(rules):
        changed = True
        while changed:
            changed = False
            for i in stratum:
                r = rules[i]
                for env in list(_matches(r.premises, frozenset(known), {})):
                    if all(not list(_matches((a,), known, env)) for a in r.negated):
                        h = Triple(*(env.get(t, t) if isinstance(t, Var) else t
                                     for t in (r.head.subject, r.head.relation, r.head.object)))
                        if h not in known:
                            known.add(h)
                            changed = True
    return known - facts


def _matches(atoms, known, env):
    if not atoms:
        yield env
        return
    a = atoms[0]
    for t in known:
        if t.relation != a.relation:
            continue
        new = dict(env)
        ok = True
        for term, val in ((a.subject, t.subject), (a.object, t.object)):
            if isinstance(term, Var):
                if term.anonymous:
                    continue
                if new.setdefault(term, val) != val:
                    ok = False
            elif term != val:
                ok = False
        if ok:
            yield from _matches(atoms[1:], known, new)


SYMS = ["a", "b", "c", "d"]
RELS = ["e", "f"]
X, Y, Z = Var("x"), Var("y"), Var("z")


@st.composite
def programs(draw):
    facts = draw(st.sets(st.builds(Triple, st.sampled_from(SYMS), st.sampled_from(RELS), st.sampled_from(SYMS)),
                         max_size=10))
    rules = [Rule("t", (Atom(X, "e", Y), Atom(Y, "p", Z)), Atom(X, "p", Z)), Rule("b", (Atom(X, "e", Y),), Atom(X, "p", Y))]
    shapes = [((Atom(X, "f", Y),), (Atom(X, "p", Y),)), ((Atom(X, "f", Y),), (Atom(Y, "p", X),)),
              ((Atom(X, "p", Y), Atom(Y, "f", Z)), (Atom(X, "e", Z),)), ((Atom(X, "f", Y),), (Atom(X, "e", Var("_#1")),))]
    for k, (pos, neg) in enumerate(draw(st.lists(st.sampled_from(shapes), min_size=1, max_size=3))):
        head_rel = draw(st.sampled_from(["q", "s"])) if k else "q"
        head = Atom(pos[0].subject, head_rel, pos[-1].object)
        rules.append(Rule(f"n{k}", pos, head, negated=neg))
    if draw(st.booleans()):   # a third stratum: negating the negation's result
        rules.append(Rule("top", (Atom(X, "f", Y),), Atom(X, "u", Y), negated=(Atom(X, "q", Y),)))
    return facts, rules


@settings(max_examples=60, deadline=None)
@given(programs())
def test_stratified_closure_matches_a_naive_oracle(program):
    facts, rules = program
    try:
        strata(rules)
    except StratificationError:
        return
    g = FactGraph([Fact(t.subject, t.relation, t.object) for t in facts])
    res = closure(g, rules)
    assert set(res.derived) - facts == naive(facts, rules)
    for t in itertools.islice(res.derived, 5):
        assert check_proof(res.proof(t), rules, g.confidence) == []
