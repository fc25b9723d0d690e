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

Terms become keys in :mod:`~thinkingdb.store.rdfterms`; statements and their lines come from
:mod:`~thinkingdb.store.rdfquads`.

Measured on 1M N-Triples lines (benchmarks/ingest.py): pyoxigraph parses them into Python objects in
1.7 s, rdflib's parser takes 30 s, so pyoxigraph is the parser.
"""

from __future__ import annotations

import os
import secrets
from typing import Iterator

from ..errors import Diagnostic, IngestError
from ..normalize import Vocabulary
from .ntlines import block_reader
from .rdfquads import line_quads, stream_quads
from .rdfterms import SPECIAL, Reader as _Reader
from .rdfwrite import OWL
from .records import CHUNK, MAX_DIAGNOSTICS, Batch, Interner, _reject as reject

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


def _inverse_declarations(ox, fmt, line_based: bool, path: str, reader: _Reader) -> None:
    """A first pass over a file that mentions owl:inverseOf, so that every fact of the file is stored
    in its one direction whichever line declares the inverse."""
    with open(path, "rb") as fh:
        quads = line_quads(ox, fmt, fh, reader.source) if line_based else stream_quads(ox, fmt, fh, "")
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
    reader = _Reader(source, vocab, literals, "_:" + secrets.token_hex(4) + ".")   # blank nodes: local to one reading
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
        quads = line_quads(ox, fmt, fh, source, block_reader(reader, ox, current, ids, SPECIAL)) \
            if line_based else stream_quads(ox, fmt, fh, source)
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
