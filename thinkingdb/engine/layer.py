"""One-premise rules over a closed relation, answered from its single-source reach sets.

The default library's ``dependency_support`` (``?x depends_on ?y => ?y supports ?x``) reads
``depends_on``, which ``relation depends_on transitive.`` closes. ``? n5 supports ?x.`` needs the
facts ``?x depends_on n5``: one reverse search from ``n5`` (:mod:`thinkingdb.engine.reach`), not the
closure of the whole region ``n5`` belongs to (which the general engine derived, and which ended at
the time bound on a 1M-fact store with cycles).

A *layer rule* has one premise ``?a R ?b`` over a relation ``R`` that the single-source path closes,
two distinct variables, and a head relating the same two variables (either way round) by a relation
``H`` that no other rule derives, no rule reads, and that is not ``R``'s. Then, as in the full
closure, every fact ``R`` holds gives one derivation of its ``H`` fact — score ``weight × s`` (the
premise's score), depth one more than the premise's, the premise's own proof under it — unless that
``H`` fact is asserted (asserted facts win). Nothing else derives ``H``, so this is the full
closure's ``H``, fact by fact.

>>> from thinkingdb.engine.rules import compile_declarations
>>> from thinkingdb.model import Atom, Declaration, Rule, Var
>>> support = Rule("dependency_support", (Atom(Var("x"), "depends_on", Var("y")),),
...                Atom(Var("y"), "supports", Var("x")), 0.9)
>>> rules = compile_declarations([Declaration("depends_on", "transitive")]) + (support,)
>>> base, layers = split(rules)
>>> [r.name for r in base], {h: (r, swap, rule.name) for h, (r, swap, rule) in layers.items()}
(['depends_on_transitive'], {'supports': ('depends_on', True, 'dependency_support')})
"""

from __future__ import annotations

from ..model import PathInv, PathRel, Rule, Var
from .paths import relations

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # built only when a proof is read (the closure asks split() on every run)
    from .proofs import Proof

__all__ = ["Layers", "split"]


def _shape(rule: Rule) -> tuple[str, bool] | None:
    """``(R, swap)`` if ``rule`` is ``?a R ?b => ?a H ?b`` (swap False) or ``=> ?b H ?a`` (True)."""
    if len(rule.premises) != 1 or rule.negated or rule.constraints:
        return None
    p, h = rule.premises[0], rule.head
    if not (isinstance(p.subject, Var) and isinstance(p.object, Var)) or p.subject == p.object:
        return None
    if (h.subject, h.object) == (p.subject, p.object):
        return p.relation, False
    if (h.subject, h.object) == (p.object, p.subject):
        return p.relation, True
    return None


def split(rules: tuple[Rule, ...]):
    """``(the other rules, {H: (R, swap, rule)})``: the layer rules taken out of ``rules`` (that the
    others close ``R`` is checked by the caller), or ``(rules, {})``."""
    from .rules import transitive_relation
    closed = {transitive_relation(r) for r in rules} - {None}
    read = {p.relation for r in rules for p in r.premises + r.negated}
    heads: dict[str, int] = {}
    for r in rules:
        heads[r.head.relation] = heads.get(r.head.relation, 0) + 1
    layers, base = {}, []
    for rule in rules:
        shape = _shape(rule)
        h = rule.head.relation
        if shape is not None and shape[0] in closed and h not in closed and h not in read and heads[h] == 1:
            layers[h] = (shape[0], shape[1], rule)
        else:
            base.append(rule)
    return (tuple(base), layers) if layers else (rules, {})


class Layers(dict):
    """``{H id: (R id, swap, rule)}`` for a single-source result; its methods answer ``H`` facts
    from the result's ``R`` facts."""

    def premise(self, key: tuple[int, int, int]) -> tuple[int, int, int]:
        s, h, o = key
        r, swap, _ = self[h]
        return (o, r, s) if swap else (s, r, o)

    def score(self, view, key) -> float | None:
        c = view.asserted(key)
        if c is not None:
            return c
        s = view.fact_score(self.premise(key))
        return None if s is None else self[key[1]][2].weight * s

    def proof(self, view, key) -> Proof | None:
        from .proofs import Proof
        c = view.asserted(key)
        if c is not None:
            return Proof.asserted(view.ids.triple(key), c)
        p = view.fact_proof(self.premise(key))
        rule = self[key[1]][2]
        return None if p is None else Proof.derived(view.ids.triple(key), rule.name, rule.weight, (p,))

    def row(self, view, h: int, x: int, forward: bool, res: dict[int, float]) -> dict[int, float]:
        """``res`` (the asserted ``H`` facts at ``x``) with the derived ones: ``x H ?`` when
        ``forward``, else ``? H x``."""
        r, swap, rule = self[h]
        premises = (view.inn if swap == forward else view.out)(r, x)
        for y, s in premises.items():
            if y not in res:
                res[y] = rule.weight * s
        return res

    def ends(self, view, h: int, subjects: bool) -> set[int]:
        r, swap, _ = self[h]
        return set(view.objects(r) if swap == subjects else view.subjects(r))

    def keys(self, res, goals):
        """The derived facts the goals' patterns over layer relations ask for: per pattern with a
        constant end, its ``H`` facts and their ``R`` premises; a pattern with both ends free or a walk
        over ``H`` asks for every one (as the full closure counts them)."""
        ids, whole = res.ids, False
        for q in goals:
            for p in q.patterns:
                path, fwd = p.path, True
                while isinstance(path, PathInv):
                    path, fwd = path.path, not fwd
                if not isinstance(path, PathRel):
                    whole = whole or any(ids.find_rel(x) in self for x in relations(p.path))
                    continue
                h = ids.find_rel(path.relation)
                if h not in self:
                    continue
                s, o = (p.subject, p.object) if fwd else (p.object, p.subject)
                if isinstance(s, Var) and isinstance(o, Var):
                    whole = True
                    continue
                xs = [(ids.find_sym(t), t is s) for t in (s, o) if not isinstance(t, Var)]
                for x, forward in xs[:1]:
                    if x is None:
                        continue
                    other = None if len(xs) == 1 else ids.find_sym(o)
                    for y in self.row(res, h, x, forward, {}):
                        key = (x, h, y) if forward else (y, h, x)
                        if other is None or key[2] == other:
                            yield from self._derived(res, key)
        if whole:
            for h in self:
                for s in self.ends(res, h, True):
                    for o in self.row(res, h, s, True, {}):
                        yield from self._derived(res, (s, h, o))

    def _derived(self, res, key):
        if res.asserted(key) is None:
            yield key
        prem = self.premise(key)
        if res.asserted(prem) is None:
            yield prem
