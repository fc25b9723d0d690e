"""Proof trees: the value, its text / JSON / Graphviz DOT exports, and an independent re-check.

A :class:`Proof` concludes one triple. ``kind`` says how:

* ``asserted`` — a leaf: the fact as stored, its score is its confidence, depth 0;
* ``rule`` — ``rule`` fired on ``premises`` (in the rule's premise order); score = weight × Π premise
  scores, depth = 1 + max premise depth;
* ``path`` — a property-path answer: ``premises`` are the steps walked in order (a step walked
  backwards through ``^r`` is the stored fact, read object → subject); score = Π step scores;
* ``query`` — a conjunction's answer: one premise per pattern, score = Π premise scores,
  ``conclusion`` is None;
* ``absent`` — a leaf under a rule with ``not`` premises: the fact that was *not* there (neither
  asserted nor derivable in a lower stratum) when the rule fired; score 1, depth 0. An anonymous
  position reads ``?_`` ("no such fact with any value here").
* ``check`` — a leaf under a rule with comparisons: one comparison or assignment with the values it
  held for (``5 <= 25``, ``3 = 1 + 2``: the assigned value first) in ``rule``; ``conclusion`` is None,
  score 1, depth 0.

>>> from thinkingdb.model import Triple
>>> a = Proof.asserted(Triple("achilleside", "uses", "ploinky"), 1.0)
>>> b = Proof.asserted(Triple("ploinky", "provides", "sandboxing"), 0.95)
>>> p = Proof.derived(Triple("achilleside", "has_capability", "sandboxing"), "capability", 0.95, (a, b))
>>> round(p.score, 6), p.depth
(0.9025, 1)
>>> print(p.to_text())
achilleside has_capability sandboxing  [score 0.9025, depth 1, rule capability @0.95]
├── achilleside uses ploinky  [score 1, asserted]
└── ploinky provides sandboxing  [score 0.95, asserted]
"""

from __future__ import annotations

import math

from ..arith import run as run_constraints
from ..model import Rule, Triple, Var, ground
from ..values import Value
from .rules import carries_score

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:
    from typing import Callable, Iterable, Mapping

__all__ = ["Proof", "check_proof"]

KINDS = ("asserted", "rule", "path", "query", "absent", "check")


class Proof(Value):
    """One derivation of ``conclusion`` (see the module docstring for the kinds). A frozen
    :class:`~thinkingdb.values.Value` (``alternatives`` not compared): a dataclass would cost a
    fresh ``why`` ~0.5 ms and the import of ``dataclasses``."""

    __slots__ = ("conclusion", "score", "depth", "kind", "rule", "weight", "premises", "alternatives")
    _compare = ("conclusion", "score", "depth", "kind", "rule", "weight", "premises")
    conclusion: Triple | None
    score: float
    depth: int
    kind: str
    rule: str | None
    weight: float
    premises: tuple[Proof, ...]
    alternatives: tuple[Proof, ...]

    def __init__(self, conclusion: Triple | None, score: float, depth: int, kind: str = "asserted",
                 rule: str | None = None, weight: float = 1.0, premises: tuple[Proof, ...] = (),
                 alternatives: tuple[Proof, ...] = ()) -> None:
        _set = object.__setattr__
        _set(self, "conclusion", conclusion)
        _set(self, "score", score)
        _set(self, "depth", depth)
        _set(self, "kind", kind)
        _set(self, "rule", rule)
        _set(self, "weight", weight)
        _set(self, "premises", premises)
        _set(self, "alternatives", alternatives)

    @staticmethod
    def asserted(triple: Triple, confidence: float) -> "Proof":
        return Proof(triple, confidence, 0)

    @staticmethod
    def absent(triple: Triple) -> "Proof":
        """A leaf: ``triple`` was absent, which a ``not`` premise relied on."""
        return Proof(triple, 1.0, 0, "absent")

    @staticmethod
    def check(text: str) -> "Proof":
        """A leaf: the comparison or assignment ``text`` held (``5 <= 25``, ``3 = 1 + 2``)."""
        return Proof(None, 1.0, 0, "check", text)

    @staticmethod
    def derived(triple: Triple, rule: str, weight: float, premises: tuple["Proof", ...]) -> "Proof":
        """A rule derivation; score and depth follow from the premises (product × weight, 1 + max)."""
        score = weight
        for p in premises:
            score *= p.score
        return Proof(triple, score, 1 + max(p.depth for p in premises), "rule", rule, weight, premises)

    def with_alternatives(self, alternatives: Iterable["Proof"]) -> "Proof":
        return Proof(self.conclusion, self.score, self.depth, self.kind, self.rule, self.weight,
                     self.premises, tuple(alternatives))

    def symbols(self) -> set[str]:
        """The symbol keys the tree shows: both ends of every node's conclusion, alternatives
        included (what a printed proof needs labels for).

        >>> a = Proof.asserted(Triple("x", "r", "y"), 1.0)
        >>> b = Proof.asserted(Triple("y", "r", "z"), 1.0)
        >>> sorted(Proof.derived(Triple("x", "s", "w"), "k", 1.0, (a, b)).symbols())
        ['w', 'x', 'y', 'z']
        """
        keys: set[str] = set()
        todo = [self]
        while todo:
            p = todo.pop()
            if p.conclusion is not None:
                keys.update((p.conclusion.subject, p.conclusion.object))
            todo.extend(p.premises)
            todo.extend(p.alternatives)
        return keys

    def facts(self) -> list[Triple]:
        """Every triple in the tree (conclusions of all nodes), depth first, without repeats."""
        seen: dict[Triple, None] = {}
        stack = [self]
        while stack:
            node = stack.pop()
            if node.conclusion is not None and node.kind not in ("path", "absent"):
                seen.setdefault(node.conclusion, None)
            stack.extend(reversed(node.premises))
        return list(seen)

    def leaves(self) -> list[Triple]:
        """The asserted facts the proof rests on."""
        out: dict[Triple, None] = {}
        stack = [self]
        while stack:
            node = stack.pop()
            if node.kind == "asserted":
                out.setdefault(node.conclusion, None)
            stack.extend(reversed(node.premises))
        return list(out)

    # -- exports ---------------------------------------------------------------------------------
    def _label(self, labels: Mapping[str, str] | None) -> str:
        if self.kind == "check":
            return str(self.rule)
        if self.conclusion is None:
            return "answer"
        t = self.conclusion
        if labels:
            return f"{labels.get(t.subject, t.subject)} {t.relation} {labels.get(t.object, t.object)}"
        return str(t)

    def _how(self) -> str:
        if self.kind == "asserted":
            return f"score {self.score:.6g}, asserted"
        if self.kind == "absent":
            return "absent: not asserted, not derived"
        if self.kind == "check":
            return "holds"
        if self.kind == "rule":
            return f"score {self.score:.6g}, depth {self.depth}, rule {self.rule} @{self.weight:g}"
        return f"score {self.score:.6g}, {self.kind}" + (f" {self.rule}" if self.rule else "")

    def to_text(self, labels: Mapping[str, str] | None = None) -> str:
        """An indented tree, one node per line; ``labels`` maps symbol keys to display labels."""
        lines = [f"{self._label(labels)}  [{self._how()}]"]

        def walk(node: Proof, prefix: str) -> None:
            for i, child in enumerate(node.premises):
                last = i == len(node.premises) - 1
                lines.append(f"{prefix}{'└── ' if last else '├── '}{child._label(labels)}  [{child._how()}]")
                walk(child, prefix + ("    " if last else "│   "))

        walk(self, "")
        for i, alt in enumerate(self.alternatives, 1):
            lines.append(f"alternative {i}:")
            lines.extend("  " + line for line in alt.to_text(labels).splitlines())
        return "\n".join(lines)

    def to_json(self) -> dict:
        """A JSON-ready dict; ``premises`` nest, ``alternatives`` only when there are some.

        >>> from thinkingdb.model import Triple
        >>> Proof.asserted(Triple("a", "r", "b"), 0.5).to_json()
        {'fact': {'subject': 'a', 'relation': 'r', 'object': 'b'}, 'score': 0.5, 'depth': 0, 'kind': 'asserted', 'rule': None, 'weight': 1.0, 'premises': []}
        """
        t = self.conclusion
        out = {"fact": None if t is None else {"subject": t.subject, "relation": t.relation, "object": t.object},
               "score": self.score, "depth": self.depth, "kind": self.kind, "rule": self.rule,
               "weight": self.weight, "premises": [p.to_json() for p in self.premises]}
        if self.alternatives:
            out["alternatives"] = [a.to_json() for a in self.alternatives]
        return out

    def to_dot(self, labels: Mapping[str, str] | None = None) -> str:
        """Graphviz DOT: one node per proof node, edges premise → conclusion labelled by the rule."""
        import json   # (DOT's quoting: a why question does not load json for its proof)
        lines = ["digraph proof {", "  rankdir=BT;", '  node [shape=box, fontname="Helvetica"];']
        ids: dict[int, str] = {}

        def node_id(node: Proof) -> str:
            key = id(node)
            if key not in ids:
                ids[key] = f"n{len(ids)}"
                style = ", style=rounded" if node.kind == "asserted" else ""
                text = f"{node._label(labels)}\n{node.score:.6g}"  # json.dumps writes \n, DOT's line break
                lines.append(f"  {ids[key]} [label={json.dumps(text, ensure_ascii=False)}{style}];")
            return ids[key]

        stack = [self]
        while stack:
            node = stack.pop()
            me = node_id(node)
            for child in node.premises:
                how = node.rule or node.kind
                lines.append(f"  {node_id(child)} -> {me} [label={json.dumps(how)}];")
                stack.append(child)
        lines.append("}")
        return "\n".join(lines)


def check_proof(proof: Proof, rules: Iterable[Rule], asserted: Callable[[Triple], float | None],
                *, rel_tol: float = 1e-9) -> list[str]:
    """Re-check a proof against the rules and the asserted facts; returns the problems found (empty
    when the proof holds). ``asserted(triple)`` gives an asserted confidence or None.

    >>> from thinkingdb.model import Triple
    >>> check_proof(Proof.asserted(Triple("a", "r", "b"), 0.5), [], {Triple("a", "r", "b"): 0.5}.get)
    []
    """
    by_name = {r.name: r for r in rules}
    problems: list[str] = []
    stack = [proof]
    while stack:
        node = stack.pop()
        stack.extend(node.premises)
        stack.extend(node.alternatives)
        where = str(node.conclusion)
        if node.kind == "check":
            continue   # checked with its rule (see _matches)
        if node.kind == "absent":
            if "?_" not in (node.conclusion.subject, node.conclusion.object) and asserted(node.conclusion) is not None:
                problems.append(f"{where}: relied on as absent but asserted")
            continue
        if node.kind == "asserted":
            conf = asserted(node.conclusion)
            if conf is None:
                problems.append(f"{where}: not asserted")
            elif not math.isclose(conf, node.score, rel_tol=rel_tol, abs_tol=1e-12):
                problems.append(f"{where}: score {node.score} is not its confidence {conf}")
            continue
        expected = node.weight if node.kind == "rule" else 1.0
        for p in node.premises:
            expected *= p.score
        if node.kind == "rule" and node.rule in by_name and not carries_score(by_name[node.rule].head):
            expected = 1.0   # a statement's role edge 2..: its score lives on role 1
        if not math.isclose(expected, node.score, rel_tol=rel_tol, abs_tol=1e-12):
            problems.append(f"{where}: score {node.score} != {expected}")
        if node.kind == "rule":
            rule = by_name.get(node.rule)
            if rule is None:
                problems.append(f"{where}: unknown rule {node.rule}")
            elif rule.weight != node.weight:
                problems.append(f"{where}: weight {node.weight} is not the rule's {rule.weight}")
            elif not _matches(rule, node):
                problems.append(f"{where}: premises do not match rule {rule.name}")
            if node.premises and node.depth != 1 + max(p.depth for p in node.premises):
                problems.append(f"{where}: depth {node.depth} is not 1 + the deepest premise")
        elif node.kind == "path" and not _chains(node):
            problems.append(f"{where}: path steps do not connect subject to object")
    return problems


def _matches(rule: Rule, node: Proof) -> bool:
    if len(rule.premises) + len(rule.negated) + len(rule.constraints) != len(node.premises):
        return False
    env: dict[Var, str] = {}

    def bind(term, value: str) -> bool:
        if isinstance(term, Var):
            return env.setdefault(term, value) == value
        return term == value

    for atom, child in zip(rule.premises, node.premises):
        t = child.conclusion
        if t is None or atom.relation != t.relation or not (bind(atom.subject, t.subject) and bind(atom.object, t.object)):
            return False
    if rule.constraints:   # evaluated again: they must hold and read as the proof says
        steps = run_constraints(rule.constraints, env)
        shown = [child.rule for child in node.premises[len(rule.premises) + len(rule.negated):]]
        if steps is None or steps != shown or any(c.kind != "check" for c in
                                                  node.premises[len(rule.premises) + len(rule.negated):]):
            return False
    for atom, child in zip(rule.negated, node.premises[len(rule.premises):]):
        if child.kind != "absent" or child.conclusion != Triple(ground(atom.subject, env), atom.relation,
                                                                ground(atom.object, env)):
            return False
    h = rule.head
    return Triple(ground(h.subject, env), h.relation, ground(h.object, env)) == node.conclusion


def _chains(node: Proof) -> bool:
    cur = node.conclusion.subject
    for step in node.premises:
        t = step.conclusion
        if t.subject == cur:
            cur = t.object
        elif t.object == cur:
            cur = t.subject
        else:
            return False
    return cur == node.conclusion.object
