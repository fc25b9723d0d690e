"""``why not``: why a fact is missing.

The closure runs (full mode, within the limits) for the rules that can conclude the fact's relation.
If the fact holds after all, the answer is its proof. Otherwise each rule whose head can be the fact is
tried: its head is bound to the fact, then its premises are matched in order over the asserted and
derived facts, and the match that gets furthest is reported -- the first premise with no matching fact
(``missing``), or, when every premise matched, the comparison that failed on every such match
(``comparison``, with the values of the first), or the ``not`` premise whose fact exists (``blocked``,
with that fact's proof). The search is bounded (``max_steps`` candidate facts); ``cut`` says when it stopped
early, and ``truncated`` when the closure itself was cut short (the fact may then hold beyond the bound).

>>> from thinkingdb.engine.graph import FactGraph
>>> from thinkingdb.model import Atom, Fact, Rule, Triple, Var
>>> x, c = Var("x"), Var("c")
>>> lacks = Rule("lacks", (Atom(x, "requires", c),), Atom(x, "lacks", c), negated=(Atom(x, "has", c),))
>>> g = FactGraph([Fact("h", "requires", "logging"), Fact("h", "has", "logging")])
>>> print(why_not(Triple("h", "lacks", "logging"), g, [lacks]).to_text())
h lacks logging does not hold
rule lacks: blocked by not h has logging, which holds:
  h has logging  [score 1, asserted]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..arith import Constraint, run as run_constraints
from ..model import Limits, Node, Rule, Triple, Var, ground
from .closure import closure
from .proofs import Proof
from .rules import relevant_rules

__all__ = ["why_not", "WhyNot", "Failure"]


@dataclass(frozen=True)
class Failure:
    """Why one rule did not conclude the fact: ``kind`` is ``missing`` (``premise`` had no match under
    ``bindings``), ``comparison`` (every premise matched, but ``premise``, a comparison shown with its
    values, did not hold), ``blocked`` (the ``not`` premise matched ``blocker``) or ``bounds`` (every premise
    held: only a bound of the run kept the rule from firing)."""

    rule: str
    kind: str
    premise: str
    bindings: tuple[tuple[str, str], ...] = ()
    blocker: Proof | None = None

    def to_json(self) -> dict:
        return {"rule": self.rule, "kind": self.kind, "premise": self.premise, "bindings": dict(self.bindings),
                "blocker": None if self.blocker is None else self.blocker.to_json()}


@dataclass(frozen=True)
class WhyNot:
    """The explanation: ``proof`` when the fact holds after all; else ``failures``, one per rule that
    could conclude it (empty: not asserted and no rule concludes its relation)."""

    fact: Triple
    proof: Proof | None
    failures: tuple[Failure, ...]
    truncated: str | None = None
    cut: bool = False

    @property
    def holds(self) -> bool:
        return self.proof is not None

    def to_text(self, labels: Mapping[str, str] | None = None) -> str:
        if self.proof is not None:
            return f"{self.fact} holds:\n" + self.proof.to_text(labels)
        lines = [f"{self.fact} does not hold"]
        if not self.failures:
            lines.append(f"it is not asserted, and no rule concludes {self.fact.relation}")
        for f in self.failures:
            if f.kind == "missing":
                lines.append(f"rule {f.rule}: no fact matches {f.premise}")
            elif f.kind == "comparison":
                lines.append(f"rule {f.rule}: every premise matches, but {f.premise} does not hold")
            elif f.kind == "blocked":
                lines.append(f"rule {f.rule}: blocked by not {f.premise}, which holds:")
                lines.extend("  " + ln for ln in f.blocker.to_text(labels).splitlines())
            else:
                lines.append(f"rule {f.rule}: every premise holds; a bound of the run kept it from firing")
        if self.truncated:
            lines.append(f"(the closure was cut short by the {self.truncated} bound: the fact may hold beyond it)")
        if self.cut:
            lines.append("(the search for matches stopped at its step bound)")
        return "\n".join(lines)

    def to_json(self) -> dict:
        t = self.fact
        return {"fact": {"subject": t.subject, "relation": t.relation, "object": t.object}, "holds": self.holds,
                "proof": None if self.proof is None else self.proof.to_json(),
                "failures": [f.to_json() for f in self.failures], "truncated": self.truncated, "cut": self.cut}


def why_not(triple: Triple, g, rules: Iterable[Rule] = (), *, limits: Limits = Limits(),
            max_steps: int = 100_000) -> WhyNot:
    """Explain why ``triple`` does not follow from the facts of ``g`` and ``rules`` (module docstring)."""
    rel_rules = relevant_rules(tuple(rules), {triple.relation})
    res = closure(g, rel_rules, limits=limits)
    proof = res.proof(triple)
    if proof is not None:
        return WhyNot(triple, proof, (), res.truncated)
    by_rel: dict[str, list[tuple[str, str]]] = {}
    for f in g.facts():
        by_rel.setdefault(f.relation, []).append((f.subject, f.object))
    for t in res.derived:
        by_rel.setdefault(t.relation, []).append((t.subject, t.object))
    steps = [0]
    failures = []
    for rule in rel_rules:
        if rule.head.relation != triple.relation:
            continue
        env = _unify(rule, triple)
        if env is None:
            continue
        failures.append(_explain(rule, env, by_rel, res, steps, max_steps))
    return WhyNot(triple, None, tuple(failures), res.truncated, steps[0] >= max_steps)


def _unify(rule: Rule, triple: Triple) -> dict | None:
    env: dict = {}
    for term, val in ((rule.head.subject, triple.subject), (rule.head.object, triple.object)):
        if isinstance(term, Var):
            if env.setdefault(term, val) != val:
                return None
        elif isinstance(term, Node):
            if ground(term, env) != val and not any(isinstance(a, Var) for a in term.args):
                return None
        elif term != val:
            return None
    return env


def _text(atom, env) -> str:
    def show(t):
        if isinstance(t, Var):
            return env.get(t, str(t))
        return ground(t, env) if isinstance(t, Node) else t
    return f"{show(atom.subject)} {atom.relation} {show(atom.object)}"


def _check(rule, env: dict) -> tuple[int, str] | None:
    """None when the rule's constraints hold under ``env`` (binding what they assign); else how many
    held and the first that fails, with its values. An assigned variable the head already bound must
    equal the value."""
    for i, c in enumerate(rule.constraints):
        if c.assigns and c.left in env:
            c = Constraint("=", c.left, c.right)
        if run_constraints([c], env) is None:
            return i, str(c) + _values(c, env)
    return None


def _values(c, env: dict) -> str:
    known = [f"{v}={env[v]}" for v in dict.fromkeys(c.variables()) if v in env]
    return f" (with {', '.join(known)})" if known else ""


def _explain(rule, env, by_rel, res, steps, max_steps) -> Failure:
    best = [-1, env]
    failed: list = []   # the full match a comparison rejected latest: (held, env, the comparison)

    def walk(k: int, env: dict) -> bool:
        if k > best[0]:
            best[0], best[1] = k, env
        if k == len(rule.premises):
            if not rule.constraints:
                return True
            env = dict(env)
            bad = _check(rule, env)
            if bad is None:
                best[1] = env
                return True
            if not failed or bad[0] > failed[0][0]:
                failed[:] = [(bad[0], env, bad[1])]
            return False
        a = rule.premises[k]
        for s, o in by_rel.get(a.relation, ()):
            steps[0] += 1
            if steps[0] >= max_steps:
                return False
            new = dict(env)
            if _bind(a.subject, s, new) and _bind(a.object, o, new) and walk(k + 1, new):
                return True
        return False

    complete = walk(0, env)
    k, env = best
    if not complete and failed:
        _, env, bad = failed[0]
        bindings = tuple(sorted((v.name, val) for v, val in env.items() if not v.anonymous))
        return Failure(rule.name, "comparison", bad, bindings)
    bindings = tuple(sorted((v.name, val) for v, val in env.items() if not v.anonymous))
    if not complete:
        return Failure(rule.name, "missing", _text(rule.premises[k], env), bindings)
    for a in rule.negated:
        s, o = ground(a.subject, env), ground(a.object, env)
        hit = [(s2, o2) for s2, o2 in by_rel.get(a.relation, ())
               if (s == "?_" or s2 == s) and (o == "?_" or o2 == o)]
        if hit:
            t = Triple(hit[0][0], a.relation, hit[0][1])
            return Failure(rule.name, "blocked", _text(a, env), bindings, res.proof(t) or _asserted(res, t))
    return Failure(rule.name, "bounds", "", bindings)


def _asserted(res, t: Triple) -> Proof:
    c = res.g.confidence(t)
    return Proof.asserted(t, 1.0 if c is None else c)


def _bind(term, val: str, env: dict) -> bool:
    if isinstance(term, Var):
        return env.setdefault(term, val) == val
    return term == val
