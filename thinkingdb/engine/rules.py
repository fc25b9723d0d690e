"""Relation declarations compiled to rules, rule-set helpers, and the default rule library.

A declaration is shorthand for one rule of weight 1.0 (SPEC §2, §5):

=========================================  ==========================================
``relation r transitive.``                 ``?x r ?y, ?y r ?z => ?x r ?z``
``relation r symmetric.``                  ``?x r ?y => ?y r ?x``
``relation part_of inverse has_part.``     ``?x part_of ?y => ?y has_part ?x`` (facts are stored as
                                           ``part_of``; this makes ``has_part`` queries answer)
``relation p subrelation_of q.``           ``?x p ?y => ?x q ?y``
=========================================  ==========================================

>>> from thinkingdb.model import Declaration
>>> [str(r) for r in compile_declarations([Declaration("depends_on", "transitive")])]
['rule depends_on_transitive @1: ?x depends_on ?y, ?y depends_on ?z => ?x depends_on ?z.']
"""

from __future__ import annotations

from ..model import Atom, Declaration, Limits, Node, Rule, Var

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Iterable

__all__ = ["compile_declarations", "default_rules_text", "default_rules", "default_rule_set",
           "precompiled_default_rules", "relevant_rules",
           "transitive_relation", "copy_rule", "strata", "needs_strata", "carries_score", "StratificationError"]

_X, _Y, _Z = Var("x"), Var("y"), Var("z")


def __getattr__(name: str):
    """``strata`` and ``StratificationError``, re-exported from :mod:`thinkingdb.stratify` on first use
    (a question whose rules have no ``not`` premise never stratifies them, nor loads that module)."""
    if name in ("strata", "StratificationError"):
        from .. import stratify
        return getattr(stratify, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compile_declaration(decl: Declaration) -> Rule:
    """The rule one declaration stands for (weight 1.0)."""
    r = decl.relation
    if decl.kind == "transitive":
        return Rule(f"{r}_transitive", (Atom(_X, r, _Y), Atom(_Y, r, _Z)), Atom(_X, r, _Z), 1.0)
    if decl.kind == "symmetric":
        return Rule(f"{r}_symmetric", (Atom(_X, r, _Y),), Atom(_Y, r, _X), 1.0)
    if decl.kind == "inverse":
        return Rule(f"{r}_inverse_{decl.other}", (Atom(_X, r, _Y),), Atom(_Y, decl.other, _X), 1.0)
    return Rule(f"{r}_subrelation_of_{decl.other}", (Atom(_X, r, _Y),), Atom(_X, decl.other, _Y), 1.0)


def compile_declarations(decls: Iterable[Declaration]) -> tuple[Rule, ...]:
    """Compile declarations to rules, one each, duplicates removed, in canonical order.

    >>> rules = compile_declarations([Declaration("part_of", "inverse", "has_part"),
    ...                               Declaration("neighbor_of", "symmetric")])
    >>> [str(r) for r in rules]
    ['rule neighbor_of_symmetric @1: ?x neighbor_of ?y => ?y neighbor_of ?x.', 'rule part_of_inverse_has_part @1: ?x part_of ?y => ?y has_part ?x.']

    With ``relation c inverse b`` among them, facts of b are stored as c reversed, so the other
    declarations read b as c reversed, as a store reads them (:func:`thinkingdb.normalize.orient_rules`):

    >>> [str(r) for r in compile_declarations([Declaration("c", "inverse", "b"),
    ...                                        Declaration("b", "subrelation_of", "h")])][0]
    'rule b_subrelation_of_h @1: ?y c ?x => ?x h ?y.'
    """
    decls = sorted(set(decls))
    inverses = {d.other: d.relation for d in decls if d.kind == "inverse" and d.other}
    if not inverses:
        return tuple(compile_declaration(d) for d in decls)
    from ..normalize import orient_rules
    # the inverse's own rule stays as written (it derives b from c, for a question asked over b unoriented)
    return tuple(compile_declaration(d) if d.kind == "inverse" else orient_rules([compile_declaration(d)], inverses)[0]
                 for d in decls)


def default_rules_text() -> str:
    """The source of the default rule library shipped as ``thinkingdb/data/default_rules.tdb``.

    >>> "relation depends_on transitive." in default_rules_text()
    True
    """
    import os
    import sys
    # the package's loader reads it (a zip too), as pkgutil.get_data does without importing pkgutil
    # (~0.4 ms; importlib.resources ~7 ms)
    pkg = sys.modules[__package__.partition(".")[0]]
    data = pkg.__spec__.loader.get_data(os.path.join(os.path.dirname(pkg.__file__), "data", "default_rules.tdb"))
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")   # universal newlines, as text mode


def default_rules() -> tuple[Rule, ...]:
    """The default library compiled: its rules plus its declarations as rules.

    >>> sorted(r.name for r in default_rules())[:3]
    ['capability', 'capability_through_dependency', 'causal_chain']
    """
    rules, decls = default_rule_set()
    return rules + compile_declarations(decls)


def default_rule_set() -> tuple[tuple[Rule, ...], tuple[Declaration, ...]]:
    """The default library's rules and declarations, as compiling ``data/default_rules.tdb`` gives
    them: from its precompiled form (:mod:`thinkingdb.engine.rulelib`) when that was made from the
    library's current text, else compiled now.

    >>> rules, decls = default_rule_set()
    >>> rules[0].name, decls
    ('capability', (Declaration(relation='depends_on', kind='transitive', other=None),))
    """
    got = precompiled_default_rules()
    if got is not None:
        return got
    from ..language import compile_source  # the language layer sits above the engine

    program = compile_source(default_rules_text(), "<default rules>")
    return tuple(r for r, _ in program.rules), tuple(d for d, _ in program.declarations)


def library_rules() -> tuple[Rule, ...]:
    """The default rule library's rules with its declarations compiled (what a question applies)."""
    rules, decls = default_rule_set()
    return tuple(rules) + tuple(compile_declarations(decls))


def precompiled_default_rules() -> tuple[tuple[Rule, ...], tuple[Declaration, ...]] | None:
    """The default library's rules and declarations from :mod:`thinkingdb.engine.rulelib`, or None when
    that module was written from other text than ``data/default_rules.tdb`` now holds (the library was
    edited since: compile it; ``python -m thinkingdb.engine.rules`` writes it again). Reading it costs
    a cold process ~0.2 ms where parsing and compiling the library cost ~1.5 ms (issue 20)."""
    from . import rulelib
    if rulelib.SOURCE != default_rules_text():
        return None
    return rulelib.RULES, rulelib.DECLARATIONS


def write_rulelib(path: str | None = None) -> str:
    """Write :mod:`thinkingdb.engine.rulelib` (to ``path``, default beside this module) from the
    library's current text, compiled; returns the module's text."""
    import os
    from ..language import compile_source

    text = default_rules_text()
    program = compile_source(text, "<default rules>")
    rules = "".join(f"    {r!r},\n" for r, _ in program.rules)
    decls = "".join(f"    {d!r},\n" for d, _ in program.declarations)
    body = (f'"""The default rule library (``thinkingdb/data/default_rules.tdb``) compiled, written by\n'
            f'``python -m thinkingdb.engine.rules`` from ``SOURCE``: do not edit.\n'
            f':func:`thinkingdb.engine.rules.precompiled_default_rules` uses it only while ``SOURCE`` is the\n'
            f'library\'s text."""\n\n'
            f"from ..model import Atom, Declaration, Rule, Var\n\n"
            f"SOURCE = {text!r}\n\n"
            f"RULES = (\n{rules})\n\n"
            f"DECLARATIONS = (\n{decls})\n")
    with open(path or os.path.join(os.path.dirname(__file__), "rulelib.py"), "w", encoding="utf-8") as fh:
        fh.write(body)
    return body


if __name__ == "__main__":
    write_rulelib()


def relevant_rules(rules: Iterable[Rule], relations: Iterable[str]) -> tuple[Rule, ...]:
    """The rules that can contribute facts of ``relations``: those whose head relation is wanted,
    then, recursively, those deriving their premises' relations. Order is kept; a rule given twice
    (equal name, premises, head and weight) is kept once, else noisy-or counted its derivations twice.

    >>> from thinkingdb.model import Declaration
    >>> rs = compile_declarations([Declaration("a", "transitive"), Declaration("b", "transitive")])
    >>> [r.name for r in relevant_rules(rs, ["a"])]
    ['a_transitive']
    """
    rules = tuple(dict.fromkeys(rules))   # one rule stated twice (stored and --rules) derives once
    wanted = set(relations)
    keep: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, rule in enumerate(rules):
            if i not in keep and rule.head.relation in wanted:
                keep.add(i)
                wanted.update(p.relation for p in rule.premises + rule.negated)
                changed = True
    return tuple(r for i, r in enumerate(rules) if i in keep)


def needs_strata(rules: Iterable[Rule]) -> bool:
    """Whether a rule set needs the stratified reference engine: a ``not`` premise, a comparison or
    assignment (``constraints``), or a head that makes statement nodes (an n-ary head). Fast paths and other engines must decline such sets;
    :func:`strata` gives the order to evaluate them in.

    >>> x = Var("x")
    >>> needs_strata([Rule("r", (Atom(x, "a", "b"),), Atom(x, "c", "d"), negated=(Atom(x, "e", "f"),))])
    True
    """
    return any(r.negated or r.constraints or isinstance(r.head.subject, Node) or isinstance(r.head.object, Node)
               for r in rules)


def carries_score(head) -> bool:
    """Whether a derived fact of this rule head carries the derivation's score. A statement's score
    lives on its first role edge, as an asserted n-ary fact's confidence does: the edges of roles 2
    and up score 1, so that matching the whole statement scores what the statement does.

    >>> carries_score(Atom(Node("f", (Var("x"), Var("y"))), "f.1", Var("x"))), carries_score(Atom(Node("f", (Var("x"), Var("y"))), "f.2", Var("y")))
    (True, False)
    """
    if not isinstance(head.subject, Node):
        return True
    index = head.relation.rsplit(".", 1)[-1]
    return not (index.isdigit() and int(index) >= 2)


def transitive_relation(rule: Rule) -> str | None:
    """``r`` if the rule is ``?x r ?y, ?y r ?z => ?x r ?z`` (in either premise order), else None.

    >>> transitive_relation(compile_declaration(Declaration("depends_on", "transitive")))
    'depends_on'
    """
    if len(rule.premises) != 2 or rule.negated:
        return None
    h = rule.head
    rels = {p.relation for p in rule.premises} | {h.relation}
    if len(rels) != 1 or not all(isinstance(t, Var) for p in rule.premises for t in (p.subject, p.object)):
        return None
    if not (isinstance(h.subject, Var) and isinstance(h.object, Var)) or h.subject == h.object:
        return None
    for a, b in (rule.premises, rule.premises[::-1]):
        if (a.subject == h.subject and a.object == b.subject and b.object == h.object
                and len({h.subject, a.object, h.object}) == 3):
            return h.relation
    return None


def copy_rule(rule: Rule) -> tuple[str, str] | None:
    """``(s, r)`` if the rule is ``?x s ?y => ?x r ?y`` with ``s != r`` (a subrelation), else None.

    >>> copy_rule(compile_declaration(Declaration("is_a", "subrelation_of", "ancestor")))
    ('is_a', 'ancestor')
    """
    if len(rule.premises) != 1 or rule.negated:
        return None
    (p,), h = rule.premises, rule.head
    if (isinstance(p.subject, Var) and isinstance(p.object, Var) and p.subject != p.object
            and h.subject == p.subject and h.object == p.object and p.relation != h.relation):
        return p.relation, h.relation
    return None


def fast_path_plan(rules: tuple[Rule, ...], limits: Limits, alternatives: int):
    """``{R: (transitive rule index, [(S, subrelation rule index), ...])}`` or None."""
    if alternatives or limits.max_depth is not None or not rules:
        return None
    trans: dict[str, int] = {}
    copies: list[tuple[str, str, int]] = []
    for i, rule in enumerate(rules):
        r = transitive_relation(rule)
        if r is not None:
            if r in trans:
                return None
            trans[r] = i
            continue
        c = copy_rule(rule)
        if c is None:
            return None
        copies.append((c[0], c[1], i))
    if any(r not in trans or s in trans for s, r, _ in copies):
        return None
    return {r: (i, sorted((s, j) for s, rr, j in copies if rr == r)) for r, i in trans.items()}
