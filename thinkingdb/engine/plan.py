"""The closure plan: a rule set compiled to per-round relational operations (docs/closure.md).

The plan says *what* each round computes, in terms any executor can run (the numpy executor of
:mod:`thinkingdb.engine.columnar` today; a dataframe engine such as Spark later):

* a :class:`Program` is the static part: the rules, each with its variables, the variables the head
  leaves out (``extras``, kept as provenance so proofs rebuild exactly) and the indexes it may need;
* a :class:`RoundPlan` is one round: one :class:`Pipeline` per rule (round 1: over every known fact)
  or per rule and premise whose relation changed in the previous round (later rounds: that premise
  reads only the previous round's *delta*, the other premises read every known fact);
* a pipeline is a start premise then :class:`Join` steps in order. A step's ``mode`` says how it
  meets the rows so far: ``check`` (both ends known: keep rows whose fact exists), ``by_subject`` /
  ``by_object`` (one end known: expand each row by that end's index), ``scan`` (no end known: cross
  product with the premise's facts).

Every pipeline then ends the same way (the executor's part, fixed by the semantics in
docs/closure.md): head key per row, score ``weight × Π premise scores`` in premise order, *difference*
(drop heads that are asserted or known with a score at least as high), *reduce* (per head: highest
score, then rule name, then the extras' canonical ranks), and *apply* at the end of the round.

The planner (:func:`plan_round`) orders the steps greedily by the rows each step is expected to
produce per input row, from what :class:`Sizes` reports: ``check`` first, then the smallest of a join
on a bound variable (relation size over distinct values of that end), a constant-only premise (the
exact number of facts matching its constants) or a scan. A constant never counts as a join: a premise
bound only by constants multiplies every row by all of its matches.

>>> from thinkingdb.model import Atom, Rule, Var
>>> x, y, z = Var("x"), Var("y"), Var("z")
>>> prog = Program.of([Rule("tc", (Atom(x, "e", y), Atom(y, "p", z)), Atom(x, "p", z))])
>>> prog.rules[0].extras
(Var(name='y'),)
>>> print(plan_round(prog, 2, FlatSizes(100), {"p": 10}).describe())
round 2
  tc [delta p]: ?y p ?z (delta) -> ?x e ?y (by_object)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol

from ..model import Atom, Rule, Var

__all__ = ["Program", "RuleIR", "Join", "Pipeline", "RoundPlan", "Sizes", "FlatSizes", "plan_round", "unsupported"]

MODES = ("all", "delta", "check", "by_subject", "by_object", "scan")


@dataclass(frozen=True, slots=True)
class RuleIR:
    """One rule as the executors see it: its variables in order of first occurrence in the premises
    and ``extras``, the body variables the head does not bind (in that same order)."""

    index: int
    rule: Rule
    variables: tuple[Var, ...]
    extras: tuple[Var, ...]


@dataclass(frozen=True, slots=True)
class Program:
    """The static part of a plan: the rules in their given order."""

    rules: tuple[RuleIR, ...]

    @staticmethod
    def of(rules) -> "Program":
        out = []
        for i, rule in enumerate(rules):
            seen: dict[Var, None] = {}
            for p in rule.premises:
                for t in (p.subject, p.object):
                    if isinstance(t, Var):
                        seen.setdefault(t, None)
            head = set(rule.head.variables())
            out.append(RuleIR(i, rule, tuple(seen), tuple(v for v in seen if v not in head)))
        return Program(tuple(out))

    def relations(self) -> list[str]:
        """Every relation a premise or a head names, sorted."""
        return sorted({a.relation for r in self.rules for a in r.rule.premises + (r.rule.head,)})

    def head_relations(self) -> set[str]:
        return {r.rule.head.relation for r in self.rules}


@dataclass(frozen=True, slots=True)
class Join:
    """One premise read by a pipeline: ``mode`` (see the module docstring) and the variables it binds."""

    premise: int
    atom: Atom
    mode: str
    binds: tuple[Var, ...]

    def __str__(self) -> str:
        return f"{self.atom} ({self.mode})"


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Rule ``rule`` evaluated from ``start`` (mode ``all`` in round 1, ``delta`` after), then ``steps``."""

    rule: int
    start: Join
    steps: tuple[Join, ...]


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """Everything round ``round`` evaluates, then reduces and applies as one step."""

    round: int
    pipelines: tuple[Pipeline, ...]
    program: Program

    def describe(self) -> str:
        """One line per pipeline: rule name, the delta it reads, then the steps in order."""
        lines = [f"round {self.round}"]
        for pl in self.pipelines:
            name = self.program.rules[pl.rule].rule.name
            tag = "all" if pl.start.mode == "all" else f"delta {pl.start.atom.relation}"
            lines.append(f"  {name} [{tag}]: " + " -> ".join(str(j) for j in (pl.start,) + pl.steps))
        return "\n".join(lines)


class Sizes(Protocol):
    """What the planner asks the executor about the known facts."""

    def size(self, relation: str) -> int: ...

    def fanout(self, relation: str, end: int) -> float:
        """Facts per distinct value of the subject (``end`` 0) or object (1)."""

    def matches(self, atom: Atom) -> int:
        """Facts matching the atom's constants (its relation's size when it has none)."""


class FlatSizes:
    """Every relation the same size ``n`` with fanout 1 (examples and tests)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def size(self, relation: str) -> int:
        return self.n

    def fanout(self, relation: str, end: int) -> float:
        return 1.0

    def matches(self, atom: Atom) -> int:
        return self.n



def _estimate(atom: Atom, bound: set[Var], sizes: Sizes) -> tuple[float, str]:
    """Rows a step over ``atom`` yields per input row, and its mode."""
    known = [not isinstance(t, Var) or t in bound for t in (atom.subject, atom.object)]
    if atom.subject == atom.object and isinstance(atom.subject, Var) and not known[0]:
        return float(sizes.matches(atom)), "scan"
    if known[0] and known[1]:
        return 0.0, "check"
    joined = [isinstance(t, Var) and t in bound for t in (atom.subject, atom.object)]
    if joined[0] or joined[1]:
        end = 0 if joined[0] else 1
        return sizes.fanout(atom.relation, end), "by_subject" if end == 0 else "by_object"
    if known[0] or known[1]:   # bound only by a constant: every row meets every match
        return float(sizes.matches(atom)), "by_subject" if known[0] else "by_object"
    return float(sizes.matches(atom)), "scan"


def _pipeline(ir: RuleIR, start: int, mode: str, sizes: Sizes) -> Pipeline:
    prem = ir.rule.premises
    bound = set(prem[start].variables())
    first = Join(start, prem[start], mode, tuple(dict.fromkeys(prem[start].variables())))
    rest = [i for i in range(len(prem)) if i != start]
    steps = []
    while rest:
        best = min(rest, key=lambda i: (_estimate(prem[i], bound, sizes)[0], i))
        rest.remove(best)
        new = tuple(v for v in dict.fromkeys(prem[best].variables()) if v not in bound)
        steps.append(Join(best, prem[best], _estimate(prem[best], bound, sizes)[1], new))
        bound.update(new)
    return Pipeline(ir.index, first, tuple(steps))


def plan_round(program: Program, round_no: int, sizes: Sizes, delta: Mapping[str, int] | None) -> RoundPlan:
    """The pipelines of one round. ``delta``: facts new or improved in the previous round per
    relation (None in round 1, where each rule starts at its premise with the fewest matches)."""
    pipelines = []
    for ir in program.rules:
        prem = ir.rule.premises
        if delta is None:
            start = min(range(len(prem)), key=lambda k: (sizes.matches(prem[k]), k))
            pipelines.append(_pipeline(ir, start, "all", sizes))
        else:
            for k, p in enumerate(prem):
                if delta.get(p.relation):
                    pipelines.append(_pipeline(ir, k, "delta", sizes))
    return RoundPlan(round_no, tuple(pipelines), program)


def unsupported(rules: tuple[Rule, ...], alternatives: int) -> str | None:
    """Why the columnar engine cannot run this closure (the reference engine then does), or None.

    >>> from thinkingdb.model import Atom, Rule, Var
    >>> x, y = Var("x"), Var("y")
    >>> unsupported((Rule("r", (Atom(x, "a", y),), Atom(y, "b", x)),), 2)
    'alternatives'
    """
    if alternatives:
        return "alternatives"
    if len({r.name for r in rules}) != len(rules):
        return "duplicate rule names"
    if any(getattr(p, "negated", False) for r in rules for p in r.premises) or any(
            getattr(r, "negated", ()) for r in rules):
        return "negation"
    if any(getattr(r, "constraints", ()) for r in rules):
        return "comparisons"
    return None
