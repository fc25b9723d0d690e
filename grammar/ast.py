"""The frozen syntax tree of the ThinkingDB language.

Every node carries ``line`` and ``column`` (1-based) of where it starts; positions are excluded from
equality so that ``parse(format(tree)) == tree`` holds although formatting moves things around.
Symbols and relations keep the text as written (quotes removed, escapes resolved): normalization to
canonical keys is the engine's business, not the parser's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


KEYWORDS = frozenset({"relation", "alias", "rule", "why"})   # words that begin a statement
RESERVED = KEYWORDS | {"not"}                                  # words that are never a bare symbol
DECLARATION_KINDS = ("transitive", "symmetric", "inverse", "subrelation_of")


def _pos() -> int:
    return field(default=0, compare=False, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True)
class Symbol:
    """A symbol as written: ``nginx`` or ``"Secure Execution"`` (``quoted``: written in quotes; a store in
    symbol mode ``quoted`` keeps such a symbol exactly, see :mod:`thinkingdb.normalize`)."""

    text: str
    line: int = _pos()
    column: int = _pos()
    quoted: bool = field(default=False, compare=False, repr=False)


@dataclass(frozen=True)
class Variable:
    """``?name``."""

    name: str
    line: int = _pos()
    column: int = _pos()


Term = Union[Symbol, Variable]


@dataclass(frozen=True)
class Relation:
    """A relation name as written: ``depends_on``, ``dependsOn`` or ``"depends on"``.

    ``phrase`` marks bare words written in a row (``Harbor relies on Kestrel``): a relation phrase
    that an ``alias`` must declare; the compiler decides which of the words are the phrase (the
    longest declared one) and which belong to the subject or the object.
    """

    text: str
    phrase: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Fact:
    """``subject relation object [@confidence].``"""

    subject: Symbol
    relation: Relation
    object: Symbol
    confidence: float | None = None
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class RelationDecl:
    """``relation R transitive.`` / ``symmetric`` / ``inverse S`` / ``subrelation_of S``."""

    relation: Relation
    kind: str
    other: Relation | None = None
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Alias:
    """``alias "depends on" => depends_on.``"""

    phrase: Symbol
    relation: Relation
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Atom:
    """A rule premise or head: ``?x uses ?y``; ``not ?x uses ?y`` (``negated``) as a premise."""

    subject: Term
    relation: Relation
    object: Term
    negated: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class NaryAtom:
    """``name(t1, ..., tn)``: an n-ary statement in a rule or a query; ``not name(...)`` as a premise."""

    relation: Relation
    args: tuple[Term, ...]
    negated: bool = False
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class NaryFact:
    """``name(s1, ..., sn) [@confidence].``: an n-ary fact (a statement node with one edge per role)."""

    relation: Relation
    args: tuple[Symbol, ...]
    confidence: float | None = None
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Arith:
    """``left op right`` in a comparison, ``op`` one of ``+ - * / %`` (``*``, ``/``, ``%`` bind tighter,
    all are left-associative; parentheses only group)."""

    op: str
    left: "Expr"
    right: "Expr"
    line: int = _pos()
    column: int = _pos()


Expr = Union[Symbol, Variable, Arith]
"""An arithmetic expression: a symbol (a number such as ``25``, ``-4``, ``2.5``, or any name), a
variable, or an operation."""


@dataclass(frozen=True)
class Comparison:
    """A rule premise ``left op right`` with ``op`` one of ``< <= > >= = !=``. ``?v = expr`` where ``?v``
    is bound by no positive premise is an *assignment*: it binds ``?v`` to the value of ``expr``."""

    left: Expr
    op: str
    right: Expr
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class RuleDecl:
    """``rule name [@weight]: premise, premise => head.``"""

    name: str
    premises: tuple[Union[Atom, NaryAtom, Comparison], ...]
    head: Union[Atom, NaryAtom]
    weight: float | None = None
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Step:
    """One relation in a property path."""

    relation: Relation


@dataclass(frozen=True)
class Inverse:
    """``^path``."""

    path: "PathExpr"


@dataclass(frozen=True)
class Sequence:
    """``a/b/c``."""

    parts: tuple["PathExpr", ...]


@dataclass(frozen=True)
class Alternative:
    """``a|b|c``."""

    options: tuple["PathExpr", ...]


@dataclass(frozen=True)
class Repeat:
    """``p+`` (1, None), ``p*`` (0, None), ``p{m,n}``, ``p{m,}`` (m, None), ``p{m}`` (m, m)."""

    path: "PathExpr"
    min: int
    max: int | None
    exact: bool = field(default=False, compare=False)


PathExpr = Union[Step, Inverse, Sequence, Alternative, Repeat]


@dataclass(frozen=True)
class Pattern:
    """``subject path object`` in a query."""

    subject: Term
    path: PathExpr
    object: Term
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Query:
    """``? pattern, pattern.``"""

    patterns: tuple[Union[Pattern, NaryAtom], ...]
    line: int = _pos()
    column: int = _pos()


@dataclass(frozen=True)
class Why:
    """``why subject relation object.``; ``why not ...`` (``negated``) explains a missing fact."""

    subject: Symbol
    relation: Relation
    object: Symbol
    negated: bool = False
    line: int = _pos()
    column: int = _pos()


Statement = Union[Fact, NaryFact, RelationDecl, Alias, RuleDecl, Query, Why]


@dataclass(frozen=True)
class Document:
    """A parsed source: its statements in order."""

    statements: tuple[Statement, ...]
    source: str = field(default="<string>", compare=False)
