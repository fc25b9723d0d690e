"""The Python API: open a knowledge base and ingest, query, explain, export and search.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
>>> src = os.path.join(os.path.dirname(path), "deps.tdb")
>>> _ = open(src, "w").write("nginx depends_on openssl. openssl depends_on libc.")
>>> kb = open_kb(path)
>>> kb.ingest([src]).facts
2
>>> [a.bindings["x"] for a in kb.query("nginx depends_on+ ?x").answers]
['libc', 'openssl']
>>> kb.close()
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from .errors import QueryError, ThinkingDBError, translate
from .store.ingest import IngestReport, ingest as _ingest
from .language import compile_source, parse_fact, parse_query
from .model import Declaration, Fact, Limits, Query, Rule, Triple
from .store.sqlite import DEFAULT_PATH, Store

DEFAULT_LIMITS = Limits(max_derived=2_000_000, timeout_ms=30_000)


def default_rule_program():
    """The shipped default rule library, compiled (rules and declarations)."""
    from .engine.rules import default_rules_text
    return compile_source(default_rules_text(), "<default rules>")


@dataclass
class _Cache:
    generation: int
    graph: object
    rules: tuple[Rule, ...]


class KnowledgeBase:
    """An open store plus its fact graph: the memory-mapped graph file beside the store
    (docs/storage.md), reopened when another writer changes the store. ``graph_file=False`` builds
    the graph in memory from SQLite instead (as every process did before graph files)."""

    def __init__(self, path: str = DEFAULT_PATH, *, create: bool = True, readonly: bool = False,
                 default_rules: bool = True, symbols: str | None = None, graph_file: bool = True):
        self.path = path
        self.store = Store(path, create=create, readonly=readonly, graph_file=graph_file)
        if symbols is not None:  # the store's symbol mode (see thinkingdb.normalize); only a store without facts changes
            try:
                self.store.set_symbol_mode(symbols)
            except BaseException:
                self.store.close()
                raise
        self.default_rules = default_rules
        self.graph_file = graph_file
        self._cache: _Cache | None = None
        self._extra_rules: tuple[Rule, ...] = ()
        self._extra_decls: tuple[Declaration, ...] = ()

    # -- lifecycle -----------------------------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------------
    def ingest(self, paths: Sequence[str] | str, *, skip_invalid: bool = False, rejects_path: str | None = None,
               progress: bool | None = False) -> IngestReport:
        """Ingest files (.tdb, .tsv, .jsonl, ...) atomically; see :func:`thinkingdb.store.ingest.ingest`."""
        if isinstance(paths, str):
            paths = [paths]
        report = _ingest(self.store, list(paths), skip_invalid=skip_invalid, rejects_path=rejects_path,
                         progress=progress)
        self._cache = None
        return report

    def add_rules_file(self, path: str) -> None:
        """Use the rules and declarations of a .tdb file in later queries (not stored)."""
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise translate(exc) from exc
        program = compile_source(text, path, self.store.vocabulary())
        self._extra_rules += tuple(r for r, _ in program.rules)
        self._extra_decls += tuple(d for d, _ in program.declarations)
        self._cache = None

    # -- reasoning -----------------------------------------------------------------------------------
    def _state(self) -> _Cache:
        gen = self.store.current_generation()
        if self._cache is None or self._cache.generation != gen:
            from .engine.rules import compile_declarations
            graph = self._open_graph()
            rules: list[Rule] = []
            decls: list[Declaration] = list(self.store.declarations()) + list(self._extra_decls)
            if self.default_rules:
                prog = default_rule_program()
                rules += [r for r, _ in prog.rules]
                decls += [d for d, _ in prog.declarations]
            rules += self.store.rules() + list(self._extra_rules)
            decls = sorted(set(d for d in decls if d.kind != "inverse"))  # inverses are stored oriented
            rules += list(compile_declarations(decls))
            self._cache = _Cache(gen, graph, tuple(rules))
        return self._cache

    def _open_graph(self):
        """The fact graph: the store's graph file, memory-mapped (rebuilt first when it is missing,
        stale, foreign or corrupt), or built in memory when the file cannot be written."""
        from .engine.graph import FactGraph
        from .store import graphfile
        arrays = graphfile.load_or_build(self.store) if self.graph_file else None
        if arrays is not None:
            return FactGraph.mapped(arrays.arrays, arrays.relations, arrays.n_symbols, arrays.n_facts, arrays.path)
        graph = FactGraph()
        graph.add_many(Fact(s, r, o, c) for s, r, o, c in self.store.fact_rows())
        return graph

    @property
    def graph(self):
        """The in-memory :class:`~thinkingdb.engine.graph.FactGraph` of asserted facts."""
        return self._state().graph

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule in force: stored, default library, extra files, and compiled declarations."""
        return self._state().rules

    def parse_query(self, text: str) -> Query:
        return parse_query(text, self.store.vocabulary())

    def query(self, query: str | Query, *, limits: Limits = DEFAULT_LIMITS, aggregate: str = "best", k: int = 5,
              max_answers: int | None = None):
        """Answer a query (patterns, conjunctions, property paths) over asserted and derived facts."""
        from .engine.query import evaluate
        q = self.parse_query(query) if isinstance(query, str) else query
        state = self._state()
        try:
            return evaluate(q, state.graph, state.rules, limits=limits, aggregate=aggregate, k=k,
                            max_answers=max_answers)
        except ThinkingDBError:
            raise
        except (ValueError, KeyError) as exc:
            raise QueryError(str(exc)) from exc

    def why(self, fact: str | Triple, *, limits: Limits = DEFAULT_LIMITS, alternatives: int = 0):
        """The best proof of a fact (asserted or derived), or None when it does not follow."""
        from .engine.query import why
        t = parse_fact(fact, self.store.vocabulary()) if isinstance(fact, str) else fact
        state = self._state()
        return why(t, state.graph, state.rules, limits=limits, alternatives=alternatives)

    def search(self, text: str, **options):
        """Retrieve knowledge units for free text through a profile (``kb-fast``, ``kb-balanced``,
        ``kb-thinkingdb``); see :func:`thinkingdb.retrieval.pipeline.search` for the options."""
        from .retrieval.pipeline import search
        return search(self, text, **options)

    def provenance(self, fact: str | Triple) -> list[dict]:
        """Every source, line and unit an asserted fact came from."""
        t = parse_fact(fact, self.store.vocabulary()) if isinstance(fact, str) else fact
        return self.store.provenance(t)

    def labels(self) -> dict[str, str]:
        return self.store.labels()

    def stats(self) -> dict:
        return self.store.stats()

    # -- export ----------------------------------------------------------------------------------------
    def to_networkx(self):
        """A ``networkx.MultiDiGraph``: nodes are symbol keys with a ``label``; edges carry
        ``relation`` and ``confidence``."""
        import networkx as nx
        g = nx.MultiDiGraph()
        labels = self.store.labels()
        for s, r, o, c in sorted(self.store.fact_rows()):
            for n in (s, o):
                if n not in g:
                    g.add_node(n, label=labels.get(n, n))
            g.add_edge(s, o, key=r, relation=r, confidence=c)
        return g

    def export(self, fmt: str, *, header: bool = True) -> str:
        """The facts as ``jsonl``, ``tsv``, ``nt`` (N-Triples), ``ttl`` (Turtle), ``dot`` or ``graphml`` text.

        TSV starts with a header row (``header=False`` leaves it out) and writes each symbol as its
        label where the label is read back as the same key, so labels survive a round trip; N-Triples
        and Turtle keep labels, confidences and declarations (see :mod:`thinkingdb.store.rdfwrite`).
        """
        rows = sorted(self.store.fact_rows())
        if fmt == "tsv":
            labels, vocab = self.store.labels(), self.store.vocabulary()

            def shown(key: str) -> str:
                label = labels.get(key, key)
                return label if "\t" not in label and "\n" not in label and vocab.symbol(label) == key else key
            head = "subject\trelation\tobject\tconfidence\n" if header else ""
            return head + "".join(f"{shown(s)}\t{r}\t{shown(o)}\t{c!r}\n" for s, r, o, c in rows)
        if fmt in ("nt", "ttl"):
            from .store.rdfwrite import write_rdf
            buf = io.StringIO()
            write_rdf(buf, fmt, rows, self.store.labels(), self.store.declarations())
            return buf.getvalue()
        if fmt == "jsonl":
            labels = self.store.labels()
            return "".join(json.dumps({"subject": s, "relation": r, "object": o, "confidence": c,
                                       "subject_label": labels.get(s, s), "object_label": labels.get(o, o)},
                                      ensure_ascii=False) + "\n" for s, r, o, c in rows)
        if fmt == "graphml":
            import networkx as nx
            buf = io.BytesIO()
            nx.write_graphml(self.to_networkx(), buf)
            return buf.getvalue().decode("utf-8")
        if fmt == "dot":
            return _to_dot(self.to_networkx())
        raise QueryError(f"unknown export format {fmt!r}; expected jsonl, tsv, nt, ttl, dot or graphml")


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _to_dot(g) -> str:
    lines = ["digraph thinkingdb {"]
    for n, data in g.nodes(data=True):
        lines.append(f"  {_dot_id(n)} [label={_dot_id(data.get('label', n))}];")
    for s, o, data in g.edges(data=True):
        lines.append(f"  {_dot_id(s)} -> {_dot_id(o)} [label={_dot_id(data['relation'])}, "
                     f"confidence={data['confidence']!r}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def open_kb(path: str = DEFAULT_PATH, **kwargs) -> KnowledgeBase:
    """Open (or create) a knowledge base file. Also available as ``thinkingdb.open``."""
    return KnowledgeBase(path, **kwargs)
