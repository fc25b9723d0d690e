"""Relational question understanding: which relation a question asks about, of which symbol, in
which direction.

A question names symbols (the store's symbol keys and labels, found on word boundaries by the
:class:`~thinkingdb.retrieval.expansion.SymbolMatcher`) and relation phrases. Relation phrases come
from four tables, matched on stemmed words, longest first, on the words no symbol took:

* the relation keys themselves (``part_of`` is ``part of``, ``regulates`` also ``regulated``);
* the store's aliases (``alias "depends on" => depends_on.``);
* the names of inverse relations, read in the other direction (``relation part_of inverse
  has_part.`` makes ``has part`` ask for ``part_of`` with the roles swapped);
* the extraction phrases of :mod:`thinkingdb.store.extract` (``is part of``, ``belongs to``,
  ``is used by`` — a passive phrase swaps the roles).

Only relations the knowledge base knows (in its facts or a rule head) count. The direction is read
from word order: a symbol before the relation phrase is the fact's subject, after it the object; a
passive (the extraction table's reversed phrases, or a relation word followed by ``by``) or an
inverse name swaps the two. Each (relation, symbol) pair is an :class:`Ask`: "what is A part of"
asks ``A part_of ?x``; "what is part of T" asks ``?x part_of T``. A question naming two or three
symbols and no relation ("how is A related to B") asks, from each symbol, for any relation to
another of them (relation :data:`ANY`).

>>> from thinkingdb.retrieval.expansion import SymbolMatcher
>>> m = SymbolMatcher(["spliceosomal_complex", "nucleus"], ["part_of", "regulates"])
>>> reader = QuestionReader(m, ["part_of", "regulates"], inverses={"has_part": "part_of"})
>>> [a.describe() for a in reader.read("What is spliceosomal complex part of?").asks]
['spliceosomal_complex part_of ?x']
>>> [a.describe() for a in reader.read("Which terms belong to the nucleus?").asks]
['?x part_of nucleus']
>>> [a.describe() for a in reader.read("nucleus has part what?").asks]
['?x part_of nucleus']
>>> [a.describe() for a in reader.read("What is regulated by nucleus?").asks]
['nucleus regulates ?x']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..store.extract import DEFAULT_PHRASES
from .expansion import SymbolMatcher, words

__all__ = ["ANY", "Ask", "Question", "QuestionReader", "MAX_PHRASE_WORDS", "MAX_LINKED"]

MAX_PHRASE_WORDS = 6
MAX_LINKED = 3      # symbols asked about pairwise when a question names several and no relation
ANY = "*"           # the relation of a link ask: "how is A related to B"
_PASSIVE = "by"


@dataclass(frozen=True, order=True)
class Ask:
    """One relational reading: ``symbol`` is the ``role`` (subject or object) of a ``relation`` fact."""

    relation: str
    symbol: str
    role: str
    phrase: str

    def describe(self) -> str:
        """The ask as a triple pattern.

        >>> Ask("part_of", "nucleus", "object", "part of").describe()
        '?x part_of nucleus'
        >>> Ask(ANY, "nucleus", "subject", "").describe()
        'nucleus ?r (a symbol the question names)'
        """
        if self.relation == ANY:
            return f"{self.symbol} ?r (a symbol the question names)"
        return f"{self.symbol} {self.relation} ?x" if self.role == "subject" else f"?x {self.relation} {self.symbol}"

    def to_json(self) -> dict:
        return {"relation": self.relation, "symbol": self.symbol, "role": self.role, "phrase": self.phrase}


@dataclass(frozen=True)
class Question:
    """What a question names: its symbols and relations (sorted keys) and its asks."""

    symbols: tuple[str, ...]
    relations: tuple[str, ...]
    asks: tuple[Ask, ...]

    def to_json(self) -> dict:
        return {"symbols": list(self.symbols), "relations": list(self.relations),
                "asks": [a.to_json() for a in self.asks]}


@dataclass(frozen=True)
class _Rel:
    relation: str
    flipped: bool
    source: str      # key, alias, inverse or phrase


class QuestionReader:
    """Reads questions against one knowledge base's symbols and relation phrases (see the module).

    ``relations``: the relations the knowledge base knows; ``aliases``: phrase → relation;
    ``inverses``: inverse name → canonical relation; ``phrases``: extraction phrases (a relation
    written ``^r`` reads the other way), :data:`~thinkingdb.store.extract.DEFAULT_PHRASES` by default.
    """

    def __init__(self, matcher: SymbolMatcher, relations: Iterable[str], *, aliases: Mapping[str, str] | None = None,
                 inverses: Mapping[str, str] | None = None, phrases: Mapping[str, str] | None = None) -> None:
        self.matcher = matcher
        known = set(relations)
        self._table: dict[tuple[str, ...], set[_Rel]] = {}
        for rel in sorted(known):
            self._add(rel.replace("_", " "), _Rel(rel, False, "key"))
        for phrase, rel in sorted((aliases or {}).items()):
            if rel in known:
                self._add(phrase.replace("_", " "), _Rel(rel, False, "alias"))
        for name, rel in sorted((inverses or {}).items()):
            if rel in known:
                self._add(name.replace("_", " "), _Rel(rel, True, "inverse"))
        for phrase, rel in sorted((DEFAULT_PHRASES if phrases is None else phrases).items()):
            flipped = rel.startswith("^")
            rel = rel.lstrip("^")
            if rel in known:
                self._add(phrase, _Rel(rel, flipped, "phrase"))

    def _add(self, phrase: str, rel: _Rel) -> None:
        ws = words(phrase)
        if not ws or len(ws) > MAX_PHRASE_WORDS:
            return
        self._table.setdefault(tuple(self.matcher.stem(w) for w in ws), set()).add(rel)

    def read(self, text: str) -> Question:
        """Symbols first (longest match wins), then relation phrases on the words left over."""
        ws = words(text)
        stems = [self.matcher.stem(w) for w in ws]
        syms = self.matcher.symbol_spans(stems)
        taken = [False] * len(stems)
        for _, start, end in syms:
            for i in range(start, end):
                taken[i] = True
        rels: list[tuple[_Rel, int, int]] = []
        i = 0
        while i < len(stems):
            if taken[i]:
                i += 1
                continue
            for n in range(min(MAX_PHRASE_WORDS, len(stems) - i), 0, -1):
                if any(taken[i:i + n]):
                    continue
                found = self._table.get(tuple(stems[i:i + n]))
                if found:
                    rels.extend((r, i, i + n) for r in sorted(found, key=lambda r: (r.relation, r.flipped)))
                    i += n
                    break
            else:
                i += 1
        asks: set[Ask] = set()
        for rel, start, end in rels:
            passive = rel.source in ("key", "alias") and end < len(ws) and ws[end] == _PASSIVE
            phrase = " ".join(ws[start:end + (1 if passive else 0)])
            for key, s_start, _ in syms:
                before = s_start < start
                subject = before != (rel.flipped or passive)
                asks.add(Ask(rel.relation, key, "subject" if subject else "object", phrase))
        keys = sorted({k for k, _, _ in syms})
        if not rels and 1 < len(keys) <= MAX_LINKED:
            asks = {Ask(ANY, k, "subject", "") for k in keys}
        return Question(tuple(keys), tuple(sorted({r.relation for r, _, _ in rels})), tuple(sorted(asks)))
