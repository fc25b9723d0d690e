"""Shared hypothesis strategies: small fact graphs over few symbols (so cycles are common) and rule
sets with one to three premises, constants, repeated variables and weights below one."""

from __future__ import annotations

from hypothesis import strategies as st

from thinkingdb.model import Atom, Declaration, Fact, Rule, Var

SYMBOLS = ("a", "b", "c", "d", "e")
RELATIONS = ("r", "s", "t")
CONFIDENCES = (1.0, 0.9, 0.5, 0.25)
WEIGHTS = (1.0, 0.95, 0.5)
VARS = tuple(Var(n) for n in "xyzw")


def facts(symbols=SYMBOLS, relations=RELATIONS, confidences=CONFIDENCES, max_size=14):
    """Lists of facts; duplicates allowed (the graph keeps the highest confidence)."""
    return st.lists(st.builds(Fact, st.sampled_from(symbols), st.sampled_from(relations),
                              st.sampled_from(symbols), st.sampled_from(confidences)),
                    min_size=1, max_size=max_size)


@st.composite
def rules(draw, relations=RELATIONS, max_premises=3, allow_constants=True):
    """One rule: premises over variables (sometimes a constant), head variables taken from the body."""
    n = draw(st.integers(1, max_premises))
    term = st.sampled_from(VARS[:n + 1])
    if allow_constants:
        term = st.one_of(term, term, term, st.sampled_from(SYMBOLS[:2]))
    premises = tuple(Atom(draw(term), draw(st.sampled_from(relations)), draw(term)) for _ in range(n))
    body_vars = sorted({v for p in premises for v in p.variables()})
    head_term = st.sampled_from(body_vars) if body_vars else st.sampled_from(SYMBOLS[:2])
    if allow_constants and body_vars:
        head_term = st.one_of(head_term, head_term, head_term, st.sampled_from(SYMBOLS[:2]))
    head = Atom(draw(head_term), draw(st.sampled_from(relations)), draw(head_term))
    return Rule(f"rule{draw(st.integers(0, 10**6))}", premises, head, draw(st.sampled_from(WEIGHTS)))


def rule_sets(max_rules=3, **kw):
    return st.lists(rules(**kw), min_size=1, max_size=max_rules, unique_by=lambda r: r.name)


def declarations(relations=RELATIONS):
    kinds = st.sampled_from(("transitive", "symmetric", "inverse", "subrelation_of"))

    @st.composite
    def one(draw):
        kind = draw(kinds)
        rel = draw(st.sampled_from(relations))
        other = draw(st.sampled_from([r for r in relations if r != rel])) if kind in ("inverse", "subrelation_of") else None
        return Declaration(rel, kind, other)

    return st.lists(one(), max_size=3)
