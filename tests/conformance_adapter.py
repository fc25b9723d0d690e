"""Adapter from the ``datalog-conformance`` suite (PyPI) to the ThinkingDB language.

A case's program (facts per predicate, rules as Datalog text) is translated into ThinkingDB source,
compiled, closed in full mode, and the model read back per predicate. Encoding:

* every distinct value -- by type and value, so ``"1"`` and ``1`` stay apart -- is a symbol ``vN``;
  every predicate a relation ``pN`` (symbol keys fold case; the suite's values do not);
* arity 2: ``a pN b``; arity 1: ``a pN true_``; arity 0: ``true_ pN true_``; arity 3 and more, and
  every predicate used with several arities: the n-ary form ``pN(a, b, c)``;
* in rules, identifiers are variables, ``_`` is ``?_``, quoted strings and numbers are values;
  ``not p(...)`` / ``!p(...)`` is a ``not`` premise.

Arithmetic and comparisons: a comparison of the body (``X < Y``, ``(n <= 25)``) is a comparison of the
language; an expression argument (``A(a, b, a+b)``, ``Fib(n - 1, x)``) becomes a fresh variable ``?e__N``
and the comparison ``?e__N = expr`` -- an assignment in a head, a test in a body literal (where a
variable only in the expression stays unbound, as Crepe says). Integers are numbers of the language
(``-4``), other values symbols.

A case is *expressible* when every rule parses into that shape. Cases
harvested from Nemo read a variable that occurs only inside one negated literal as "any value" (Nemo's
semantics); there a variable occurring once becomes ``?_``, and a repeated one an auxiliary relation of
the literal's bound variables (``not s3(X, P, P)`` -> ``aux(X) :- s3(X, P, P)`` and ``not aux(X)``).
Elsewhere such a variable is translated as written -- and refused as unsafe, as those cases expect.

Expected errors map to the diagnostic codes of :mod:`thinkingdb.language` (:data:`ERROR_CODES`).

Defeasible theories are expressible only when they are strict: no defeasible rules, defeaters,
superiority or conflicts (the suite's ``strict_only`` lifts of the Datalog cases). Their strict rules
are then a Datalog program, and both the ``definitely`` and the ``defeasibly`` sections are its model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thinkingdb.engine.closure import closure
from thinkingdb.engine.graph import FactGraph
from thinkingdb.errors import ParseError
from thinkingdb.language import compile_source

# the suite's error names -> the code of the first diagnostic ThinkingDB gives
ERROR_CODES = {
    "arity_mismatch": "arity_mismatch",
    "cyclic_negation": "cyclic_negation",
    "unbound_variable": "unbound_variable",
    "safety_violations": "anonymous_in_head",
    "SafetyViolationError": "unsafe_negation",
}


class NotExpressible(Exception):
    """The case uses something the language has no form for (arithmetic, comparisons, ...)."""


class ConformanceError(Exception):
    """A ThinkingDB error, named as the suite names it (``code``), for the suite's runner."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


_LITERAL = re.compile(r"\s*(not\s+|!\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*\Z", re.S)
_NULLARY = re.compile(r"\s*(not\s+|!\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\Z")
_TERM = re.compile(r'\s*(?:"([^"]*)"|(-?\d+)|([A-Za-z_][A-Za-z0-9_]*))\s*\Z')
_TOKEN = re.compile(r'\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|!=|[-+*/%()<>=]))')
_COMPARE = re.compile(r"(<=|>=|!=|<|>|=)")


@dataclass(frozen=True)
class Literal:
    pred: str
    args: tuple
    negated: bool = False


@dataclass(frozen=True)
class Comparison:
    """``left op right`` of a body; each side an expression as ThinkingDB text."""
    left: str
    op: str
    right: str


def _split(body: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def expression(text: str) -> str:
    """An arithmetic expression of the suite (identifiers are variables) as ThinkingDB text:
    ``a+b`` -> ``?a + ?b``, ``1-2-3`` -> ``1 - 2 - 3`` (same precedence and associativity)."""
    out: list[str] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise NotExpressible(f"not an arithmetic expression: {text!r}")
        pos = m.end()
        number, name, op = m.groups()
        if number is not None:
            if out and out[-1] == "-" and (len(out) == 1 or out[-2] in "+-*/%("):
                out[-1] = "-" + number   # a negative literal
            else:
                out.append(number)
        elif name is not None:
            out.append("?_" if name == "_" else f"?{name}")
        elif op in "<>=" or op in ("<=", ">=", "!="):
            raise NotExpressible(f"a comparison inside an expression: {text!r}")
        else:
            out.append(op)
    return " ".join(out).replace("( ", "(").replace(" )", ")")


def _argument(raw: str):
    t = _TERM.match(raw)
    if t is not None:
        if t.group(1) is not None:
            return ("const", t.group(1))
        if t.group(2) is not None:
            return ("const", int(t.group(2)))
        return ("var", t.group(3))
    return ("expr", expression(raw))


def _item(text: str):
    """A body item: a literal, or a comparison (possibly in parentheses)."""
    m = _LITERAL.fullmatch(text)
    if m is not None and _balanced(m.group(3)):
        args = [] if not m.group(3).strip() else [_argument(a) for a in _split(m.group(3))]
        return Literal(m.group(2), tuple(args), m.group(1) is not None)
    m = _NULLARY.fullmatch(text)
    if m is not None:   # a propositional atom (`q :- p.`): arity 0
        return Literal(m.group(2), (), m.group(1) is not None)
    body = text.strip()
    while body.startswith("(") and body.endswith(")") and _balanced(body[1:-1]):
        body = body[1:-1].strip()
    parts = _COMPARE.split(body)
    if len(parts) != 3:
        raise NotExpressible(f"not a literal or a comparison: {text.strip()!r}")
    return Comparison(expression(parts[0]), parts[1], expression(parts[2]))


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _literal(text: str) -> Literal:
    item = _item(text)
    if not isinstance(item, Literal):
        raise NotExpressible(f"not a literal: {text.strip()!r}")
    return item


def parse_rule(text: str) -> tuple[Literal, list]:
    """``Head :- Body.`` into a head literal and body items; raises :class:`NotExpressible`."""
    text = text.strip().rstrip(".")
    if ":-" not in text:
        raise NotExpressible("a rule without a body")
    head, body = text.split(":-", 1)
    return _literal(head), [_item(b) for b in _split(body)]


class Translation:
    """One program in ThinkingDB source, with the tables to read its model back."""

    def __init__(self, program, nemo: bool):
        self.values: dict[tuple, str] = {}
        self.preds: dict[str, str] = {}
        self.arities: dict[str, set[int]] = {}
        self.aux = 0
        rules = [parse_rule(r) for r in program.rules]
        for pred, rows in program.facts.items():
            self.arities.setdefault(pred, set()).update(len(r) for r in rows)
        for head, body in rules:
            for lit in [head] + [b for b in body if isinstance(b, Literal)]:
                self.arities.setdefault(lit.pred, set()).add(len(lit.args))
        lines = [self.fact(pred, row) for pred, rows in program.facts.items() for row in rows]
        extra: list[str] = []
        for i, (head, body) in enumerate(rules):
            if nemo:
                body = self.existential(body, extra)
            lines.append(self.rule(f"r{i}", head, body))
        self.source = "\n".join(lines + extra) + "\n"

    def nary(self, pred: str) -> bool:
        a = self.arities[pred]
        return len(a) > 1 or max(a) > 2

    def value(self, v) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)   # an integer is a number of the language (arithmetic works on it)
        key = (type(v).__name__, v)
        if key not in self.values:
            self.values[key] = f"v{len(self.values)}"
        return self.values[key]

    def rel(self, pred: str) -> str:
        if pred not in self.preds:
            self.preds[pred] = f"p{len(self.preds)}"
        return self.preds[pred]

    def atom(self, pred: str, terms: list[str]) -> str:
        r = self.rel(pred)
        if self.nary(pred):
            return f"{r}({', '.join(terms)})"
        if len(terms) == 2:
            return f"{terms[0]} {r} {terms[1]}"
        if len(terms) == 1:
            return f"{terms[0]} {r} true_"
        return f"true_ {r} true_"

    def fact(self, pred: str, row) -> str:
        return self.atom(pred, [self.value(v) for v in row]) + "."

    def term(self, t, checks: list[str]) -> str:
        """A term; an expression becomes a fresh variable and the comparison ``?e = expr``."""
        kind, v = t
        if kind == "const":
            return self.value(v)
        if kind == "expr":
            self.aux += 1
            var = f"?e__{self.aux}"
            checks.append(f"{var} = {v}")
            return var
        return "?_" if v == "_" else f"?{v}"

    def rule(self, name: str, head: Literal, body: list) -> str:
        prem, checks = [], []
        for b in body:
            if isinstance(b, Comparison):
                checks.append(f"{b.left} {b.op} {b.right}")
            else:
                prem.append(("not " if b.negated else "") + self.atom(b.pred, [self.term(t, checks) for t in b.args]))
        head_text = self.atom(head.pred, [self.term(t, checks) for t in head.args])
        return f"rule {name}: {', '.join(prem + checks)} => {head_text}."

    def existential(self, body: list[Literal], extra: list[str]) -> list[Literal]:
        """Nemo: variables only inside one negated literal mean "any value"."""
        positive = {v for b in body if isinstance(b, Literal) and not b.negated for k, v in b.args if k == "var"}
        out = []
        for b in body:
            if isinstance(b, Comparison):
                out.append(b)
                continue
            local = [v for k, v in b.args if k == "var" and v not in positive and v != "_"] if b.negated else []
            if not local:
                out.append(b)
            elif all(local.count(v) == 1 for v in local):
                out.append(Literal(b.pred, tuple(("var", "_") if k == "var" and v in local else (k, v)
                                                 for k, v in b.args), True))
            else:
                kept = [(k, v) for k, v in b.args if k == "var" and v not in local]
                kept = list(dict.fromkeys(kept))
                self.aux += 1
                aux = f"__aux{self.aux}"
                self.arities[aux] = {len(kept)}
                extra.append(self.rule(f"aux{self.aux}", Literal(aux, tuple(kept)), [Literal(b.pred, b.args)]))
                out.append(Literal(aux, tuple(kept), True))
        return out

    def read(self, triples, wanted: list[str]) -> dict[str, set[tuple]]:
        """The model's tuples of each wanted predicate, values decoded."""
        back = {sym: v for (_, v), sym in self.values.items()}
        decode = lambda k: back[k] if k in back else int(k)  # noqa: E731 (numbers are themselves)
        out: dict[str, set[tuple]] = {p: set() for p in wanted}
        nodes: dict[str, dict[int, str]] = {}
        rel_of = {r: p for p, r in self.preds.items()}
        for s, r, o in triples:
            base, _, pos = r.partition(".")
            pred = rel_of.get(base)
            if pred not in out:
                continue
            if self.nary(pred):
                if pos.isdigit():
                    nodes.setdefault((pred, s), {})[int(pos)] = o
            elif not pos:
                row = (s, o) if max(self.arities[pred]) == 2 else (s,) if max(self.arities[pred]) == 1 else ()
                out[pred].add(tuple(decode(x) for x in row))
        for (pred, _), roles in nodes.items():
            n = max(self.arities[pred])
            if len(roles) == n:
                out[pred].add(tuple(decode(roles[i]) for i in range(1, n + 1)))
        return out


def strict_program(theory):
    """A strict defeasible theory as a Datalog program; raises :class:`NotExpressible` otherwise."""
    from datalog_conformance.schema import Program
    if theory.defeasible_rules or theory.defeaters or theory.superiority or theory.conflicts:
        raise NotExpressible("defeasible rules, defeaters, superiority or conflicts")
    if any(not r.body for r in theory.strict_rules):
        raise NotExpressible("a strict rule without a body")
    return Program(facts=theory.facts, rules=[f"{r.head} :- {', '.join(r.body)}." for r in theory.strict_rules])


class ThinkingDBEvaluator:
    """The suite's ``DatalogEvaluator`` protocol over ThinkingDB (``evaluate(program) -> facts``), and
    its ``DefeasibleEvaluator`` for strict theories (``evaluate(theory, policy) -> sections``)."""

    def __init__(self, nemo: bool = False):
        self.nemo = nemo

    def translate(self, program) -> Translation:
        return Translation(program, self.nemo)

    def evaluate(self, program, policy=None):
        if hasattr(program, "strict_rules"):
            model = self.evaluate(strict_program(program))
            return {"definitely": model, "defeasibly": model}
        tr = self.translate(program)
        key = (tr.source, tuple(sorted(program.facts)))
        if key in _MODELS:   # the suite repeats programs (one case per relation, strict-only lifts)
            return _MODELS[key]
        try:
            compiled = compile_source(tr.source, "<conformance>")
        except ParseError as exc:
            code = exc.diagnostics[0].code
            named = {v: k for k, v in ERROR_CODES.items()}.get(code, code or "syntax")
            raise ConformanceError(named, str(exc)) from exc
        g = FactGraph([f for f, _ in compiled.facts])
        res = closure(g, [r for r, _ in compiled.rules])
        if res.truncated:
            raise AssertionError(f"closure truncated: {res.truncated}")
        triples = [(f.subject, f.relation, f.object) for f in g.facts()]
        triples += [(t.subject, t.relation, t.object) for t in res.derived]
        wanted = sorted(set(program.facts) | set(tr.preds))
        _MODELS[key] = model = tr.read(triples, wanted)
        return model


_MODELS: dict[tuple, dict] = {}
