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
inverse name swaps the two. A possessive reads as "of" with the possessor after the phrase ("A's
parts" and "A: what are its parts?" read "parts of A"), and a personal pronoun after the one symbol
a question names stands in its place ("A: which terms regulate it?" reads "which terms regulate A"). Each (relation, symbol) pair is an :class:`Ask`: "what is A part of"
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
>>> [a.describe() for a in reader.read("What are the nucleus's parts?").asks]
['?x part_of nucleus']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..store.extract import DEFAULT_PHRASES
from .expansion import SymbolMatcher, words

__all__ = ["ANY", "Ask", "Question", "QuestionReader", "MAX_PHRASE_WORDS", "MAX_LINKED"]

MAX_PHRASE_WORDS = 6
# Forms of the auxiliaries read as one word, and the function words a relation phrase may carry or
# leave out anywhere: "has part", "have part", "has as a part" and "is a part of" / "part of" read alike.
_LEMMA = {**dict.fromkeys(["has", "have", "had", "having"], "have"),
          **dict.fromkeys(["is", "are", "was", "were", "be", "been", "being", "am"], "be"),
          **dict.fromkeys(["does", "do", "did", "doing", "done"], "do")}
FILLERS = frozenset({"a", "an", "the", "as", "be", "do"})
# A question may front a phrase's preposition ("Of what is A a part?", "By what is A regulated?") or
# its object noun ("Which parts does A have?"): read in its place at the end of the clause.
_WH = frozenset({"what", "which", "whom", "whose"})
_PREPOSITIONS = frozenset({"of", "by", "to", "in", "from", "into", "on", "with", "for"})
# A possessive stands for "of": "A's parts" and "its parts" read as "parts of A" ("'s" is the word "s"
# after the possessor). A personal pronoun stands where the one symbol the question names would
# ("A: which terms regulate it?" reads "which terms regulate A") when it comes after that symbol; with
# more mentions it is not read.
_POSSESSIVE_S = "s"
_POSSESSIVE_PRONOUNS = frozenset({"its", "their"})
_PRONOUNS = frozenset({"it", "them", "itself", "themselves"})
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
    """What a question names: its symbols and relations (sorted keys) and its asks. ``groups``: the
    symbols named by the same words ("vesicle coating" names ``vesicle_coat`` and
    ``vesicle_coating``, whose names stem alike) — one mention, however many keys."""

    symbols: tuple[str, ...]
    relations: tuple[str, ...]
    asks: tuple[Ask, ...]
    groups: tuple[tuple[str, ...], ...] = ()

    def mentions(self) -> tuple[tuple[str, ...], ...]:
        """The symbols grouped by mention (each symbol its own when no groups were read).

        >>> Question(("a", "b"), (), ()).mentions()
        (('a',), ('b',))
        """
        return self.groups or tuple((s,) for s in self.symbols)

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

    ``relations``: the relations the knowledge base knows; ``aliases``: phrase → relation (an alias of
    an inverse name reads the other way); ``inverses``: inverse name → canonical relation;
    ``phrases``: extraction phrases (a relation written ``^r`` reads the other way),
    :data:`~thinkingdb.store.extract.DEFAULT_PHRASES` by default.
    """

    def __init__(self, matcher: SymbolMatcher, relations: Iterable[str], *, aliases: Mapping[str, str] | None = None,
                 inverses: Mapping[str, str] | None = None, phrases: Mapping[str, str] | None = None) -> None:
        self.matcher = matcher
        known = set(relations)
        inverses = {name: rel for name, rel in (inverses or {}).items() if rel in known}
        self._content: dict[tuple[str, ...], set[_Rel]] = {}   # phrases keyed by their content words
        self._literal: dict[tuple[str, ...], set[_Rel]] = {}   # phrases of function words only ("is a")
        for rel in sorted(known):
            self._add(rel.replace("_", " "), _Rel(rel, False, "key"))
        for phrase, rel in sorted((aliases or {}).items()):
            if rel in known:
                self._add(phrase.replace("_", " "), _Rel(rel, False, "alias"))
            elif rel in inverses:
                self._add(phrase.replace("_", " "), _Rel(inverses[rel], True, "alias"))
        for name, rel in sorted(inverses.items()):
            self._add(name.replace("_", " "), _Rel(rel, True, "inverse"))
        for phrase, rel in sorted((DEFAULT_PHRASES if phrases is None else phrases).items()):
            flipped = rel.startswith("^")
            rel = rel.lstrip("^")
            if rel in known:
                self._add(phrase, _Rel(rel, flipped, "phrase"))
        self._relational = frozenset(w for phrase in self._content for w in phrase)

    def _canon(self, ws: list[str]) -> list[str]:
        return [self.matcher.stem(_LEMMA.get(w, w)) for w in ws]

    def _add(self, phrase: str, rel: _Rel) -> None:
        ws = words(phrase)
        if not ws or len(ws) > MAX_PHRASE_WORDS:
            return
        canon = self._canon(ws)
        content = tuple(c for c in canon if c not in FILLERS)
        if content:
            self._content.setdefault(content, set()).add(rel)
        else:
            self._literal.setdefault(tuple(canon), set()).add(rel)

    def read(self, text: str) -> Question:
        """Symbols first (the most words as written, then the most words), then relation phrases
        on the words left over."""
        ws = words(text)
        stems = self._canon(ws)
        syms = self.matcher.symbol_spans([self.matcher.stem(w) for w in ws], ws, self._relational)
        owner: dict[int, int] = {}            # word index -> index of the symbol span holding it
        for n, (_, start, end) in enumerate(syms):
            for i in range(start, end):
                owner[i] = n
        rels: list[tuple[_Rel, int, int]] = []
        used: set[int] = set()                # words a fronted phrase took
        spans: dict[tuple[int, int], set[str]] = {}
        for key, start, end in syms:
            spans.setdefault((start, end), set()).add(key)
        one = len(spans) == 1
        # possessives: the word after the marker starts a phrase read with "of" after it, and the
        # possessor (a symbol, or the one symbol for "its") stands after that phrase
        possessed: dict[int, set[int]] = {}   # first word of the possessed phrase -> possessor spans
        for n, (_, start, end) in enumerate(syms):
            if end + 1 < len(ws) and ws[end] == _POSSESSIVE_S and end not in owner:
                possessed.setdefault(end + 1, set()).add(n)
                used.add(end)
        pronoun = None
        for j, w in enumerate(ws):
            if j in owner or not one:
                continue
            if w in _POSSESSIVE_PRONOUNS and j + 1 < len(ws):
                possessed.setdefault(j + 1, set()).update(range(len(syms)))
                used.add(j)
            elif w in _PRONOUNS and pronoun is None and j >= max(end for _, _, end in syms):
                pronoun = j   # it refers back to the symbol (before it: "what is it that ..." is no reference)
        content = [j for j in range(len(ws)) if j not in owner and j not in used and stems[j] not in FILLERS]
        tail = None
        if len(content) > 2 and content[:2] == [0, 1] and ws[0] in _PREPOSITIONS and ws[1] in _WH:
            tail, used = stems[0], {0, 1}     # "Of what is A a part?": the preposition ends the phrase
        elif len(content) > 2 and content[:2] == [0, 1] and ws[0] in _WH and syms:
            last = content[-1]                # "Which parts does A have?": the object noun is fronted
            found = self._content.get((stems[last], stems[1]))
            if found and last > syms[0][1] and 1 < syms[0][1]:
                rels.extend((r, last, last + 1) for r in sorted(found, key=lambda r: (r.relation, r.flipped)))
                used = {1, last}
        i = 0
        while i < len(stems):
            if i in owner or i in used:
                i += 1
                continue
            hit = None
            if i in possessed:
                hit = self._phrase_at(stems, owner, used, i, tail, content[-1] if content else -1, implied="of")
            hit = hit or self._phrase_at(stems, owner, used, i, tail, content[-1] if content else -1)
            if hit is None:
                i += 1
                continue
            found, end = hit
            rels.extend((r, i, end) for r in sorted(found, key=lambda r: (r.relation, r.flipped)))
            i = end
        asks: set[Ask] = set()
        for rel, start, end in rels:
            stranded = tail == _PASSIVE and end - 1 == content[-1]
            passive = rel.source in ("key", "alias") and (stranded or end < len(ws) and ws[end] == _PASSIVE)
            phrase = " ".join(ws[j] for j in range(start, end + (1 if passive and not stranded else 0))
                              if j not in owner)
            for n, (key, s_start, _) in enumerate(syms):
                if n in possessed.get(start, ()):
                    before = False                    # "A's parts": parts of A
                elif pronoun is not None:
                    before = pronoun < start          # "A: which terms regulate it?"
                else:
                    before = s_start < start
                subject = before != (rel.flipped or passive)
                asks.add(Ask(rel.relation, key, "subject" if subject else "object", phrase))
        keys = sorted({k for k, _, _ in syms})
        groups = tuple(sorted({tuple(sorted(g)) for g in spans.values()}))
        if not rels and 1 < len(groups) <= MAX_LINKED:
            asks = {Ask(ANY, k, "subject", "") for k in keys}
        return Question(tuple(keys), tuple(sorted({r.relation for r, _, _ in rels})), tuple(sorted(asks)), groups)

    def _phrase_at(self, stems: list[str], owner: Mapping[int, int], used: set[int], i: int, tail: str | None,
                   last: int, implied: str | None = None) -> tuple[set[_Rel], int] | None:
        """The longest phrase starting at word ``i``: its relations and the index after its last word.

        Its content words are read in order, skipping function words (:data:`FILLERS`) and at most
        one symbol in between (``has X as a part``); a phrase ending at the question's ``last``
        content word may end with the fronted preposition ``tail``; a phrase of function words only
        (``is a``) must stand as written, and only where no content phrase starts. ``implied``: a
        word the question leaves out after the phrase (the "of" of a possessive); only phrases
        read with it are returned, no symbol inside.
        """
        if implied is not None:
            run, j = [], i
            while j < len(stems) and len(run) < MAX_PHRASE_WORDS and j not in used and j not in owner:
                if stems[j] not in FILLERS:
                    run.append((stems[j], j))
                j += 1
            for n in range(len(run), 0, -1):
                found = self._content.get(tuple(c for c, _ in run[:n]) + (self.matcher.stem(implied),))
                if found:
                    return found, run[n - 1][1] + 1
            return None
        run: list[tuple[str, int]] = []       # (content stem, index), up to MAX_PHRASE_WORDS
        gap_at = None                         # content words before the one symbol inside the run
        j = i
        while j < len(stems) and len(run) < MAX_PHRASE_WORDS and j not in used:
            if j in owner:
                if gap_at is not None or not run:
                    break
                gap_at, j = len(run), max(k for k, o in owner.items() if o == owner[j]) + 1
                continue
            if stems[j] not in FILLERS:
                run.append((stems[j], j))
            j += 1
        for n in range(len(run), 0, -1):
            key = tuple(c for c, _ in run[:n])
            found = (tail and run[n - 1][1] == last and self._content.get(key + (tail,))) or self._content.get(key)
            if found:
                return found, run[n - 1][1] + 1
        for n in range(min(MAX_PHRASE_WORDS, len(stems) - i), 0, -1):
            if any(k in owner or k in used for k in range(i, i + n)):
                continue
            found = self._literal.get(tuple(stems[i:i + n]))
            if found:
                return found, i + n
        return None
