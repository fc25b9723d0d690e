"""Frozen values of the normalized fact graph: symbols, facts, rules, declarations and limits.

Everything here holds *canonical keys* (see :mod:`thinkingdb.normalize`); display labels live in the
store. Values are hashable and validated in one place, their ``__init__``. They are
:class:`~thinkingdb.values.Value` classes: the behaviour of frozen dataclasses (equality, hash, order,
repr, ``dataclasses.replace``) without compiling generated methods in every process; the classes a
question compares most (``Var``, ``Triple``, ``Fact``, ``Atom``) write their comparisons out, as
dataclasses generate them, which is faster than the shared ones.
"""

from __future__ import annotations

import math

from .arith import Constraint
from .errors import ValidationError
from .numeric import check_number
from .values import Value

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping

_set = object.__setattr__

DECLARATION_KINDS = ("transitive", "symmetric", "inverse", "subrelation_of")


def check_unit_float(value: float, what: str, *, low: float = 0.0, high: float = 1.0,
                     low_open: bool = False) -> float:
    """Return ``value`` as a float if it is finite and within ``[low, high]`` (``(low, high]`` when
    ``low_open``); otherwise raise :class:`ValidationError` naming ``what``.

    >>> check_unit_float(0.5, "confidence")
    0.5
    >>> check_unit_float(float("nan"), "confidence")
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: confidence must be a finite number, got nan
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{what} must be a number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:   # an integer beyond any float, e.g. 10**400
        raise ValidationError(f"{what} must be a finite number, got an integer of {len(str(value))} digits") from None
    if not math.isfinite(value):
        raise ValidationError(f"{what} must be a finite number, got {value!r}")
    if value > high or value < low or (low_open and value == low):
        bracket = "(" if low_open else "["
        raise ValidationError(f"{what} must be in {bracket}{low:g}, {high:g}], got {value!r}")
    return value


class Var(Value, order=True):
    """A rule or query variable, written ``?name``."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return (self.name,) == (other.name,)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.name,))

    def __lt__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return (self.name,) < (other.name,)
        return NotImplemented

    @property
    def anonymous(self) -> bool:
        """A fresh variable the compiler made for ``?_`` or an n-ary statement node: binds nothing
        visible (answers leave it out; in a ``not`` premise it means "any")."""
        return self.name.startswith("_#")

    def __str__(self) -> str:
        return "?_" if self.anonymous else f"?{self.name}"


def node_key(relation: str, args) -> str:
    """The symbol key of the statement node of an n-ary fact: ``relation(arg1,arg2,...)``.

    >>> node_key("flight", ["qa", "syd", "mel"]), role("flight", 2)
    ('flight(qa,syd,mel)', 'flight.2')
    """
    return f"{relation}({','.join(args)})"


def role(relation: str, i: int) -> str:
    """The relation of the ``i``-th (1-based) role edge of an n-ary relation: ``relation.i``."""
    return f"{relation}.{i}"


class Node(Value, order=True):
    """The statement node of an n-ary fact, named by its relation and arguments (a Skolem term).
    Stands as the subject of a rule head (``=> flight(?c, ?x, ?y)`` derives the node's role edges)
    or of a ``not`` premise; every argument is a symbol key or a variable bound by the premises."""

    __slots__ = ("relation", "args")
    relation: str
    args: tuple

    def __init__(self, relation: str, args: tuple) -> None:
        _set(self, "relation", relation)
        _set(self, "args", args)

    def variables(self) -> tuple[Var, ...]:
        return tuple(t for t in self.args if isinstance(t, Var))

    def __str__(self) -> str:
        return f"{self.relation}({', '.join(str(a) for a in self.args)})"


Term = str | Var | Node
"""A canonical symbol key, a variable, or (in rule heads and ``not`` premises) a statement node."""


def ground(term: Term, env) -> str:
    """The key ``term`` stands for under ``env`` (Var -> key): a statement node's key is made from
    its arguments; an unbound (anonymous) variable stays ``?_``.

    >>> ground(Node("flight", (Var("c"), "syd")), {Var("c"): "qa"})
    'flight(qa,syd)'
    """
    if isinstance(term, Var):
        return env.get(term, "?_")
    if isinstance(term, Node):
        return node_key(term.relation, [ground(a, env) for a in term.args])
    return term


class Atom(Value):
    """A triple pattern whose subject and object may be variables; the relation is a canonical key."""

    __slots__ = ("subject", "relation", "object")
    subject: Term
    relation: str
    object: Term

    def __init__(self, subject: Term, relation: str, object: Term) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return (self.subject, self.relation, self.object) == (other.subject, other.relation, other.object)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.subject, self.relation, self.object))

    def variables(self) -> tuple[Var, ...]:
        out: list[Var] = []
        for t in (self.subject, self.object):
            if isinstance(t, Var):
                out.append(t)
            elif isinstance(t, Node):
                out.extend(t.variables())
        return tuple(out)

    def __str__(self) -> str:
        return f"{self.subject} {self.relation} {self.object}"


class Triple(Value, order=True):
    """A ground (subject, relation, object) key: the identity of a fact."""

    __slots__ = ("subject", "relation", "object")
    subject: str
    relation: str
    object: str

    def __init__(self, subject: str, relation: str, object: str) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return (self.subject, self.relation, self.object) == (other.subject, other.relation, other.object)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.subject, self.relation, self.object))

    def __lt__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return (self.subject, self.relation, self.object) < (other.subject, other.relation, other.object)
        return NotImplemented

    def __str__(self) -> str:
        return f"{self.subject} {self.relation} {self.object}"


class Fact(Value, order=True):
    """An asserted fact with its confidence in [0, 1].

    >>> Fact("nginx", "depends_on", "openssl").confidence
    1.0
    >>> Fact("a", "r", "b", 1.5)
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: confidence of fact a r b must be in [0, 1], got 1.5
    """

    __slots__ = ("subject", "relation", "object", "confidence")
    subject: str
    relation: str
    object: str
    confidence: float

    def __init__(self, subject: str, relation: str, object: str, confidence: float = 1.0) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)
        _set(self, "confidence", confidence)
        check_unit_float(confidence, f"confidence of fact {subject} {relation} {object}")

    def __eq__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return ((self.subject, self.relation, self.object, self.confidence)
                    == (other.subject, other.relation, other.object, other.confidence))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.subject, self.relation, self.object, self.confidence))

    def __lt__(self, other) -> bool:
        if other.__class__ is self.__class__:
            return ((self.subject, self.relation, self.object, self.confidence)
                    < (other.subject, other.relation, other.object, other.confidence))
        return NotImplemented

    @property
    def triple(self) -> Triple:
        return Triple(self.subject, self.relation, self.object)


class Rule(Value):
    """``premises, not negated, constraints => head`` with a weight in (0, 1]. Every head variable must
    occur in a (positive) premise or be assigned by a constraint; so must every variable of a ``negated``
    premise except anonymous ones, which mean "any" (safe negation). ``constraints``
    (:class:`~thinkingdb.arith.Constraint`) run in order after the premises matched: each variable they
    use is bound by a premise or an earlier assignment. A rule holds when its premises match, every
    constraint holds and no ``negated`` atom does.

    >>> x, y, z = Var("x"), Var("y"), Var("z")
    >>> r = Rule("cap", (Atom(x, "uses", y), Atom(y, "provides", z)), Atom(x, "has_capability", z), 0.95)
    >>> r.weight
    0.95
    >>> Rule("lacks", (Atom(x, "requires", y),), Atom(x, "lacks", y), negated=(Atom(x, "has", z),))
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: rule lacks: variable ?z of 'not ?x has ?z' is bound by no positive premise
    """

    __slots__ = ("name", "premises", "head", "weight", "negated", "constraints")
    name: str
    premises: tuple[Atom, ...]
    head: Atom
    weight: float
    negated: tuple[Atom, ...]
    constraints: tuple[Constraint, ...]

    def __init__(self, name: str, premises: tuple[Atom, ...], head: Atom, weight: float = 1.0,
                 negated: tuple[Atom, ...] = (), constraints: tuple[Constraint, ...] = ()) -> None:
        _set(self, "name", name)
        _set(self, "premises", premises)
        _set(self, "head", head)
        _set(self, "weight", weight)
        _set(self, "negated", negated)
        _set(self, "constraints", constraints)
        self._check()

    def _check(self) -> None:
        check_unit_float(self.weight, f"weight of rule {self.name}", low_open=True)
        if not self.premises and not self.negated:
            raise ValidationError(f"rule {self.name} has no premises")
        body_vars = {v for p in self.premises for v in p.variables()}
        if self.constraints and not self.premises:
            raise ValidationError(f"rule {self.name}: constraints need a positive premise")
        for c in self.constraints:
            used = c.variables()[1:] if c.assigns else c.variables()
            free = [v for v in used if v not in body_vars]
            if free:
                raise ValidationError(f"rule {self.name}: variable {free[0]} of '{c}' is bound by no premise "
                                      "and no earlier assignment")
            if c.assigns:
                if c.left in body_vars:
                    raise ValidationError(f"rule {self.name}: '{c}' assigns {c.left}, which is already bound")
                body_vars.add(c.left)
        missing = [v for v in self.head.variables() if v not in body_vars]
        if missing:
            raise ValidationError(
                f"rule {self.name}: head variable {missing[0]} does not occur in any premise")
        for a in self.negated:
            free = [v for v in a.variables() if v not in body_vars and not v.anonymous]
            if free:
                raise ValidationError(f"rule {self.name}: variable {free[0]} of 'not {a}' is bound by no "
                                      "positive premise")
            if isinstance(a.object, Node) or (isinstance(a.subject, Node) and any(v.anonymous for v in a.variables())):
                raise ValidationError(f"rule {self.name}: a statement node in 'not {a}' must be the subject, "
                                      "with every argument bound")
        for p in self.premises:
            if isinstance(p.subject, Node) or isinstance(p.object, Node):
                raise ValidationError(f"rule {self.name}: a premise matches a statement node through a variable")

    def __str__(self) -> str:
        body = ", ".join([str(p) for p in self.premises] + [f"not {a}" for a in self.negated]
                         + [str(c) for c in self.constraints])
        return f"rule {self.name} @{self.weight:g}: {body} => {self.head}."


class Declaration(Value, order=True):
    """``relation R transitive|symmetric|inverse S|subrelation_of S``."""

    __slots__ = ("relation", "kind", "other")
    relation: str
    kind: str
    other: str | None

    def __init__(self, relation: str, kind: str, other: str | None = None) -> None:
        _set(self, "relation", relation)
        _set(self, "kind", kind)
        _set(self, "other", other)
        if kind not in DECLARATION_KINDS:
            raise ValidationError(
                f"unknown relation property {kind!r}; expected one of {', '.join(DECLARATION_KINDS)}")
        if (kind in ("inverse", "subrelation_of")) != (other is not None):
            raise ValidationError(f"relation property {kind} takes "
                                  + ("another relation" if kind in ("inverse", "subrelation_of") else "no argument"))


def _check_bound(value: int | float | None, what: str, *, allow_zero: bool) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{what} must be a finite number or None, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValidationError(f"{what} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")


class Limits(Value):
    """Bounds of a closure run. ``None`` means unbounded.

    ``max_depth``: longest derivation chain; ``max_nodes``: distinct symbols the closure may touch;
    ``max_derived``: derived facts kept; ``timeout_ms``: wall-clock budget; ``max_rows``: rows a
    query's join may hold at each pattern, answers included (answer sets held as arrays are bounded
    by ``max_derived`` instead; docs/reliability.md).

    >>> Limits(max_depth=3).max_depth
    3
    >>> Limits(max_depth=-1)
    Traceback (most recent call last):
    ...
    thinkingdb.errors.ValidationError: max_depth must be non-negative, got -1
    """

    __slots__ = ("max_depth", "max_nodes", "max_derived", "timeout_ms", "max_rows")
    max_depth: int | None
    max_nodes: int | None
    max_derived: int | None
    timeout_ms: float | None
    max_rows: int | None

    def __init__(self, *, max_depth: int | None = None, max_nodes: int | None = None, max_derived: int | None = None,
                 timeout_ms: float | None = None, max_rows: int | None = None) -> None:
        _set(self, "max_depth", max_depth)
        _set(self, "max_nodes", max_nodes)
        _set(self, "max_derived", max_derived)
        _set(self, "timeout_ms", timeout_ms)
        _set(self, "max_rows", max_rows)
        _check_bound(max_depth, "max_depth", allow_zero=True)
        _check_bound(max_nodes, "max_nodes", allow_zero=False)
        _check_bound(max_derived, "max_derived", allow_zero=True)
        _check_bound(timeout_ms, "timeout_ms", allow_zero=False)
        _check_bound(max_rows, "max_rows", allow_zero=False)


TRUNCATION_REASONS = ("depth", "nodes", "derived", "time", "rows")


class Provenance(Value):
    """Where an asserted fact came from: a source file or unit, and a line (0 when unknown)."""

    __slots__ = ("source", "line", "unit_id", "note")
    _compare = ("source", "line", "unit_id")
    source: str
    line: int
    unit_id: str | None
    note: str

    def __init__(self, source: str, line: int = 0, unit_id: str | None = None, note: str = "") -> None:
        _set(self, "source", source)
        _set(self, "line", line)
        _set(self, "unit_id", unit_id)
        _set(self, "note", note)


# --- Query model: normalized property paths and patterns (the grammar's syntax tree is converted to
# these by thinkingdb.language, with canonical keys and aliases applied). ---


class PathRel(Value):
    """One relation step."""

    __slots__ = ("relation",)
    relation: str

    def __init__(self, relation: str) -> None:
        _set(self, "relation", relation)

    def __str__(self) -> str:
        return self.relation


class PathInv(Value):
    """``^p``: the path walked backwards."""

    __slots__ = ("path",)
    path: Path

    def __init__(self, path: Path) -> None:
        _set(self, "path", path)

    def __str__(self) -> str:
        return f"^{_paren(self.path)}"


class PathSeq(Value):
    """``p1/p2/...``."""

    __slots__ = ("parts",)
    parts: tuple[Path, ...]

    def __init__(self, parts: tuple[Path, ...]) -> None:
        _set(self, "parts", parts)

    def __str__(self) -> str:
        return "/".join(_paren(p) for p in self.parts)


class PathAlt(Value):
    """``p1|p2|...``."""

    __slots__ = ("options",)
    options: tuple[Path, ...]

    def __init__(self, options: tuple[Path, ...]) -> None:
        _set(self, "options", options)

    def __str__(self) -> str:
        return "|".join(_paren(p) for p in self.options)


class PathRepeat(Value):
    """``p{min,max}``; ``+`` is ``{1,None}``, ``*`` is ``{0,None}``; ``max=None`` is unbounded."""

    __slots__ = ("path", "min", "max")
    path: Path
    min: int
    max: int | None

    def __init__(self, path: Path, min: int, max: int | None) -> None:
        _set(self, "path", path)
        _set(self, "min", min)
        _set(self, "max", max)
        if min < 0 or (max is not None and max < min):
            raise ValidationError(f"path repetition {{{min},{max}}} is empty or negative")

    def __str__(self) -> str:
        inner = _paren(self.path)
        if (self.min, self.max) == (1, None):
            return f"{inner}+"
        if (self.min, self.max) == (0, None):
            return f"{inner}*"
        return f"{inner}{{{self.min},{'' if self.max is None else self.max}}}"


Path = PathRel | PathInv | PathSeq | PathAlt | PathRepeat


def _paren(p: Path) -> str:
    return str(p) if isinstance(p, (PathRel, PathInv)) else f"({p})"


class QueryPattern(Value):
    """``subject path object`` where subject and object are symbols or variables."""

    __slots__ = ("subject", "path", "object")
    subject: Term
    path: Path
    object: Term

    def __init__(self, subject: Term, path: Path, object: Term) -> None:
        _set(self, "subject", subject)
        _set(self, "path", path)
        _set(self, "object", object)

    def variables(self) -> tuple[Var, ...]:
        return tuple(t for t in (self.subject, self.object) if isinstance(t, Var))


class Query(Value):
    """A conjunction of patterns; answers bind every variable."""

    __slots__ = ("patterns",)
    patterns: tuple[QueryPattern, ...]

    def __init__(self, patterns: tuple[QueryPattern, ...]) -> None:
        _set(self, "patterns", patterns)

    def variables(self) -> tuple[Var, ...]:
        """Variables in order of first appearance (the TSV column order); anonymous ones left out."""
        seen: dict[Var, None] = {}
        for p in self.patterns:
            for v in p.variables():
                if not v.anonymous:
                    seen.setdefault(v, None)
        return tuple(seen)


# Alignment evidence a unit may carry (its features); scored by thinkingdb.retrieval.alignment.
FEATURES = ("quality", "freshness", "authority", "risk_penalty", "coherence_penalty")


class Evidence(Value):
    """One observation of a result's features (each in [0, 1]) and its classical score ``m``."""

    __slots__ = ("quality", "freshness", "authority", "risk_penalty", "coherence_penalty", "m")
    quality: float
    freshness: float
    authority: float
    risk_penalty: float
    coherence_penalty: float
    m: float

    def __init__(self, quality: float = 0.0, freshness: float = 0.0, authority: float = 0.0,
                 risk_penalty: float = 0.0, coherence_penalty: float = 0.0, m: float = 1.0) -> None:
        _set(self, "quality", quality)
        _set(self, "freshness", freshness)
        _set(self, "authority", authority)
        _set(self, "risk_penalty", risk_penalty)
        _set(self, "coherence_penalty", coherence_penalty)
        _set(self, "m", m)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], where: str = "features") -> "Evidence":
        unknown = set(data) - set(FEATURES) - {"m"}
        if unknown:
            raise ValidationError(f"{where}: unknown feature {sorted(unknown)[0]!r}; expected {', '.join(FEATURES)}")
        values = {k: check_number(data[k], f"{where}.{k}", low=0.0, high=1.0) for k in FEATURES if k in data}
        if "m" in data:
            values["m"] = check_number(data["m"], f"{where}.m")
        return cls(**values)
