"""RDF in and out: N-Triples, Turtle, N-Quads, TriG and JSON-LD read through pyoxigraph; N-Triples and
Turtle written by hand (no extra needed to export).

Reading (the optional ``rdf`` extra, ``pip install 'thinkingdb[rdf]'``):

* IRIs are symbol keys kept exactly (in a store whose symbol mode folds everything, they are folded
  like any word); the symbols and relations ThinkingDB itself exported (``urn:thinkingdb:``) come back
  as the keys they were.
* ``rdfs:label`` / ``skos:prefLabel`` with a literal become the subject's display label, not a fact.
* ``rdfs:subPropertyOf``, ``owl:inverseOf`` and ``rdf:type owl:TransitiveProperty`` /
  ``owl:SymmetricProperty`` become the matching relation declarations.
* Other literals become symbols (their lexical form; language tag and datatype are dropped and counted),
  or with ``literals="skip"`` are skipped and counted.
* Blank nodes get fresh ids per ingest (``_:`` keys), so two files never share one by accident.
* The graph of an N-Quads or TriG statement is kept as provenance (``graph`` in ``kb.provenance``).
* A reified statement carrying ``urn:thinkingdb:confidence`` is the fact with that confidence (this is
  how an export keeps confidences below 1).

Measured on 1M N-Triples lines (benchmarks/ingest.py): pyoxigraph parses them into Python objects in
1.7 s, rdflib's parser takes 30 s, so pyoxigraph is the parser.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from typing import Iterator
from urllib.parse import unquote

from ..errors import Diagnostic, IngestError
from ..model import Declaration
from ..normalize import _IRI, _QUOTES, Vocabulary
from .rdfwrite import CONFIDENCE, OWL, RDF, RDFS, RELATION_NS, SYMBOL_NS, XSD
from .ntlines import block_reader
from .records import CHUNK, MAX_DIAGNOSTICS, Batch, Interner, _reject as reject

LABELS = (RDFS + "label", "http://www.w3.org/2004/02/skos/core#prefLabel")
_REIFY = {RDF + "subject": 0, RDF + "predicate": 1, RDF + "object": 2}
_PLAIN_TYPES = (XSD + "string", RDF + "langString")
_EDGES = frozenset(_QUOTES + "<>")   # first or last characters that vocab.symbol would strip
_SPECIAL = frozenset({*_REIFY, CONFIDENCE, RDF + "type", *LABELS, RDFS + "subPropertyOf", OWL + "inverseOf"})

FORMATS = {".nt": "N_TRIPLES", ".ttl": "TURTLE", ".nq": "N_QUADS", ".trig": "TRIG", ".jsonld": "JSON_LD"}
"""RDF file extensions and the pyoxigraph format each is read as."""
_LINE_FORMATS = ("N_TRIPLES", "N_QUADS")


def _oxigraph(source: str):
    try:
        import pyoxigraph
    except ImportError:
        raise IngestError([Diagnostic(source, 0, 0, "reading RDF needs pyoxigraph: pip install 'thinkingdb[rdf]'")]) \
            from None
    return pyoxigraph


class _Reader:
    """The state of one RDF file being read: key memos, pending reifications, counts."""

    def __init__(self, source: str, vocab: Vocabulary, literals: str):
        self.source, self.vocab, self.literals = source, vocab, literals
        self.skeys: dict[str, str] = {}
        self.rkeys: dict[str, tuple[str, bool]] = {}
        self.reified: dict[str, list] = {}  # node -> [s, p, o, confidence, graph]
        self.reified_rest: list = []  # rdf:subject/predicate/object triples of nodes without a confidence
        self.counts: dict[str, int] = {}
        self.blank = "_:" + secrets.token_hex(4) + "."  # blank nodes are local to one reading of one file
        self.exact = vocab.mode != "folded"   # IRIs are their own keys (see thinkingdb.normalize.symbol_key)

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def symbol(self, term, batch: Batch) -> str | None:
        """The key of a subject or object term (None: a literal that is skipped)."""
        kind = type(term).__name__
        value = term.value
        if kind == "NamedNode":
            key = self.skeys.get(value)
            return self.named(value) if key is None else key
        if kind == "BlankNode":
            return self.blank + value
        if kind == "Literal":
            return self.literal(value, bool(term.language) or term.datatype.value not in _PLAIN_TYPES, batch)
        self.count("quoted triples skipped")
        return None

    def literal(self, value: str, tagged: bool, batch: Batch) -> str | None:
        """The key of a literal object (None: skipped); ``tagged``: it has a language tag or a datatype
        other than a plain string's."""
        if self.literals == "skip":
            self.count("literals skipped")
            return None
        if tagged:
            self.count("literal tags and datatypes dropped")
        if not value.strip():
            self.count("empty literals skipped")
            return None
        key = self.vocab.symbol(value)
        batch.labels.setdefault(key, value.strip())
        return key

    def relation_key(self, iri: str) -> str:
        """The relation key of a predicate IRI, before inverses orient it."""
        return unquote(iri[len(RELATION_NS):]) if iri.startswith(RELATION_NS) else self.vocab.relation(iri)

    def relation(self, iri: str) -> tuple[str, bool]:
        """The stored relation of a predicate and whether subject and object swap."""
        rel = self.rkeys.get(iri)
        if rel is None:
            k = self.relation_key(iri)
            rel = self.rkeys[iri] = (self.vocab.inverses.get(k, k), k in self.vocab.inverses)
        return rel

    def schema(self, s, p: str, o, batch: Batch) -> bool:
        """A declaration triple: record it and return True."""
        if type(s).__name__ != "NamedNode":
            return False
        key = self.relation_key
        if p == RDFS + "subPropertyOf" and type(o).__name__ == "NamedNode":
            decl = Declaration(self.relation(s.value)[0], "subrelation_of", self.relation(o.value)[0])
        elif p == OWL + "inverseOf" and type(o).__name__ == "NamedNode":
            decl = Declaration(key(s.value), "inverse", key(o.value))
        elif p == RDF + "type" and o.value in (OWL + "TransitiveProperty", OWL + "SymmetricProperty"):
            kind = "transitive" if o.value.endswith("TransitiveProperty") else "symmetric"
            decl = Declaration(self.relation(s.value)[0], kind)
        else:
            return False
        if decl.relation != decl.other:
            batch.declarations.append((decl, 0))
        return True

    def fast(self, ox):
        """The per-statement function: an IRI-to-IRI triple in the default graph (the common case) is
        handled inline, everything else by :meth:`triple`."""
        named, default = ox.NamedNode, ox.DefaultGraph
        skeys, relation, special, triple = self.skeys, self.relation, _SPECIAL, self.triple

        def one(q, batch: Batch, line: int) -> None:
            p = q.predicate.value
            s, o = q.subject, q.object
            if p in special or type(s) is not named or type(o) is not named or type(q.graph_name) is not default:
                triple(q, batch, line)
                return
            ks = skeys.get(s.value)
            if ks is None:
                ks = self.named(s.value)
            ko = skeys.get(o.value)
            if ko is None:
                ko = self.named(o.value)
            rel, flip = relation(p)
            batch.rows.append((ko, rel, ks, 1.0, line, None, None) if flip else (ks, rel, ko, 1.0, line, None, None))
        return one

    def named(self, value: str) -> str:
        """The key of an IRI (memoized; the memo is cleared when it grows past 2**18 entries)."""
        if len(self.skeys) > 1 << 18:
            self.skeys.clear()
        if value.startswith(SYMBOL_NS):
            key = unquote(value[len(SYMBOL_NS):])
        elif self.exact and value[:1] not in _EDGES and value[-1:] not in _EDGES and not value[0].isspace() \
                and not value[-1].isspace() and _IRI.fullmatch(value):
            key = value   # what vocab.symbol gives (symbol_key: an IRI is kept exactly), without its steps
        else:
            key = self.vocab.symbol(value)
        self.skeys[value] = key
        return key

    def triple(self, q, batch: Batch, line: int) -> None:
        s, p, o = q.subject, q.predicate.value, q.object
        if p in _REIFY or p == CONFIDENCE or (p == RDF + "type" and o.value == RDF + "Statement"):
            if type(s).__name__ != "Literal":
                self._reify(q, batch, line)
                return
        if p in LABELS and type(o).__name__ == "Literal":
            key = self.symbol(s, batch)
            if key is not None and o.value.strip():
                batch.labels[key] = o.value.strip()
                self.count("labels")
            return
        if self.schema(s, p, o, batch):
            return
        ks, ko = self.symbol(s, batch), self.symbol(o, batch)
        if ks is None or ko is None:
            return
        rel, flip = self.relation(p)
        detail = None if q.graph_name is None or type(q.graph_name).__name__ == "DefaultGraph" else \
            '{"graph": ' + _json_str(_term_text(q.graph_name)) + "}"
        batch.rows.append((ko, rel, ks, 1.0, line, None, detail) if flip else (ks, rel, ko, 1.0, line, None, detail))

    def _reify(self, q, batch: Batch, line: int) -> None:
        node = _term_text(q.subject)
        entry = self.reified.setdefault(node, [None, None, None, None, q, line])
        p = q.predicate.value
        if p in _REIFY:
            entry[_REIFY[p]] = q.object
        elif p == CONFIDENCE:
            try:
                entry[3] = float(q.object.value)
            except ValueError:
                entry[3] = -1.0
        self.reified_rest.append((node, q, line))

    def finish(self, batch: Batch) -> None:
        """Reified statements with a confidence become facts; other reification triples plain facts."""
        done = set()
        for node, (s, p, o, conf, q, line) in self.reified.items():
            if None in (s, p, o, conf) or type(p).__name__ != "NamedNode":
                continue
            if not 0.0 <= conf <= 1.0:
                batch.rejects.append(reject(self.source, line, 1, f"confidence of statement {node} must be a "
                                            f"number in [0, 1], got {conf}", node))
                continue
            ks, ko = self.symbol(s, batch), self.symbol(o, batch)
            if ks is None or ko is None:
                continue
            rel, flip = self.relation(p.value)
            batch.rows.append((ko, rel, ks, conf, line, None, None) if flip else (ks, rel, ko, conf, line, None, None))
            done.add(node)
        for node, q, line in self.reified_rest:
            if node in done:
                continue
            ks, ko = self.symbol(q.subject, batch), self.symbol(q.object, batch)
            if ks is not None and ko is not None:
                rel, flip = self.relation(q.predicate.value)
                batch.rows.append((ko, rel, ks, 1.0, line, None, None) if flip else
                                  (ks, rel, ko, 1.0, line, None, None))


def _term_text(term) -> str:
    return ("_:" if type(term).__name__ == "BlankNode" else "") + term.value


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)



_IRREGULAR = re.compile(rb"(?m)^[ \t]*(?:#|\r?$)")  # a comment or blank line: line numbers need a map


def _statement_lines(data: bytes) -> list[int] | None:
    """1-based numbers of the lines holding a statement, or None when every line does."""
    if not _IRREGULAR.search(data):
        return None
    return [i for i, ln in enumerate(data.split(b"\n"), 1) if ln.strip() and not ln.lstrip().startswith(b"#")]


def _blocks(fh) -> Iterator[bytes]:
    """Whole lines, about 1 MiB at a time."""
    rest = b""
    while True:
        data = fh.read(1 << 20)
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            yield data[:cut]


def _line_quads(ox, fmt, fh, source: str, simple=None) -> Iterator[tuple[object, int, object, int]]:
    """``(quad, line, None, bytes)`` per statement of an N-Triples/N-Quads stream, or
    ``(None, line, reject, bytes)`` for a bad line; reading goes on with the next line.

    ``simple(block, first line)``, when given, takes a block of whole lines and returns ``(line number,
    text)`` of the lines it did not handle (None: it handled none, the block is not UTF-8); after each
    such block ``(None, 0, None, bytes)`` marks the progress."""
    line_no = 0
    for block in _blocks(fh):
        data, base, size = block, line_no, len(block)
        line_no += block.count(b"\n") + (not block.endswith(b"\n"))
        if simple is not None:
            slow = simple(block, base + 1)
            if slow is not None:
                yield None, 0, None, size
                if slow:
                    yield from _mapped_quads(ox, fmt, [ln for _, ln in slow], [i for i, _ in slow], source)
                continue
        while data:
            stmts = _statement_lines(data)
            k, held = 0, None   # the last statement, given out once the parser is past its line
            try:
                for q in ox.parse(data, fmt):
                    if held is not None:
                        yield held + (None, size)
                        size = 0
                    held = (q, base + (stmts[k] if stmts is not None else k + 1))
                    k += 1
                if held is not None:
                    yield held + (None, size)
                    size = 0
                data = b""
            except SyntaxError as exc:
                bad, column = max(exc.lineno or 1, 1), exc.offset or 1
                lines = data.split(b"\n")
                while bad > 1 and (bad > len(lines) or not lines[bad - 1].strip()):  # an end of input: the
                    bad -= 1                                                       # statement left open
                    column = len(lines[bad - 1]) + 1
                if held is not None and held[1] != base + bad:   # a line with an error gives nothing, not
                    yield held + (None, size)                    # the statement read before the error
                    size = 0
                text = lines[bad - 1].decode("utf-8", "replace") if bad <= len(lines) else ""
                yield None, base + bad, reject(source, base + bad, column, _message(exc), text), size
                size = 0
                data = b"\n".join(lines[bad:])
                base += bad


def _mapped_quads(ox, fmt, lines: list[str], where: list[int], source: str):
    """The statements of ``lines`` (one each; ``where[k]`` is the file line of ``lines[k]``), going on
    after a bad line."""
    while lines:
        k, held = 0, None   # as in _line_quads: a statement is given out once the parser is past its line
        try:
            for q in ox.parse("\n".join(lines).encode("utf-8"), fmt):
                if held is not None:
                    yield held
                held = (q, where[k], None, 0)
                k += 1
            if held is not None:
                yield held
            return
        except SyntaxError as exc:
            bad = min(max(exc.lineno or 1, 1), len(lines))
            if held is not None and held[1] != where[bad - 1]:
                yield held
            yield None, where[bad - 1], reject(source, where[bad - 1], exc.offset or 1, _message(exc),
                                               lines[bad - 1]), 0
            lines, where = lines[bad:], where[bad:]


def _stream_quads(ox, fmt, fh, source: str) -> Iterator[tuple[object, int, object, int]]:
    """Turtle, TriG, JSON-LD: the whole stream through the parser; the first syntax error ends it."""
    try:
        for q in ox.parse(fh, fmt):
            yield q, 0, None, 0
    except SyntaxError as exc:
        yield None, exc.lineno or 0, reject(source, exc.lineno or 0, exc.offset or 0, _message(exc), ""), 0


def _message(exc: SyntaxError) -> str:
    msg = str(exc)
    return "invalid RDF: " + (msg.split(": ", 1)[-1] if msg.startswith("Parser error") else msg)


def _inverse_declarations(ox, fmt, line_based: bool, path: str, reader: _Reader) -> None:
    """A first pass over a file that mentions owl:inverseOf, so that every fact of the file is stored
    in its one direction whichever line declares the inverse."""
    with open(path, "rb") as fh:
        quads = _line_quads(ox, fmt, fh, reader.source) if line_based else _stream_quads(ox, fmt, fh, "")
        for q, _, bad, _ in quads:
            if bad is None and q.predicate.value == OWL + "inverseOf" and type(q.subject).__name__ == "NamedNode" \
                    and type(q.object).__name__ == "NamedNode":
                try:
                    reader.vocab.add_inverse(q.subject.value, q.object.value)
                except ValueError:
                    pass  # the second pass reports the conflict on its line


def _mentions(path: str, needle: bytes) -> bool:
    with open(path, "rb") as fh:
        tail = b""
        for block in iter(lambda: fh.read(1 << 22), b""):
            if needle in tail + block[:len(needle)] or needle in block:
                return True
            tail = block[-len(needle):]
    return False


def read_rdf(path: str, source: str, vocab: Vocabulary, *, literals: str = "symbols",
             ids: Interner | None = None) -> Iterator[Batch]:
    """An RDF file (by extension, see :data:`FORMATS`) as batches of facts, labels and declarations.

    ``literals``: ``"symbols"`` (a literal object becomes a symbol) or ``"skip"`` (skipped, counted).
    ``ids``: N-Triples and N-Quads lines of three IRIs come as :attr:`Batch.columns` of these ids (the
    ingest's bulk fact writer passes its own, :mod:`thinkingdb.store.ntlines`); without, every row is
    in ``rows``.
    """
    ox = _oxigraph(source)
    ext = os.path.splitext(path)[1].lower()
    fmt = getattr(ox.RdfFormat, FORMATS[ext])
    line_based = FORMATS[ext] in _LINE_FORMATS
    reader = _Reader(source, vocab, literals)
    from .nesting import MAX_NESTING, too_deep
    deep = None if line_based else too_deep(path, FORMATS[ext])
    if deep is not None:   # the parser takes quadratic time in the nesting: refused before it runs
        batch = Batch(source)
        batch.rejects.append(reject(source, deep[0], deep[1], f"nested deeper than {MAX_NESTING:,} brackets; "
                                    "refused before parsing (thinkingdb.store.nesting.MAX_NESTING)", ""))
        yield batch
        return
    if _mentions(path, b"inverseOf"):
        _inverse_declarations(ox, fmt, line_based, path, reader)
    columnar, ids = ids is not None, ids or Interner()
    batch = Batch(source, ids=ids)
    current = [batch]
    any_statement = False
    one = reader.fast(ox)
    with open(path, "rb") as fh:
        quads = _line_quads(ox, fmt, fh, source, block_reader(reader, ox, current, ids, _SPECIAL)) \
            if line_based else _stream_quads(ox, fmt, fh, source)
        for q, line, bad, size in quads:
            batch.size += size
            if q is None and bad is None:  # progress after a block read on the simple path
                any_statement = any_statement or bool(batch.rows) or bool(batch.columns)
                if batch.fact_count >= CHUNK:
                    yield batch if columnar else _as_rows(batch)
                    batch = current[0] = Batch(source, ids=ids)
                continue
            if bad is not None:
                batch.rejects.append(bad)
                if len(batch.rejects) > MAX_DIAGNOSTICS:
                    break
                continue
            any_statement = True
            one(q, batch, line)
            if len(batch.rows) >= CHUNK:
                yield batch if columnar else _as_rows(batch)
                batch = current[0] = Batch(source, ids=ids)
    reader.finish(batch)
    if not any_statement and not batch.rejects:
        batch.rejects.append(reject(source, 1, 1, "the file holds no RDF statements", ""))
    batch.notes = dict(reader.counts)
    yield batch if columnar else _as_rows(batch)


def _as_rows(batch: Batch) -> Batch:
    batch.rows, batch.columns = batch.all_rows(), []
    return batch
