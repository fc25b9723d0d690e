"""The frozen syntax tree of the ThinkingDB language.

Every node carries ``line`` and ``column`` (1-based) of where it starts; positions are excluded from
equality so that ``parse(format(tree)) == tree`` holds although formatting moves things around.
The nodes are :class:`~grammar.values.Value` classes: the behaviour of frozen dataclasses (equality,
hash, repr, ``dataclasses.replace``) without compiling generated methods in every process.
Symbols and relations keep the text as written (quotes removed, escapes resolved): normalization to
canonical keys is the engine's business, not the parser's.
"""

from __future__ import annotations

from .values import Value


KEYWORDS = frozenset({"relation", "alias", "rule", "why"})   # words that begin a statement
RESERVED = KEYWORDS | {"not"}                                  # words that are never a bare symbol
DECLARATION_KINDS = ("transitive", "symmetric", "inverse", "subrelation_of")

_set = object.__setattr__
_POS = ("line", "column")   # where a node starts: neither compared nor shown


class Symbol(Value):
    """A symbol as written: ``nginx`` or ``"Secure Execution"`` (``quoted``: written in quotes; a store in
    symbol mode ``quoted`` keeps such a symbol exactly, see :mod:`thinkingdb.normalize`)."""

    __slots__ = ("text", "line", "column", "quoted")
    _compare, _hidden = ("text",), _POS + ("quoted",)
    text: str
    line: int
    column: int
    quoted: bool

    def __init__(self, text: str, line: int = 0, column: int = 0, quoted: bool = False) -> None:
        _set(self, "text", text)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "quoted", quoted)


class Variable(Value):
    """``?name``."""

    __slots__ = ("name", "line", "column")
    _compare, _hidden = ("name",), _POS
    name: str
    line: int
    column: int

    def __init__(self, name: str, line: int = 0, column: int = 0) -> None:
        _set(self, "name", name)
        _set(self, "line", line)
        _set(self, "column", column)


Term = Symbol | Variable


class Relation(Value):
    """A relation name as written: ``depends_on``, ``dependsOn`` or ``"depends on"``.

    ``phrase`` marks bare words written in a row (``Harbor relies on Kestrel``): a relation phrase
    that an ``alias`` must declare; the compiler decides which of the words are the phrase (the
    longest declared one) and which belong to the subject or the object.
    """

    __slots__ = ("text", "phrase", "line", "column")
    _compare, _hidden = ("text", "phrase"), _POS
    text: str
    phrase: bool
    line: int
    column: int

    def __init__(self, text: str, phrase: bool = False, line: int = 0, column: int = 0) -> None:
        _set(self, "text", text)
        _set(self, "phrase", phrase)
        _set(self, "line", line)
        _set(self, "column", column)


class Fact(Value):
    """``subject relation object [@confidence].``"""

    __slots__ = ("subject", "relation", "object", "confidence", "line", "column")
    _compare, _hidden = ("subject", "relation", "object", "confidence"), _POS
    subject: Symbol
    relation: Relation
    object: Symbol
    confidence: float | None
    line: int
    column: int

    def __init__(self, subject: Symbol, relation: Relation, object: Symbol, confidence: float | None = None,
                 line: int = 0, column: int = 0) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)
        _set(self, "confidence", confidence)
        _set(self, "line", line)
        _set(self, "column", column)


class RelationDecl(Value):
    """``relation R transitive.`` / ``symmetric`` / ``inverse S`` / ``subrelation_of S``."""

    __slots__ = ("relation", "kind", "other", "line", "column")
    _compare, _hidden = ("relation", "kind", "other"), _POS
    relation: Relation
    kind: str
    other: Relation | None
    line: int
    column: int

    def __init__(self, relation: Relation, kind: str, other: Relation | None = None, line: int = 0,
                 column: int = 0) -> None:
        _set(self, "relation", relation)
        _set(self, "kind", kind)
        _set(self, "other", other)
        _set(self, "line", line)
        _set(self, "column", column)


class Alias(Value):
    """``alias "depends on" => depends_on.``"""

    __slots__ = ("phrase", "relation", "line", "column")
    _compare, _hidden = ("phrase", "relation"), _POS
    phrase: Symbol
    relation: Relation
    line: int
    column: int

    def __init__(self, phrase: Symbol, relation: Relation, line: int = 0, column: int = 0) -> None:
        _set(self, "phrase", phrase)
        _set(self, "relation", relation)
        _set(self, "line", line)
        _set(self, "column", column)


class Atom(Value):
    """A rule premise or head: ``?x uses ?y``; ``not ?x uses ?y`` (``negated``) as a premise."""

    __slots__ = ("subject", "relation", "object", "negated", "line", "column")
    _compare, _hidden = ("subject", "relation", "object", "negated"), _POS
    subject: Term
    relation: Relation
    object: Term
    negated: bool
    line: int
    column: int

    def __init__(self, subject: Term, relation: Relation, object: Term, negated: bool = False, line: int = 0,
                 column: int = 0) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)
        _set(self, "negated", negated)
        _set(self, "line", line)
        _set(self, "column", column)


class NaryAtom(Value):
    """``name(t1, ..., tn)``: an n-ary statement in a rule or a query; ``not name(...)`` as a premise."""

    __slots__ = ("relation", "args", "negated", "line", "column")
    _compare, _hidden = ("relation", "args", "negated"), _POS
    relation: Relation
    args: tuple[Term, ...]
    negated: bool
    line: int
    column: int

    def __init__(self, relation: Relation, args: tuple[Term, ...], negated: bool = False, line: int = 0,
                 column: int = 0) -> None:
        _set(self, "relation", relation)
        _set(self, "args", args)
        _set(self, "negated", negated)
        _set(self, "line", line)
        _set(self, "column", column)


class NaryFact(Value):
    """``name(s1, ..., sn) [@confidence].``: an n-ary fact (a statement node with one edge per role)."""

    __slots__ = ("relation", "args", "confidence", "line", "column")
    _compare, _hidden = ("relation", "args", "confidence"), _POS
    relation: Relation
    args: tuple[Symbol, ...]
    confidence: float | None
    line: int
    column: int

    def __init__(self, relation: Relation, args: tuple[Symbol, ...], confidence: float | None = None,
                 line: int = 0, column: int = 0) -> None:
        _set(self, "relation", relation)
        _set(self, "args", args)
        _set(self, "confidence", confidence)
        _set(self, "line", line)
        _set(self, "column", column)


class Arith(Value):
    """``left op right`` in a comparison, ``op`` one of ``+ - * / %`` (``*``, ``/``, ``%`` bind tighter,
    all are left-associative; parentheses only group)."""

    __slots__ = ("op", "left", "right", "line", "column")
    _compare, _hidden = ("op", "left", "right"), _POS
    op: str
    left: Expr
    right: Expr
    line: int
    column: int

    def __init__(self, op: str, left: Expr, right: Expr, line: int = 0, column: int = 0) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)
        _set(self, "line", line)
        _set(self, "column", column)


Expr = Symbol | Variable | Arith
"""An arithmetic expression: a symbol (a number such as ``25``, ``-4``, ``2.5``, or any name), a
variable, or an operation."""


class Comparison(Value):
    """A rule premise ``left op right`` with ``op`` one of ``< <= > >= = !=``. ``?v = expr`` where ``?v``
    is bound by no positive premise is an *assignment*: it binds ``?v`` to the value of ``expr``."""

    __slots__ = ("left", "op", "right", "line", "column")
    _compare, _hidden = ("left", "op", "right"), _POS
    left: Expr
    op: str
    right: Expr
    line: int
    column: int

    def __init__(self, left: Expr, op: str, right: Expr, line: int = 0, column: int = 0) -> None:
        _set(self, "left", left)
        _set(self, "op", op)
        _set(self, "right", right)
        _set(self, "line", line)
        _set(self, "column", column)


class RuleDecl(Value):
    """``rule name [@weight]: premise, premise => head.``"""

    __slots__ = ("name", "premises", "head", "weight", "line", "column")
    _compare, _hidden = ("name", "premises", "head", "weight"), _POS
    name: str
    premises: tuple[Atom | NaryAtom | Comparison, ...]
    head: Atom | NaryAtom
    weight: float | None
    line: int
    column: int

    def __init__(self, name: str, premises: tuple[Atom | NaryAtom | Comparison, ...], head: Atom | NaryAtom,
                 weight: float | None = None, line: int = 0, column: int = 0) -> None:
        _set(self, "name", name)
        _set(self, "premises", premises)
        _set(self, "head", head)
        _set(self, "weight", weight)
        _set(self, "line", line)
        _set(self, "column", column)


class Step(Value):
    """One relation in a property path."""

    __slots__ = ("relation",)
    relation: Relation

    def __init__(self, relation: Relation) -> None:
        _set(self, "relation", relation)


class Inverse(Value):
    """``^path``."""

    __slots__ = ("path",)
    path: PathExpr

    def __init__(self, path: PathExpr) -> None:
        _set(self, "path", path)


class Sequence(Value):
    """``a/b/c``."""

    __slots__ = ("parts",)
    parts: tuple[PathExpr, ...]

    def __init__(self, parts: tuple[PathExpr, ...]) -> None:
        _set(self, "parts", parts)


class Alternative(Value):
    """``a|b|c``."""

    __slots__ = ("options",)
    options: tuple[PathExpr, ...]

    def __init__(self, options: tuple[PathExpr, ...]) -> None:
        _set(self, "options", options)


class Repeat(Value):
    """``p+`` (1, None), ``p*`` (0, None), ``p{m,n}``, ``p{m,}`` (m, None), ``p{m}`` (m, m)."""

    __slots__ = ("path", "min", "max", "exact")
    _compare = ("path", "min", "max")
    path: PathExpr
    min: int
    max: int | None
    exact: bool

    def __init__(self, path: PathExpr, min: int, max: int | None, exact: bool = False) -> None:
        _set(self, "path", path)
        _set(self, "min", min)
        _set(self, "max", max)
        _set(self, "exact", exact)


PathExpr = Step | Inverse | Sequence | Alternative | Repeat


class Pattern(Value):
    """``subject path object`` in a query."""

    __slots__ = ("subject", "path", "object", "line", "column")
    _compare, _hidden = ("subject", "path", "object"), _POS
    subject: Term
    path: PathExpr
    object: Term
    line: int
    column: int

    def __init__(self, subject: Term, path: PathExpr, object: Term, line: int = 0, column: int = 0) -> None:
        _set(self, "subject", subject)
        _set(self, "path", path)
        _set(self, "object", object)
        _set(self, "line", line)
        _set(self, "column", column)


class Query(Value):
    """``? pattern, pattern.``"""

    __slots__ = ("patterns", "line", "column")
    _compare, _hidden = ("patterns",), _POS
    patterns: tuple[Pattern | NaryAtom, ...]
    line: int
    column: int

    def __init__(self, patterns: tuple[Pattern | NaryAtom, ...], line: int = 0, column: int = 0) -> None:
        _set(self, "patterns", patterns)
        _set(self, "line", line)
        _set(self, "column", column)


class Why(Value):
    """``why subject relation object.``; ``why not ...`` (``negated``) explains a missing fact."""

    __slots__ = ("subject", "relation", "object", "negated", "line", "column")
    _compare, _hidden = ("subject", "relation", "object", "negated"), _POS
    subject: Symbol
    relation: Relation
    object: Symbol
    negated: bool
    line: int
    column: int

    def __init__(self, subject: Symbol, relation: Relation, object: Symbol, negated: bool = False, line: int = 0,
                 column: int = 0) -> None:
        _set(self, "subject", subject)
        _set(self, "relation", relation)
        _set(self, "object", object)
        _set(self, "negated", negated)
        _set(self, "line", line)
        _set(self, "column", column)


Statement = Fact | NaryFact | RelationDecl | Alias | RuleDecl | Query | Why


class Document(Value):
    """A parsed source: its statements in order."""

    __slots__ = ("statements", "source")
    _compare = ("statements",)
    statements: tuple[Statement, ...]
    source: str

    def __init__(self, statements: tuple[Statement, ...], source: str = "<string>") -> None:
        _set(self, "statements", statements)
        _set(self, "source", source)
