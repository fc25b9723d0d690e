"""The ``.tdb`` reader: the ThinkingDB language, with a fast path for plain one-line facts."""

from __future__ import annotations

from typing import Iterator

from ..errors import ParseError
from ..language import compile_source
from ..normalize import Vocabulary
from .records import MAX_DIAGNOSTICS, Batch, Reject, _reject, read_whole

try:  # the language's one-line fact syntax, shared so the fast path reads exactly what the parser reads
    from grammar.parser import KEYWORDS as _KEYWORDS, _FACT_LINE, _ends_statement, _unquote
    from grammar.builder import escape_errors as _escape_errors
except ImportError:  # pragma: no cover - a grammar without these helpers: everything takes the parser
    _FACT_LINE = None


def _split_simple_facts(lines: list[str], quoted: bool = False) -> tuple[list[tuple[int, str, str, str, float]],
                                                                         list[str]]:
    """Plain one-line facts with a valid confidence, and the other lines (facts blanked out) for the parser.

    Mirrors the parser's own fast path: a line is a candidate only when no statement is pending.
    Anything doubtful (bad confidence, empty names, an unknown escape) is left to the parser, which
    reports it; with ``quoted`` (symbol mode ``quoted``), so is a fact with a quoted symbol.
    """
    simple: list[tuple[int, str, str, str, float]] = []
    rest = list(lines)
    if _FACT_LINE is None:
        return simple, rest
    pending = False
    fullmatch = _FACT_LINE.fullmatch
    for i, line in enumerate(lines):
        if not pending:
            m = fullmatch(line)
            if m is not None and m.group(1) not in _KEYWORDS and not (quoted and (m.group(1)[0] == '"'
                                                                                  or m.group(3)[0] == '"')):
                s, r, o, c = m.group(1, 2, 3, 4)
                if "\\" in line and any(_escape_errors(t, 0, 0) for t in (s, r, o) if t[0] == '"'):
                    pending = not _ends_statement(line)
                    continue
                if s[0] == '"':
                    s = _unquote(s)
                if r[0] == '"':
                    r = _unquote(r)
                if o[0] == '"':
                    o = _unquote(o)
                try:
                    conf = 1.0 if c is None else float(c)
                except ValueError:
                    conf = -1.0
                if 0.0 <= conf <= 1.0 and s.strip(_QUOTE_EDGES) and o.strip(_QUOTE_EDGES) and r.strip(_QUOTE_EDGES):
                    simple.append((i + 1, s, r, o, conf))
                    rest[i] = ""
                    continue
            stripped = line.strip()
            if not stripped or stripped[0] == "#":
                continue
        pending = not _ends_statement(line)
    return simple, rest


_QUOTE_EDGES = " \t\"'“”‘’«»`"


def read_tdb(path: str, source: str, vocab: Vocabulary, library: bool = True) -> Iterator[Batch]:
    """The ThinkingDB language; with errors, each bad statement's lines become rejects.

    ``library``: a rule whose ``not`` cycles with the default rule library is refused
    (``cyclic_negation``), since every question that applies the library would fail.

    Plain one-line facts are read directly (the same syntax as the parser's fast path); the rest of the
    file goes through the parser and compiler, whose aliases and inverse declarations then apply to
    every fact of the file, wherever it stands.
    """
    text, batch = read_whole(path, source)
    if text is None:
        yield batch
        return
    from ..engine.rules import library_rules   # the library's rules, declarations compiled (engine/rulelib.py)
    lines = text.split("\n")
    simple, rest = _split_simple_facts(lines, vocab.mode == "quoted")
    blanked: set[int] = set()
    while True:
        try:
            program = compile_source("\n".join("" if i + 1 in blanked else ln for i, ln in enumerate(rest)),
                                     source, vocab, library=library_rules if library else None)
            break
        except ParseError as exc:
            new = {d.line for d in exc.diagnostics} - blanked
            for d in exc.diagnostics:
                if d.line not in blanked:
                    text_line = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
                    batch.rejects.append(Reject(d, text_line))
            if not new or len(batch.rejects) > MAX_DIAGNOSTICS:
                yield batch
                return
            blanked |= new
    rows = [(f.subject, f.relation, f.object, f.confidence, line, None, None) for f, line in program.facts]
    first_line: dict[str, int] = {}
    for s_, _, o_, _, line, _, _ in rows:
        first_line.setdefault(s_, line)
        first_line.setdefault(o_, line)
    labels: dict[str, str] = {}
    skeys: dict[str, str] = {}
    rkeys: dict[str, tuple[str, bool]] = {}
    inverses, symbol = vocab.inverses, vocab.symbol
    for line, s_, r_, o_, conf in simple:
        ks = skeys.get(s_)
        if ks is None:
            ks = skeys[s_] = symbol(s_)
        ko = skeys.get(o_)
        if ko is None:
            ko = skeys[o_] = symbol(o_)
        rel = rkeys.get(r_)
        if rel is None:
            k = vocab.relation(r_)
            rel = rkeys[r_] = (inverses.get(k, k), k in inverses)
        rows.append((ko, rel[0], ks, conf, line, None, None) if rel[1] else (ks, rel[0], ko, conf, line, None, None))
        if ks not in labels and first_line.get(ks, line + 1) > line:
            labels[ks] = s_.strip()
        if ko not in labels and first_line.get(ko, line + 1) > line:
            labels[ko] = o_.strip()
    for key, label in program.labels.items():
        labels.setdefault(key, label)
    rows.sort(key=lambda r: r[4])
    batch.rows = rows
    batch.labels = labels
    batch.rules, batch.declarations, batch.aliases = program.rules, program.declarations, program.aliases
    if not batch.records and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no facts, rules, declarations or aliases", ""))
    yield batch
