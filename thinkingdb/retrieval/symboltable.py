"""The symbol matcher of a caller's view, read from the store's matcher file instead of made anew.

:meth:`Lanes.matcher <thinkingdb.retrieval.lanes.Lanes.matcher>` gives the
:class:`~thinkingdb.retrieval.expansion.SymbolMatcher` over what a view may see: the keys of the
labels whose symbols the view's graph knows (each on its key's words and its label's), the constants
of the view's rules (on their key's words, unless already among those), the relations of its graph
and rules and the store's aliases. Stemming every label (~2.5 s on the store of
``benchmarks/serve.py``) is what made a search's process slow to start.

In a process that reads the store at a stamp, the labels' stemmed forms come from the matcher file
(:mod:`thinkingdb.store.matcherfile`: every label, whoever may see it; made once per store state,
patched through the logs after a write). The view's matcher looks a word sequence up in the file and
keeps the keys its graph knows (:class:`Symbols`), then adds its rules' constants from a small table
made in memory — the same keys, forms and matches as the matcher made from the view's labels, so a
hidden symbol still cannot change which words of a query match. Elsewhere (a pinned serve snapshot,
a store without graph file) the matcher is made from the labels in memory, as before.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["matcher", "table_params", "Symbols", "Forms"]

_MISS = object()


def table_params() -> dict:
    """A JSON-able record of everything that decides a label's stemmed forms (saved in the file).

    >>> sorted(table_params())
    ['matcher', 'max_words', 'stemmer', 'stopwords', 'tokenizer', 'unicode']
    """
    import hashlib
    import unicodedata

    import Stemmer
    from lexical import DEFAULT_STOPWORDS, Tokenizer

    from .expansion import MAX_WORDS
    return {"matcher": 1, "max_words": MAX_WORDS, "tokenizer": Tokenizer(stopwords=[]).params(),
            "stemmer": getattr(Stemmer, "__version__", None) or Stemmer.version(),
            "stopwords": hashlib.blake2b("\n".join(sorted(DEFAULT_STOPWORDS)).encode(), digest_size=8).hexdigest(),
            "unicode": unicodedata.unidata_version}


class _Known:
    """Memoized ``graph.symbol_id(key) is not None``."""

    def __init__(self, graph) -> None:
        self._graph, self._memo = graph, {}

    def __call__(self, key: str) -> bool:
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._graph.symbol_id(key) is not None
        return got


class _Lazy(Mapping):
    """A mapping read through its ``get``, one key at a time; iterated or counted, through its
    ``_everything()``, the whole mapping made once."""

    def __getitem__(self, key):
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __iter__(self):
        return iter(self._everything())

    def __len__(self) -> int:
        return len(self._everything())


class Symbols(_Lazy):
    """Stem tuple → the keys matched on it: those of the file's that ``known`` accepts, with
    ``extra``'s (a dict of the same shape). Looked up one tuple at a time; iterated, it decodes all."""

    def __init__(self, table, known, extra: Mapping) -> None:
        self._table, self._known, self._extra = table, known, extra
        self._memo: dict = {}
        self._all: dict | None = None

    def get(self, stems, default=None):
        got = self._memo.get(stems, _MISS)
        if got is _MISS:
            keys = self._table.keys_of(stems) if isinstance(stems, tuple) else None
            got = {k for k in keys if self._known(k)} if keys else set()
            more = self._extra.get(stems)
            if more:
                got |= more
            got = self._memo[stems] = got or None
        return default if got is None else got

    def _everything(self) -> dict:
        if self._all is None:
            out: dict = {}
            for stems, keys in self._table.entries():
                got = {k for k in keys if self._known(k)}
                if got:
                    out[stems] = got
            for stems, keys in self._extra.items():
                out[stems] = out.get(stems, set()) | keys
            self._all = out
        return self._all


class Forms(_Lazy):
    """Key → the word tuples it is written as: ``extra``'s for its keys, else the file's for a key
    ``known`` accepts."""

    def __init__(self, table, known, extra: Mapping, keys) -> None:
        self._table, self._known, self._extra, self._keys = table, known, extra, keys
        self._all: dict | None = None

    def get(self, key, default=None):
        got = self._extra.get(key)
        if got is None and isinstance(key, str) and self._known(key):
            got = self._table.forms(key)
        return got if got else default

    def _everything(self) -> dict:
        if self._all is None:
            out = {k: f for k in self._keys() if self._known(k) and (f := self._table.forms(k))}
            out.update(self._extra)
            self._all = out
        return self._all


def _table(lanes):
    """The matcher table of ``lanes``' store state (read, patched or made, and saved), or None
    where there is no stamped reader or graph file."""
    got = getattr(lanes, "_symbol_table", None)
    if got is not None:
        return got
    reader = getattr(lanes.state, "reader", None)
    store = lanes.kb.store
    # a pinned connection (a serve snapshot) keeps its matchers in memory and patches them on a write
    if reader is None or reader.stamp is None or not getattr(store, "graph_file", False) or store.conn.in_transaction:
        return None
    from ..store import matcherfile
    from .expansion import SymbolMatcher
    path, stamp, params = store.path, reader.stamp, table_params()
    table = matcherfile.load(path, stamp, params)
    if table is None:
        maker = SymbolMatcher([], [])
        made = matcherfile.derive(
            path, stamp, params,
            lambda old, tab: reader.read(lambda conn: matcherfile.read_changed_labels(conn, old, stamp, tab)),
            lambda key, label: maker.forms_many({key: label})[key])
        if made is None:
            labels = reader.read(matcherfile.read_labels)
            forms = maker.forms_many({k: lab for k, (lab, _) in labels.items()})
            made = matcherfile.table({k: (labels[k][1], forms[k]) for k in labels})
        if matcherfile.save(path, stamp, params, made):
            table = matcherfile.load(path, stamp, params)
        if table is None:          # not writable (or written over meanwhile): the same tables in memory
            table = made
    lanes._symbol_table = table
    return table


def matcher(lanes, view):
    """The symbol matcher of ``view`` (see the module docstring)."""
    from .expansion import SymbolMatcher
    rules, graph = lanes.rules(view), lanes.graph(view)
    constants = {t for r in rules for a in r.premises + (r.head,) for t in (a.subject, a.object) if isinstance(t, str)}
    relations = sorted(set(graph.relations()) | {r.head.relation for r in rules})
    aliases = lanes.kb.store.vocabulary().aliases
    table = _table(lanes)
    if table is None:
        labels = lanes.labels(view)
        return SymbolMatcher(sorted(set(labels) | constants), relations, labels=labels, aliases=aliases)
    known = _Known(graph)
    # constants the file does not give this view (no label, or one the view may not see): key words only
    extra = SymbolMatcher(sorted(c for c in constants if not (known(c) and table.forms(c) is not None)),
                          relations, aliases=aliases)
    return extra.over(Symbols(table, known, extra._sym),
                      Forms(table, known, extra._forms, lambda: [k.decode("utf-8") for k in table.records()]))
