"""Parse ThinkingDB source into the frozen syntax tree of :mod:`grammar.ast`.

The grammar (``thinkingdb.lark``) ships inside this package and is compiled once, as an LALR parser
whose tree builder runs during parsing. When a source has errors it is parsed again statement by
statement so that every error in the file is reported, each with line, column, a reason in words and
a caret snippet. No lark exception leaves this module.
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import ast
from .ast import DECLARATION_KINDS, KEYWORDS  # noqa: F401 (KEYWORDS: also read by thinkingdb.store.tdbfile)
from .errors import Diagnostic, LanguageSyntaxError, make_diagnostic
from .safety import order_comparisons

ANONYMOUS = "_"   # ``?_``: each occurrence is a fresh variable that binds nothing

_TERMINAL_WORDS = {
    "SYMBOL": "a symbol",
    "STRING": "a quoted string",
    "VAR": "a variable such as ?x",
    "NUMBER": "a number",
    "INT": "a whole number",
    "DOT": "a period '.'",
    "AT": "'@' and a confidence",
    "COMMA": "','",
    "COLON": "':'",
    "QMARK": "'?'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "VBAR": "'|'",
    "SLASH": "'/'",
    "CIRCUMFLEX": "'^'",
    "PLUS": "'+'",
    "STAR": "'*'",
    "NOT": "'not'",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "EQUAL": "'='",
    "SIGNED": "a symbol",   # a signed number is a symbol too
    "MINUS": "'-'",
    "PERCENT": "'%'",
    "NARY": "an n-ary statement such as name(a, b, c)",
    "$END": "the end of the input",
}


class _State(threading.local):
    errors: list[tuple[int, int, str]]
    line_offset: int

    def __init__(self) -> None:
        self.errors = []
        self.line_offset = 0


_state = _State()


def _line(tok: Token) -> int:
    return tok.line + _state.line_offset


def _err(tok: Token, reason: str) -> None:
    _state.errors.append((_line(tok), tok.column, reason))


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _shown(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _number(tok: Token, what: str, *, low_open: bool) -> float:
    try:
        value = float(tok)
    except ValueError:  # the NUMBER terminal admits only float syntax; kept for safety
        value = math.nan
    if not math.isfinite(value):
        _err(tok, f"{what} must be a finite number, got {_shown(tok.value)}")
        return 1.0
    if value > 1.0 or value < 0.0 or (low_open and value == 0.0):
        span = "(0, 1]" if low_open else "[0, 1]"
        _err(tok, f"{what} must be in {span}, got {_shown(tok.value)}")
        return 1.0
    return value


class _Quoted(ast.Symbol):
    """A symbol written in quotes (only while building: a relation phrase takes bare words only)."""


def _plain(t):
    """The term as the tree keeps it: a :class:`_Quoted` becomes a plain :class:`ast.Symbol`."""
    if isinstance(t, Token):
        return ast.Variable(t.value[1:], _line(t), t.column)
    if type(t) is _Quoted:
        return ast.Symbol(t.text, t.line, t.column, quoted=True)
    return t


def _relation_of(middle: list) -> ast.Relation:
    """The relation between a subject and an object: one name, or bare words (a relation phrase)."""
    first = middle[0]
    if isinstance(first, Token):
        _err(first, "a relation cannot be a variable")
        return ast.Relation("_", line=_line(first), column=first.column)
    if len(middle) == 1:
        if not first.text.strip():
            _state.errors.append((first.line, first.column, "a relation name cannot be empty"))
        return ast.Relation(first.text, line=first.line, column=first.column)
    for w in middle:
        if isinstance(w, Token):
            _err(w, "a relation cannot be a variable")
        elif type(w) is _Quoted:
            _state.errors.append((w.line, w.column, "a relation phrase is bare words; a quoted name "
                                                    "cannot be part of one"))
    words = " ".join(w.value if isinstance(w, Token) else w.text for w in middle)
    return ast.Relation(words, phrase=True, line=first.line, column=first.column)


def _variables(node) -> list:
    terms = (node.subject, node.object) if isinstance(node, (ast.Atom, ast.Pattern)) else node.args
    return [t for t in terms if isinstance(t, ast.Variable)]


class _Builder(Transformer):
    """Turns parse results straight into :mod:`grammar.ast` nodes (runs inside the LALR parser)."""

    def sym(self, c):
        tok = c[0]
        if tok.type == "STRING":
            return _Quoted(_unquote(tok.value), _line(tok), tok.column)
        return ast.Symbol(tok.value, _line(tok), tok.column)

    def rel(self, c):
        tok = c[0]
        text = _unquote(tok.value) if tok.type == "STRING" else tok.value
        if not text.strip():
            _err(tok, "a relation name cannot be empty")
        return ast.Relation(text, line=_line(tok), column=tok.column)

    def confidence(self, c):
        return c[0]

    def fact(self, c):
        conf_tok = c[-1] if isinstance(c[-1], Token) else None
        words = c[:-1] if conf_tok is not None else c
        s, o = _plain(words[0]), _plain(words[-1])
        conf = _number(conf_tok, "confidence", low_open=False) if conf_tok is not None else None
        return ast.Fact(s, _relation_of(words[1:-1]), o, conf, s.line, s.column)

    def nary_fact(self, c):
        tok, args = c[0], c[1]
        rel = ast.Relation(tok.value[:-1], line=_line(tok), column=tok.column)
        conf = _number(c[2], "confidence", low_open=False) if len(c) > 2 and c[2] is not None else None
        for a in args:
            if isinstance(a, ast.Variable):
                _state.errors.append((a.line, a.column, "a fact cannot hold a variable"))
        return ast.NaryFact(rel, args, conf, rel.line, rel.column)

    def args(self, c):
        return tuple(_plain(t) for t in c)

    def nary(self, c):
        tok = c[0]
        return ast.NaryAtom(ast.Relation(tok.value[:-1], line=_line(tok), column=tok.column), c[1],
                            False, _line(tok), tok.column)

    def relation_decl(self, c):
        rel, kind_tok = c[0], c[1]
        other = c[2] if len(c) > 2 else None
        kind = kind_tok.value
        if kind not in DECLARATION_KINDS:
            _err(kind_tok, f"unknown relation property '{_shown(kind)}'; expected transitive, symmetric, "
                           "inverse or subrelation_of")
        elif kind in ("inverse", "subrelation_of") and other is None:
            _err(kind_tok, f"'{kind}' needs the other relation's name")
        elif kind in ("transitive", "symmetric") and other is not None:
            _state.errors.append((other.line, other.column, f"'{kind}' takes no other relation"))
        return ast.RelationDecl(rel, kind, other, rel.line, rel.column)

    def alias_decl(self, c):
        phrase = _plain(c[0])
        return ast.Alias(phrase, c[1], phrase.line, phrase.column)

    def atom(self, c):
        s, o = _plain(c[0]), _plain(c[-1])
        return ast.Atom(s, _relation_of(c[1:-1]), o, False, s.line, s.column)

    def _arith(self, op, c):
        left, right = _plain(c[0]), _plain(c[1])
        return ast.Arith(op, left, right, left.line, left.column)

    def add(self, c):
        return self._arith("+", c)

    def sub(self, c):
        return self._arith("-", c)

    def mul(self, c):
        return self._arith("*", c)

    def div(self, c):
        return self._arith("/", c)

    def mod(self, c):
        return self._arith("%", c)

    def compare(self, c):
        return c[0].value

    def comparison(self, c):
        left, op, right = _plain(c[0]), c[1], _plain(c[2])
        return ast.Comparison(left, op, right, left.line, left.column)

    def premise(self, c):
        node = c[-1]
        if len(c) == 1:
            return node
        if isinstance(node, ast.Atom):
            return ast.Atom(node.subject, node.relation, node.object, True, _line(c[0]), c[0].column)
        return ast.NaryAtom(node.relation, node.args, True, _line(c[0]), c[0].column)

    def head(self, c):
        return c[0]

    def rule_decl(self, c):
        name_tok = c[0]
        rest = c[1:]
        weight = None
        if rest and (isinstance(rest[0], Token) or rest[0] is None):
            weight = None if rest[0] is None else _number(rest[0], "rule weight", low_open=True)
            rest = rest[1:]
        premises, head = tuple(rest[:-1]), rest[-1]
        name = name_tok.value
        _, body_vars, unbound = order_comparisons(premises)
        comparisons = [a for a in premises if isinstance(a, ast.Comparison)]
        premises_only = [a for a in premises if not isinstance(a, ast.Comparison)]
        for t in unbound:
            why = ("the anonymous variable ?_ binds nothing" if t.name == ANONYMOUS else
                   f"?{t.name} is bound by no positive premise and assigned by no '?{t.name} = ...'")
            _state.errors.append((t.line, t.column, f"unbound variable in a comparison of rule {name}: {why}",
                                  "unbound_variable"))
        if comparisons and not any(not a.negated for a in premises_only):
            _state.errors.append((comparisons[0].line, comparisons[0].column, f"rule {name} has comparisons but no "
                                  "positive premise: add one that they can test", "unbound_variable"))
        assigned_somewhere = {side.name for c in comparisons if c.op == "=" for side in (c.left, c.right)
                              if isinstance(side, ast.Variable)}   # unbound: the cause is reported above
        for t in _variables(head):
            if t.name not in body_vars and t.name in assigned_somewhere and unbound:
                continue
            if t.name == ANONYMOUS:
                _state.errors.append((t.line, t.column, f"the anonymous variable ?_ cannot stand in the head "
                                                        f"of rule {name}: it binds nothing", "anonymous_in_head"))
            elif t.name not in body_vars:
                _state.errors.append((t.line, t.column,
                                      f"head variable ?{t.name} of rule {name} does not occur in any premise",
                                      "unbound_variable"))
        for a in premises_only:
            if a.negated:
                for t in _variables(a):
                    if t.name != ANONYMOUS and t.name not in body_vars:
                        _state.errors.append((t.line, t.column, f"unsafe negation in rule {name}: ?{t.name} of a "
                                                                f"'not' premise is bound by no positive premise",
                                                                "unsafe_negation"))
        if premises_only and all(a.negated for a in premises_only) and any(_variables(a) for a in premises_only):
            _state.errors.append((premises[0].line, premises[0].column,
                                  f"rule {name} has only 'not' premises with variables; add a positive premise "
                                  "that binds them", "unsafe_negation"))
        return ast.RuleDecl(name, premises, head, weight, _line(name_tok), name_tok.column)

    def qpattern(self, c):
        if len(c) == 1:
            return c[0]
        s, path, rest = _plain(c[0]), c[1], c[2:]
        o = _plain(rest[-1])
        if len(rest) > 1:   # words after the path: ``? Harbor relies on ?x`` (a relation phrase)
            if not isinstance(path, ast.Step):
                _state.errors.append((o.line, o.column, "a path is followed by one term, the object"))
                return ast.Pattern(s, path, o, s.line, s.column)
            first = path.relation
            path = ast.Step(_relation_of([ast.Symbol(first.text, first.line, first.column)] + list(rest[:-1])))
        return ast.Pattern(s, path, o, s.line, s.column)

    def query(self, c):
        return ast.Query(tuple(c), c[0].line, c[0].column)

    def why(self, c):
        negated = isinstance(c[0], Token) and c[0].type == "NOT"
        words = c[1:] if negated else c
        s, o = _plain(words[0]), _plain(words[-1])
        return ast.Why(s, _relation_of(words[1:-1]), o, negated, s.line, s.column)

    def step(self, c):
        return ast.Step(c[0])

    def alt(self, c):
        return ast.Alternative(tuple(c))

    def seq(self, c):
        return ast.Sequence(tuple(c))

    def inverse(self, c):
        return ast.Inverse(c[0])

    def plus(self, c):
        return ast.Repeat(c[0], 1, None)

    def star(self, c):
        return ast.Repeat(c[0], 0, None)

    def repeat(self, c):
        lo = int(c[1])
        hi = int(c[2]) if len(c) > 2 and c[2] is not None else None
        if hi is not None and hi < lo:
            _err(c[1], f"repetition {{{lo},{hi}}} has its maximum below its minimum")
            hi = lo
        return ast.Repeat(c[0], lo, hi)

    def repeat_exact(self, c):
        n = int(c[1])
        return ast.Repeat(c[0], n, n, exact=True)

    def start(self, c):
        return tuple(c)


def _cache_path() -> str:
    """Where the analysed grammar is kept between processes: the user's own cache folder, named by
    the grammar's, lark's and Python's versions (building the LALR tables takes ~0.3 s, loading ~3 ms)."""
    import hashlib
    import os
    import sys

    import lark
    with open(os.path.join(os.path.dirname(__file__), "thinkingdb.lark"), "rb") as fh:
        text = fh.read()
    digest = hashlib.sha256(text + lark.__version__.encode() + sys.version.encode()).hexdigest()[:20]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "thinkingdb", f"grammar-{digest}.lark")


@lru_cache(maxsize=None)
def _parser() -> Lark:
    import os
    try:
        path = _cache_path()
        with open(path, "rb") as fh:
            return Lark.__new__(Lark)._load(fh, transformer=_Builder())
    except Exception:  # noqa: BLE001 (no cache, or an unreadable one: build the tables)
        pass
    parser = Lark.open_from_package("grammar", "thinkingdb.lark", ("",), parser="lalr", lexer="contextual",
                                    transformer=_Builder(), maybe_placeholders=True, cache=False)
    try:   # written whole under a private name, then renamed: a reader never sees half a file
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            parser.save(fh)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 (a read-only home: no cache, nothing else changes)
        pass
    return parser


def _expected_words(expected) -> str:
    names = sorted({_TERMINAL_WORDS.get(e, None) or _keyword_word(e) for e in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _keyword_word(name: str) -> str:
    for term in _parser().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name.lower()


def _describe(exc: UnexpectedInput, text: str) -> tuple[int, int, str]:
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            return exc.line, exc.column, "unterminated quoted string (a closing \" is missing on this line)"
        if ch == "?":
            return exc.line, exc.column, "a variable needs a name, as in ?x"
        shown = repr(ch) if ch.isprintable() and ch else f"U+{ord(ch):04X}" if ch else "end of input"
        return exc.line, exc.column, f"unexpected character {shown}"
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        expected = getattr(exc, "expected", None) or getattr(exc, "accepts", None) or set()
        line, col = _end_position(text)
        if "DOT" in expected:
            return line, col, "missing period '.' at the end of the statement"
        return line, col, f"the input ends too early: expected {_expected_words(expected)}"
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    expected = exc.accepts or exc.expected
    found = f"'{_shown(tok.value)}'"
    if tok.type == "DOT" and "RULE" in expected:
        return tok.line, tok.column, "a stray period '.' with no statement before it"
    if tok.type == "QMARK" and "QMARK" not in expected:
        return tok.line, tok.column, "a variable needs a name, as in ?x"
    if tok.type == "NUMBER" or (tok.type == "SYMBOL" and "NUMBER" in expected):
        return tok.line, tok.column, f"a confidence must be a number, got {found}"
    if "DOT" in expected and "AT" in expected and tok.type in ("SYMBOL", "STRING"):
        return tok.line, tok.column, f"missing period '.' before {found}: a fact has exactly three parts"
    if "DOT" in expected and tok.type in ("SYMBOL", "STRING", "VAR", "RULE", "RELATION", "ALIAS", "WHY", "QMARK"):
        return tok.line, tok.column, f"missing period '.' at the end of the statement, before {found}"
    if "EQUAL" in expected and "LESSTHAN" in expected and "SYMBOL" not in expected:
        return tok.line, tok.column, (f"a comparison needs one of <, <=, >, >=, =, != between two expressions, "
                                      f"found {found}")
    if tok.type == "DOT":
        return tok.line, tok.column, f"the statement ends too early: expected {_expected_words(expected)} before '.'"
    if tok.type in ("RELATION", "ALIAS", "RULE", "WHY"):
        return tok.line, tok.column, (f"'{tok.value}' is a keyword here; quote it (\"{tok.value}\") to use it as a symbol")
    return tok.line, tok.column, f"expected {_expected_words(expected)}, found {found}"


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, col


_SPLIT = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|\.(?!\w)|[^".#]+|.', re.S)


def _chunks(text: str):
    """Yield (start_offset, chunk) pieces that each end after one statement's period."""
    start = 0
    for m in _SPLIT.finditer(text):
        if m.group() == ".":
            yield start, text[start:m.end()]
            start = m.end()
    if text[start:].strip():
        yield start, text[start:]


def _run(text: str, line_offset: int = 0):
    _state.errors = []
    _state.line_offset = line_offset
    try:
        result = _parser().parse(text)
    finally:
        errors, _state.errors = _state.errors, []
        _state.line_offset = 0
    return result, errors


_NAME = r'(\w[\w\-]*(?:[.:]\w[\w\-]*)*|"(?:[^"\\\n]|\\.)*")'
_FACT_LINE = re.compile(r"[ \t]*" + _NAME + r"[ \t]+" + _NAME + r"[ \t]+" + _NAME
                        + r"(?:[ \t]*@[ \t]*([+-]?(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)))?"
                        + r"[ \t]*\.[ \t\r]*(?:#[^\n]*)?")
_LINE_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[^"#]+')


def _ends_statement(line: str) -> bool:
    """Whether the last significant character of ``line`` (outside strings and comments) is a period."""
    code = "".join(t for t in _LINE_TOKENS.findall(line) if not t.startswith("#"))
    code = code.rstrip()
    return code.endswith(".") and not code.endswith('"')


def _fact_from_match(m: re.Match, lineno: int, line: str, errors: list) -> ast.Fact:
    names = []
    for g in (1, 2, 3):
        text = m.group(g)
        names.append((_unquote(text) if text[0] == '"' else text, m.start(g) + 1, text[0] == '"'))
    conf = None
    if m.group(4) is not None:
        tok = Token("NUMBER", m.group(4), line=1, column=m.start(4) + 1)
        _state.line_offset = lineno - 1
        _state.errors = errors
        try:
            conf = _number(tok, "confidence", low_open=False)
        finally:
            _state.line_offset = 0
            _state.errors = []
    (s, sc, sq), (r, rc, _), (o, oc, oq) = names
    if not r.strip():
        errors.append((lineno, rc, "a relation name cannot be empty"))
    return ast.Fact(ast.Symbol(s, lineno, sc, sq), ast.Relation(r, line=lineno, column=rc), ast.Symbol(o, lineno, oc, oq),
                    conf, lineno, sc)


def parse(text: str, source: str = "<string>") -> ast.Document:
    """Parse ThinkingDB source text; raise :class:`LanguageSyntaxError` listing every error.

    Plain one-line facts take a fast path (one regular expression, the same syntax); every other
    statement goes through the LALR parser.

    >>> doc = parse('nginx depends_on openssl. "AchillesIDE" uses Ploinky @0.9.')
    >>> [type(s).__name__ for s in doc.statements]
    ['Fact', 'Fact']
    >>> doc.statements[1].confidence
    0.9
    >>> parse("a b c @1.5.")
    Traceback (most recent call last):
    ...
    grammar.errors.LanguageSyntaxError: <string>:1:8: confidence must be in [0, 1], got 1.5
        a b c @1.5.
               ^
    """
    if not isinstance(text, str):
        raise TypeError("parse() takes text (str); decode bytes first")
    statements: list[ast.Statement] = []
    errors: list[tuple[int, int, str]] = []
    diagnostics: list[Diagnostic] = []
    pending: list[str] = []
    pending_start = 0
    lines = text.split("\n")

    def flush() -> None:
        chunk = "\n".join(pending)
        try:
            found, errs = _run(chunk, pending_start - 1)
            statements.extend(found)
            errors.extend(errs)
        except (UnexpectedInput, VisitError, LarkError):
            diagnostics.extend(_collect_errors(text, source, chunk, pending_start))
        except RecursionError:   # e.g. 20,000 nested ^ or parentheses: a statement too deep to build
            diagnostics.append(make_diagnostic(text, source, pending_start, 1, "this statement is nested too "
                                               "deeply to read (thousands of nested parentheses or ^)"))
        pending.clear()

    for lineno, line in enumerate(lines, 1):
        if not pending:
            m = _FACT_LINE.fullmatch(line)
            if m is not None and m.group(1) not in KEYWORDS:
                statements.append(_fact_from_match(m, lineno, line, errors))
                continue
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                continue
            pending_start = lineno
        pending.append(line)
        if _ends_statement(line):
            flush()
    if pending:
        flush()
    diagnostics.extend(make_diagnostic(text, source, *e) for e in errors)
    if diagnostics:
        raise LanguageSyntaxError(sorted(diagnostics, key=lambda d: (d.line, d.column)))
    return ast.Document(tuple(statements), source)


def _collect_errors(text: str, source: str, chunk: str, first_line: int) -> list[Diagnostic]:
    """Parse a failing chunk statement by statement and describe every error in it."""
    out: list[Diagnostic] = []
    for offset, piece in _chunks(chunk):
        base_line = first_line + chunk.count("\n", 0, offset)
        base_col = offset - (chunk.rfind("\n", 0, offset) + 1) + 1
        try:
            _, errors = _run(piece)
            found = errors
        except UnexpectedInput as exc:
            found = [_describe(exc, piece)]
        except (LarkError, VisitError) as exc:  # pragma: no cover - defensive
            found = [(1, 1, f"cannot parse this statement ({type(exc).__name__})")]
        for line, col, reason, *code in found:
            abs_line = base_line + line - 1
            abs_col = col + base_col - 1 if line == 1 else col
            out.append(make_diagnostic(text, source, abs_line, abs_col, reason, *code))
    if not out:
        try:
            _run(chunk)
        except UnexpectedInput as exc:
            line, col, reason = _describe(exc, chunk)
            out.append(make_diagnostic(text, source, first_line + line - 1, col, reason))
    return out
