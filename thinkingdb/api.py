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
import os
from _collections_abc import Iterable   # = collections.abc (without the collections package)

from .errors import QueryError, StoreError, ThinkingDBError, ValidationError, translate
from .language import compile_source, parse_fact, parse_query
from .model import Declaration, Fact, Limits, Query, Rule, Triple
from .store.sqlite import DEFAULT_PATH, Store
from .values import Record

TYPE_CHECKING = False   # typing.TYPE_CHECKING, without importing typing (~3 ms of a cold question)
if TYPE_CHECKING:   # ingest loads the readers (Markdown, RDF, bulk, numpy): only a writing call imports it
    from typing import Sequence
    from .store.ingest import IngestReport

DEFAULT_LIMITS = Limits(max_derived=2_000_000, timeout_ms=30_000, max_rows=1_000_000)


class _Cache(Record):
    """Everything read from the store at one generation, in one read transaction — the units and who
    asserted what are read on first use, at the same store state (store/stateread.py)."""

    _fields = ("generation", "graph", "rules", "unit_rules", "units", "facts", "public", "reader", "access", "stamp",
               "plain")
    generation: int
    graph: object
    rules: tuple[Rule, ...]                      # public rules, compiled declarations included
    unit_rules: tuple[tuple[Rule, str], ...]     # rules of restricted units, with the unit's id
    units: object                                # a list of units, or store.stateread.StoreUnits
    facts: object                                # store.access.FactAccess or store.stateread.LazyFactAccess
    public: object                               # store.access.public_view of a store without units, once made
    reader: object                               # store.stateread.StateReader of this state (not an argument)
    access: object                               # store.access.AccessTable, once made (not an argument)
    stamp: object                                # the store's stamp (graphfile.store_stamp) at this state (idem)
    plain: bool                                  # known to hold no unit and no record naming one (idem)

    def __init__(self, generation: int, graph: object, rules: tuple[Rule, ...],
                 unit_rules: tuple[tuple[Rule, str], ...], units: object, facts: object, public: object = None) -> None:
        self.generation, self.graph, self.rules, self.unit_rules = generation, graph, rules, unit_rules
        self.units, self.facts, self.public = units, facts, public
        self.reader = self.access = self.stamp = None
        self.plain = False

    @property
    def all_rules(self) -> tuple[Rule, ...]:
        return self.rules + tuple(dict.fromkeys(r for r, _ in self.unit_rules if r not in self.rules))

    def rules_for(self, visible) -> tuple[Rule, ...]:
        """The rules a caller may use: the public ones and those of the units ``visible(id)`` accepts."""
        extra = tuple(dict.fromkeys(r for r, u in self.unit_rules if visible(u) and r not in self.rules))
        return self.rules + extra if extra else self.rules

    def access_table(self):
        """The access table of this state's units (its access columns only, read on first use)."""
        if self.access is None:
            from .store.access import AccessTable
            if isinstance(self.units, list) or getattr(self.units, "loaded", False):
                self.access = AccessTable(self.units)
            else:   # mapped from kb.sqlite.access when it is at this state, else read and written there
                from .store.stateread import read_access
                from .store.viewfile import load_access
                reader = self.reader
                self.access = load_access(reader.store.path, self.stamp, lambda: reader.read(read_access))
        return self.access


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
        import sys
        lanes = sys.modules.get("thinkingdb.retrieval.lanes")
        if lanes is not None:   # its lanes refer back to this knowledge base: a weak key alone never drops them
            lanes._CACHE.pop(self, None)
        self._cache = None
        self.store.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------------
    def ingest(self, paths: Sequence[str] | str, *, skip_invalid: bool = False, rejects_path: str | None = None,
               progress: bool | None = False, format: str | None = None, delimiter: str | None = None,
               columns: str | None = None, header: bool | None = None, literals: str = "symbols") -> IngestReport:
        """Ingest files (.tdb, .tsv, .csv, .jsonl, .nt, .ttl, ...) atomically; ``-`` is standard input.

        ``format`` overrides the extension (and is needed for ``-``); ``delimiter``, ``columns``
        (``"s,r,o,confidence"``, ``-`` skips a column) and ``header`` (None: detected) shape CSV and TSV;
        ``literals="skip"`` skips RDF literals instead of making them symbols. See
        :func:`thinkingdb.store.ingest.ingest` and docs/ingest.md.
        """
        from .store.ingest import ingest as _ingest
        from .store.records import ReadOptions
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if not isinstance(paths, Iterable) or isinstance(paths, bytes):
            raise ValidationError(f"ingest takes a path or a list of paths, got {type(paths).__name__}")
        paths = list(paths)
        if not all(isinstance(p, (str, os.PathLike)) for p in paths):
            raise ValidationError(f"ingest takes a path or a list of paths, got {paths!r}"[:200])
        options = ReadOptions(format=format, delimiter=delimiter, columns=columns, header=header, literals=literals)
        report = _ingest(self.store, [os.fspath(p) for p in paths], skip_invalid=skip_invalid,
                         rejects_path=rejects_path, progress=progress, options=options)
        self._cache = None
        return report

    # -- adding facts from Python ---------------------------------------------------------------------
    def add_facts(self, facts: Iterable[tuple | Fact], *, source: str = "<api>") -> int:
        """Add facts given as ``(subject, relation, object)`` or ``(subject, relation, object, confidence)``
        tuples or :class:`Fact` values, in one transaction; returns how many were added.

        Names are normalized as in a file (the text becomes the label, its key the symbol) and the
        store's aliases and inverses apply. A bad item raises :class:`ValidationError` naming its index,
        and nothing is written. Provenance: ``source`` and the item's 1-based position as its line.

        >>> import tempfile, os
        >>> kb = open_kb(os.path.join(tempfile.mkdtemp(), "kb.sqlite"))
        >>> kb.add_facts([("Nginx", "dependsOn", "OpenSSL"), Fact("OpenSSL", "depends_on", "libc", 0.9)])
        2
        >>> sorted((a.bindings["x"], a.labels["x"]) for a in kb.query("nginx depends_on+ ?x"))
        [('libc', 'libc'), ('openssl', 'OpenSSL')]
        >>> kb.close()
        """
        from .store.records import Batch
        if isinstance(facts, (str, bytes)) or not isinstance(facts, Iterable):
            raise ValidationError(f"add_facts takes an iterable of tuples or Facts, got {type(facts).__name__}")
        if not isinstance(source, str) or not source:
            raise ValidationError(f"source must be a non-empty string, got {source!r}")
        vocab = self.store.vocabulary()
        batch = Batch(source)
        for i, item in enumerate(facts):
            if isinstance(item, Fact):
                item = (item.subject, item.relation, item.object, item.confidence)
            if not isinstance(item, (tuple, list)) or len(item) not in (3, 4) or \
                    not all(isinstance(x, str) for x in item[:3]):
                raise ValidationError(f"fact {i}: expected (subject, relation, object[, confidence]) strings or a "
                                      f"Fact, got {item!r}")
            try:
                s, r, o = vocab.orient(item[0], item[1], item[2])
                fact = Fact(s, r, o, 1.0 if len(item) == 3 else item[3])
            except ValidationError as exc:
                raise ValidationError(f"fact {i}: {exc}") from None
            batch.add_fact(fact, i + 1)
            batch.labels.setdefault(vocab.symbol(item[0]), item[0].strip())
            batch.labels.setdefault(vocab.symbol(item[2]), item[2].strip())
        if not batch.rows:
            return 0
        with self.store.transaction():
            origin = self.store.source_id(source, "api")
            self.store.add_label_rows(origin, batch.labels.items())
            n = self.store.add_fact_rows(origin, batch.rows)
        self._cache = None
        return n

    def add_text(self, text: str, *, source: str | None = None) -> IngestReport:
        """Add ThinkingDB source text (facts, rules, declarations, aliases) as if it were a ``.tdb`` file.

        ``source`` names it in provenance; by default a name made from the text's hash, so adding the same
        text again replaces it rather than counting it twice. Errors are those of a file (IngestError
        with line and column), and nothing is written.

        >>> import tempfile, os
        >>> kb = open_kb(os.path.join(tempfile.mkdtemp(), "kb.sqlite"))
        >>> kb.add_text("relation part_of transitive. wheel part_of car. car part_of fleet.").facts
        2
        >>> len(kb.query("wheel part_of ?x"))
        2
        >>> kb.close()
        """
        import hashlib
        import tempfile
        if not isinstance(text, str):
            raise ValidationError(f"add_text takes source text (str), got {type(text).__name__}")
        if source is None:
            source = "<text " + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12] + ">"
        fd, path = tempfile.mkstemp(suffix=".tdb", prefix="thinkingdb-text-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
                fh.write(text)
            from .store.ingest import ingest_as
            report = ingest_as(self.store, path, source)
        finally:
            os.remove(path)
        self._cache = None
        return report

    def from_networkx(self, graph, *, relation: str = "relation", confidence: str = "confidence",
                      label: str = "label", default_relation: str = "related_to", source: str = "<networkx>") -> int:
        """Add the edges of a networkx graph as facts; returns how many were added.

        Each edge ``u -> v`` is a fact whose relation is the edge attribute ``relation`` (else, in a
        multigraph, a string edge key; else ``default_relation``) and whose confidence is the attribute
        ``confidence`` (default 1). A node's text is its ``label`` attribute, else ``str(node)``. An
        undirected graph gives each edge in both directions. :meth:`to_networkx` is the inverse:
        ``kb2.from_networkx(kb.to_networkx())`` copies the facts and labels.

        >>> import networkx as nx, tempfile, os
        >>> g = nx.DiGraph(); g.add_edge("Nginx", "OpenSSL", relation="dependsOn", confidence=0.9)
        >>> kb = open_kb(os.path.join(tempfile.mkdtemp(), "kb.sqlite"))
        >>> kb.from_networkx(g), kb.store.fact_rows()
        (1, [('nginx', 'depends_on', 'openssl', 0.9)])
        >>> kb.close()
        """
        if not (hasattr(graph, "edges") and hasattr(graph, "nodes") and hasattr(graph, "is_directed")):
            raise ValidationError(f"from_networkx takes a networkx graph, got {type(graph).__name__}")
        multi = graph.is_multigraph()
        nodes = graph.nodes

        def text(n) -> str:
            value = nodes[n].get(label)
            return value if isinstance(value, str) and value.strip() else str(n)

        def items():
            edges = graph.edges(keys=True, data=True) if multi else ((u, v, None, d) for u, v, d in graph.edges(data=True))
            for u, v, key, data in edges:
                rel = data.get(relation)
                if not isinstance(rel, str) or not rel.strip():
                    rel = key if isinstance(key, str) and key.strip() else default_relation
                conf = data.get(confidence, 1.0)
                yield (text(u), rel, text(v), conf)
                if not graph.is_directed() and u != v:
                    yield (text(v), rel, text(u), conf)
        return self.add_facts(items(), source=source)

    def add_rules_file(self, path: str) -> None:
        """Use the rules and declarations of a .tdb file in later queries (not stored)."""
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise translate(exc) from exc
        library = None
        if self.default_rules:   # a rule may not take a library rule's name, nor close a `not` cycle with it
            from .engine.rules import library_rules as library
        vocab = self.store.vocabulary()   # (with this file's declarations once compiled)
        program = compile_source(text, path, vocab, library=library)
        if program.rules:   # nor the name of a different stored or earlier added rule: both would hold
            from .errors import ParseError
            from .normalize import orient_rules
            # all read with the inverses a question reads them with (api._rules: a rule stored before an
            # inverse of its relation was declared is stored unturned; an earlier file's rules were
            # compiled without this file's declarations, this file's without an earlier file's)
            inverses = {d.other: d.relation for d in self._extra_decls + tuple(d for d, _ in program.declarations)
                        if d.kind == "inverse" and d.other}
            inverses.update(vocab.inverses)
            # (public rows only: a restricted note's rule name is not told to a caller who may not see it);
            # by statement: an n-ary head's rules r/1, r/2 and a 'not' premise's r.not.1 are rule r
            from .language import _at_statement, _stated
            held = [(r, "of the store's") for r, unit in self.store.rule_rows() if unit is None]
            held += [(r, "given earlier (add_rules_file, --rules)") for r in self._extra_rules]
            earlier: dict[str, tuple[set, str]] = {}
            for r, (_, where) in zip(orient_rules((r for r, _ in held), inverses), held):
                earlier.setdefault(_stated(r.name), (set(), where))[0].add(r)
            mine: dict[tuple[str, int], set] = {}
            for r, (_, ln) in zip(orient_rules((r for r, _ in program.rules), inverses), program.rules):
                mine.setdefault((_stated(r.name), ln), set()).add(r)
            lines = text.split("\n")
            clash = [_at_statement(text, path, ln, f"rule {name} is a different rule {earlier[name][1]}; rule names "
                                  "identify rules, rename this one", "duplicate_rule", lines)
                     for (name, ln), rules in sorted(mine.items(), key=lambda x: x[0][1])
                     if name in earlier and earlier[name][0] != rules and 0 < ln <= len(lines)]
            if clash:
                raise ParseError(clash)
        self._extra_rules += tuple(r for r, _ in program.rules)
        self._extra_decls += tuple(d for d, _ in program.declarations)
        self._cache = None

    # -- reasoning -----------------------------------------------------------------------------------
    def _state(self) -> _Cache:
        """The store's content at one generation: the graph and rules are read in one read transaction,
        with the store's stamp; units and who asserted what are read on first use, each read checked
        against that stamp (a write meanwhile raises StaleRead: the caller reads the state again), so a
        unit written meanwhile is in all of them or in none."""
        self._check_open()
        gen = self.store.current_generation()
        if self._cache is not None and self._cache.plain and self.store.connected:
            # read from the state file, the handle connected since: the store file may be another one at the
            # same generation (a store built elsewhere renamed over it), whose stamp differs (checked once)
            from .store.graphfile import store_stamp
            with self.store.reading():
                if store_stamp(self.store) != self._cache.stamp:
                    self._cache = None
                else:
                    self._cache.plain = False   # ("plain" is also no longer known: read as for any store)
        if self._cache is None or self._cache.generation != gen:
            cache = self._question_state() if not self.store.connected else None
            if cache is None:
                cache = self._read_state()
            self._cache = cache
        return self._cache

    def _question_state(self) -> _Cache | None:
        """The state from the state file and the graph file, with no SQLite connection (store/statefile.py):
        a store without units whose files are current; None otherwise (the caller reads SQLite)."""
        question = self.store.question
        if question is None or not self.graph_file:
            return None
        from .store import graphdelta
        stamp = question.stamp
        arrays = graphdelta.open_current(self.store.path, stamp)
        if arrays is None:
            return None
        rules = self._read_rules()
        if self.store.connected:   # a read found the store changed (or another thread connected): the rules
            return None            # may be a later state's than the graph's, so all is read from SQLite
        return self._new_state(stamp, self._mapped(arrays), rules, 0, plain=True)

    def _read_state(self) -> _Cache:
        from .store.graphfile import store_stamp
        with self.store.reading():
            stamp = store_stamp(self.store)   # read once: its generation is the state's, the graph file's key
            graph = self._open_graph(stamp)
            rules = self._read_rules()
            count = self.store.conn.execute("SELECT count(*) FROM units").fetchone()[0]
            cache = self._new_state(stamp, graph, rules, count, plain=False)   # (its public view: these reads)
        if not count and graph.file is not None:   # the next process need not open SQLite (store/statefile.py)
            from .store.statefile import save
            save(self.store, stamp)
        return cache

    def _new_state(self, stamp, graph, rules: tuple, units: int, plain: bool) -> _Cache:
        """The state at ``stamp`` with ``graph`` and ``rules`` (:meth:`_read_rules`); its ``units`` and who
        asserted what are read on first use, checked against ``stamp``. ``plain``: known to hold no unit
        and no record naming one (the state file). Without units every caller's view is the public one,
        made now (any reads it needs in the caller's read transaction)."""
        from .store.stateread import LazyFactAccess, StateReader, StoreUnits
        reader = StateReader(self.store, stamp)
        cache = _Cache(stamp.generation, graph, *rules, StoreUnits(reader, units), LazyFactAccess(reader))
        cache.reader, cache.stamp, cache.plain = reader, stamp, plain
        if not units:
            from .store.access import public_view
            cache.public = public_view(cache, self.store)
        return cache

    def _read_rules(self) -> tuple[tuple[Rule, ...], tuple[tuple[Rule, str], ...]]:
        """The public rules in force (defaults, stored, added, compiled declarations) and the rules of
        restricted units with their unit ids, read from the store now."""
        from .engine.rules import compile_declarations, default_rule_set
        stored = self.store.rule_rows()
        decls: list[Declaration] = list(self.store.declarations()) + list(self._extra_decls)
        rules: list[Rule] = []
        if self.default_rules:   # precompiled while the library's text is unchanged (engine/rulelib.py)
            lib_rules, lib_decls = default_rule_set()
            rules += lib_rules
            decls += lib_decls
        rules += [r for r, u in stored if u is None] + list(self._extra_rules)
        # inverses are stored oriented (``relation c inverse b``: facts of b are stored as c, reversed), so
        # rules and declarations read b as c too, whenever they were stored: their inverse rules go
        inverses = {d.other: d.relation for d in decls if d.kind == "inverse" and d.other}
        if inverses:
            inverses.update(self.store.vocabulary().inverses)   # the store's, in its order of precedence
        decls = sorted(set(d for d in decls if d.kind != "inverse"))
        rules += list(compile_declarations(decls))
        if not inverses:
            return tuple(rules), tuple((r, u) for r, u in stored if u is not None)
        from .store.rulejson import orient_rules
        return orient_rules(rules, inverses), tuple((r, u) for r, u in zip(
            orient_rules((r for r, u in stored if u is not None), inverses), (u for _, u in stored if u is not None)))

    def _open_graph(self, stamp=None):
        """The fact graph: the store's graph file, memory-mapped (rebuilt first when it is missing,
        stale, foreign or corrupt), or built in memory when the file cannot be written. ``stamp``: the
        store's stamp (graphfile.store_stamp) read in the caller's read transaction, else read here."""
        from .engine.graph import FactGraph
        from .store import graphdelta
        arrays = None
        if self.graph_file:   # graphdelta.load_or_build, with the stamp the state has read already
            arrays = graphdelta.open_current(self.store.path, stamp) if stamp is not None else None
            arrays = arrays if arrays is not None else graphdelta.load_or_build(self.store)
        if arrays is not None:
            return self._mapped(arrays)
        graph = FactGraph()
        graph.add_many(Fact(s, r, o, c) for s, r, o, c in self.store.fact_rows())
        return graph

    @staticmethod
    def _mapped(arrays):
        from .engine.graph import FactGraph
        return FactGraph.mapped(arrays.arrays, arrays.relations, arrays.n_symbols, arrays.n_facts, arrays.path,
                                overlay=arrays.overlay, file=arrays)

    def _check_open(self) -> None:
        if self.store._closed and not self.store._discarded:
            raise StoreError(f"{self.path}: the knowledge base is closed")

    @property
    def graph(self):
        """The in-memory :class:`~thinkingdb.engine.graph.FactGraph` of every asserted fact.

        This is the file owner's raw view, like :attr:`store`: it applies no caller's access rules.
        The methods that answer a caller (query, why, search, provenance, labels, export) do.
        """
        return self._state().graph

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule in force (the owner's raw view, restricted units' rules included)."""
        return self._state().all_rules

    def view(self, caller=None, as_of=None):
        """What ``caller`` (a :class:`~thinkingdb.store.access.Caller`, a dict, or None: anonymous)
        may use on ``as_of`` (default today): a :class:`~thinkingdb.store.access.CallerView` with
        the visible fact graph, the rules and the visible-unit test (docs/access.md)."""
        import sys
        from .store.access import Caller, parse_date, public_view
        if caller is None or isinstance(caller, Caller):   # the search pipeline need not be loaded
            who = caller or Caller()
        else:
            from .retrieval.pipeline import _caller
            who = _caller(caller)
        day = None if as_of is None else parse_date(as_of)   # today's date is made only where units are

        def public():
            state = self._state()
            loaded = sys.modules.get("thinkingdb.retrieval.lanes")
            lanes = None if loaded is None else loaded._CACHE.get(self)
            if state.units or (lanes is not None and lanes.state is state):
                return None
            # no units: every caller sees everything; the lanes (BM25, HDC, views) need not be loaded
            if state.public is None:   # its reads check the state's stamp: a write meanwhile, a new state
                state.public = public_view(state, self.store)
            return state.public
        got = self._fresh(public)
        if got is not None:
            return got
        from .retrieval.lanes import lanes_for
        if day is None:
            day = parse_date(None)
        return self._fresh(lambda: lanes_for(self).caller_view(who, day))

    def _fresh(self, call):
        """``call()``, read again from a new state when a lazy read found the store written meanwhile."""
        from .store.stateread import StaleRead
        for _ in range(4):
            try:
                return call()
            except StaleRead:
                self._cache = None
        return call()

    def parse_query(self, text: str) -> Query:
        return parse_query(text, self.store.vocabulary())

    def query(self, query: str | Query, *, limits: Limits = DEFAULT_LIMITS, aggregate: str = "best", k: int = 5,
              max_answers: int | None = None, caller=None, as_of=None):
        """Answer a query (patterns, conjunctions, property paths) over the asserted and derived facts
        ``caller`` may see on ``as_of`` (None: an anonymous caller, who sees public facts only)."""
        from .engine.query import evaluate
        q = self._parsed(query, self.parse_query, Query, "query")
        _check_limits(limits)
        v = self.view(caller, as_of)
        try:
            result = evaluate(q, v.graph, v.rules, limits=limits, aggregate=aggregate, k=k,
                              max_answers=max_answers)
        except ThinkingDBError:
            raise
        except RecursionError:
            raise QueryError("the query is nested too deeply to evaluate") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise QueryError(str(exc)) from exc
        return self._labelled(result)

    def _labelled(self, result):
        """The result with each answer's display labels beside its keys (``answer.labels``)."""
        if hasattr(result.answers, "with_labels"):   # an answer set held as arrays: labels fetched when read
            return result.replace(answers=result.answers.with_labels(self._label_reader()))
        if not any(a.bindings for a in result.answers):
            return result
        from .engine.bulk import LabelledAnswers   # (fetched when an answer is first read)
        return result.replace(answers=LabelledAnswers.of(list(result.answers), self._label_reader()))

    def _label_reader(self):
        """The store's ``labels_of``, also after :meth:`close`: answers' labels are read when first read (a
        question whose labels no one reads opens no SQLite connection), and a result kept past ``close()``
        reads them through a read-only handle of its own."""
        store = self.store

        def fetch(keys):
            if not store._closed:
                return store.labels_of(keys)
            with Store(store.path, readonly=True, create=False) as other:
                return other.labels_of(keys)
        return fetch

    def stream(self, query: str | Query, *, limits: Limits = DEFAULT_LIMITS, aggregate: str = "best", k: int = 5,
               limit: int | None = None, caller=None, as_of=None):
        """Answers as they are found (an :class:`~thinkingdb.engine.stream.AnswerStream`, not sorted),
        over what ``caller`` may see on ``as_of`` as in :meth:`query`; at most ``limit``; stopping the
        iteration stops the work. Proofs are built when read.

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
        >>> _ = open(path + ".tdb", "w").write("a r b. a r c. b r c.")
        >>> kb = open_kb(path); _ = kb.ingest([path + ".tdb"])
        >>> [a.bindings for a in kb.stream("? a r ?x.", limit=1)]
        [{'x': 'b'}]
        >>> kb.close()
        """
        from .engine.stream import answer_stream
        q = self._parsed(query, self.parse_query, Query, "query")
        _check_limits(limits)
        v = self.view(caller, as_of)
        try:
            return answer_stream(q, v.graph, v.rules, limits=limits, aggregate=aggregate, k=k, limit=limit)
        except ThinkingDBError:
            raise
        except RecursionError:
            raise QueryError("the query is nested too deeply to evaluate") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise QueryError(str(exc)) from exc

    def why(self, fact: str | Triple, *, limits: Limits = DEFAULT_LIMITS, alternatives: int = 0, caller=None,
            as_of=None):
        """The best proof of a fact from what ``caller`` may see (None: anonymous), or None when it
        does not follow."""
        from .engine.query import why
        t = self._parsed(fact, lambda x: parse_fact(x, self.store.vocabulary()), Triple, "fact")
        _check_limits(limits)
        v = self.view(caller, as_of)
        proof = why(t, v.graph, v.rules, limits=limits, alternatives=alternatives)
        if proof is not None and proof.kind == "asserted":   # a materialized closure explains itself
            from .store.parquet import materialized_proof
            # every node must be a fact this caller sees: the view's graph answers, not the store
            return materialized_proof(t, self.store.provenance, v.graph.confidence) or proof
        return proof

    def _parsed(self, value, parse, kind: type, what: str):
        self._check_open()
        if isinstance(value, str):
            try:
                return parse(value)
            except RecursionError:
                raise QueryError(f"the {what} is nested too deeply to parse") from None
        if isinstance(value, kind):
            return value
        raise ValidationError(f"a {what} must be a string or a {kind.__name__}, got {type(value).__name__}")

    def why_not(self, fact: str | Triple, *, limits: Limits = DEFAULT_LIMITS, caller=None, as_of=None):
        """Why a fact does not follow from what ``caller`` may see (None: anonymous) --
        :class:`~thinkingdb.engine.whynot.WhyNot`: per rule that could conclude it, the premise that
        found no fact or the ``not`` premise that blocked it; its proof when it holds after all."""
        from .engine.whynot import why_not
        t = self._parsed(fact, lambda x: parse_fact(x, self.store.vocabulary()), Triple, "fact")
        _check_limits(limits)
        v = self.view(caller, as_of)
        return why_not(t, v.graph, v.rules, limits=limits)

    def search(self, text: str, *, profile="kb-balanced", caller=None, as_of=None, role: str | None = None,
               decompose: bool | None = None, alignment=None, features=None):
        """Retrieve knowledge units for free text through a profile (``kb-fast``, ``kb-balanced``,
        ``kb-thinkingdb`` or a :class:`~thinkingdb.retrieval.profiles.Profile`) for a ``caller`` (None: an
        anonymous caller who sees public units only) on date ``as_of``; see
        :func:`thinkingdb.retrieval.pipeline.search` for every option."""
        from .retrieval.pipeline import search
        if not isinstance(text, str):
            raise ValidationError(f"search takes text (str), got {type(text).__name__}")
        return self._fresh(lambda: search(self, text, profile=profile, caller=caller, as_of=as_of, role=role,
                                          decompose=decompose, alignment=alignment, features=features))

    def provenance(self, fact: str | Triple, *, caller=None, as_of=None) -> list[dict]:
        """Every source, line and unit an asserted fact came from, as far as ``caller`` may see."""
        t = self._parsed(fact, lambda x: parse_fact(x, self.store.vocabulary()), Triple, "fact")
        v = self.view(caller, as_of)
        return [row for row in self.store.provenance(t) if row["unit_id"] is None or v.visible(row["unit_id"])]

    def labels(self, *, caller=None, as_of=None, keys=None) -> dict[str, str]:
        """Display labels of the symbols ``caller`` may see (only of ``keys`` when given: the cost
        then follows the keys, not the store)."""
        v = self.view(caller, as_of)
        if keys is None:
            return v.labels
        found = self.store.labels_of(set(keys))
        known = v.graph.known_symbols(found)
        return {k: lab for k, lab in found.items() if k in known}

    def stats(self) -> dict:
        self._check_open()
        return self.store.stats()

    # -- export ----------------------------------------------------------------------------------------
    def to_networkx(self, *, caller=None, as_of=None):
        """A ``networkx.MultiDiGraph`` of the facts ``caller`` may see: nodes are symbol keys with a
        ``label``; edges carry ``relation`` and ``confidence``."""
        import networkx as nx
        g = nx.MultiDiGraph()
        v = self.view(caller, as_of)
        labels = v.labels
        for s, r, o, c in v.fact_rows():
            for n in (s, o):
                if n not in g:
                    g.add_node(n, label=labels.get(n, n))
            g.add_edge(s, o, key=r, relation=r, confidence=c)
        return g

    def export(self, fmt: str, *, header: bool = True, caller=None, as_of=None) -> str:
        """The facts ``caller`` may see (None: anonymous) as ``jsonl``, ``tsv``, ``nt`` (N-Triples), ``ttl`` (Turtle), ``dot`` or ``graphml`` text.

        TSV starts with a header row (``header=False`` leaves it out) and writes each symbol as its
        label where the label is read back as the same key, so labels survive a round trip; N-Triples
        and Turtle keep labels, confidences and declarations (see :mod:`thinkingdb.store.rdfwrite`).
        """
        v = self.view(caller, as_of)
        rows = v.fact_rows()
        if fmt == "tsv":
            labels, vocab = v.labels, self.store.vocabulary()

            def shown(key: str) -> str:
                label = labels.get(key, key)
                return label if "\t" not in label and "\n" not in label and vocab.symbol(label) == key else key
            head = "subject\trelation\tobject\tconfidence\n" if header else ""
            return head + "".join(f"{shown(s)}\t{r}\t{shown(o)}\t{c!r}\n" for s, r, o, c in rows)
        if fmt in ("nt", "ttl"):
            from .store.rdfwrite import write_rdf
            buf = io.StringIO()
            write_rdf(buf, fmt, rows, v.labels, self.store.declarations())
            return buf.getvalue()
        if fmt == "jsonl":
            import json
            labels = v.labels
            return "".join(json.dumps({"subject": s, "relation": r, "object": o, "confidence": c,
                                       "subject_label": labels.get(s, s), "object_label": labels.get(o, o)},
                                      ensure_ascii=False) + "\n" for s, r, o, c in rows)
        if fmt == "graphml":
            import networkx as nx
            buf = io.BytesIO()
            nx.write_graphml(self.to_networkx(caller=caller, as_of=as_of), buf)
            return buf.getvalue().decode("utf-8")
        if fmt == "dot":
            return _to_dot(self.to_networkx(caller=caller, as_of=as_of))
        raise QueryError(f"unknown export format {fmt!r}; expected jsonl, tsv, nt, ttl, dot or graphml")


def _check_limits(limits) -> None:
    if not isinstance(limits, Limits):
        raise ValidationError(f"limits must be a thinkingdb Limits, got {type(limits).__name__}")


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
