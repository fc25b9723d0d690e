"""The closure lane of kb-thinkingdb: query symbols, seeds, bounded closure, credit to units.

1. **Query symbols and relations** are found in the query text on token boundaries — never as raw
   substrings (``AI`` does not match ``maintenance``): the text and every symbol key (and its label
   split at camelCase, so ``Achilles IDE`` finds ``AchillesIDE``) are cut into words at every
   non-alphanumeric character, words are stemmed, and whole word sequences are looked up, longest
   first. One-word stopwords, one-letter and all-digit words never match on their own.
2. **Goals**: a goal-directed closure (docs/closure.md) derives the facts that touch a query
   symbol, by every relation a rule derives, to the profile's expansion depth (``max_depth``;
   ``max_nodes`` — the seeds' count plus the profile's — caps the symbols the demand touches). The
   seed units' facts matter for the *partial* tier below: a partial chain must rest on one of them.
3. **Credit**: a fact — asserted or derived — is a candidate when it touches a query symbol:

   ========  ==========================================================================  ======
   tier      the fact                                                                    factor
   ========  ==========================================================================  ======
   exact     links two query symbols, by a query relation (or the query names none)      1.0
   strong    links two query symbols by another relation; or one query symbol by a        0.8
             query relation when the query names only one symbol
   weak      one query symbol, by a query relation, while the query names more            0.6
   partial   derived, touches a query symbol, and its proof uses a seed unit's fact       ``partial_weight``
   ========  ==========================================================================  ======

   Every visible unit asserting a leaf of the candidate's proof is credited with ``proof score ×
   factor`` and that proof. A unit keeps the proof of its best tier first, then its best score: the
   chain that answers the query wins over a shorter partial chain. A unit that asserts an exact or
   strong answer itself is *pinned*: it states the answer directly and is never dropped.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ..model import Limits, PathRel, Query, QueryPattern, Triple, Var
from ..engine.proofs import Proof

__all__ = ["SymbolMatcher", "Credit", "Expansion", "expand", "words", "TIERS", "EXACT_STEPS"]

TIERS = {"exact": 1.0, "strong": 0.8, "weak": 0.6}
_TIER_RANK = {"exact": 0, "strong": 1, "weak": 2, "partial": 3}
_SPLIT = re.compile(r"[\W_]+", re.UNICODE)
_CAMEL_1 = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CAMEL_2 = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
MAX_WORDS = 24   # longest symbol name matched, in words (ontology term names run past ten)
# set-level steps a search spends on the unbounded demand that makes the depth report exact (the
# engine's default is 50,000; past this the depth bound is reported conservatively, same answers)
EXACT_STEPS = 500


def words(text: str) -> list[str]:
    """Case-folded words split at every non-alphanumeric character.

    >>> words("Why is AchillesIDE relevant for secure-execution?")
    ['why', 'is', 'achilleside', 'relevant', 'for', 'secure', 'execution']
    """
    return [w for w in _SPLIT.split(unicodedata.normalize("NFKC", text).casefold()) if w]


class SymbolMatcher:
    """Finds symbol keys and relation keys in free text on word boundaries.

    >>> m = SymbolMatcher(["ai", "secure_execution", "achilleside"], ["relevant_for"], labels={"achilleside": "AchillesIDE"})
    >>> m.match("is predictive maintenance AI?")
    (['ai'], [])
    >>> m.match("why is Achilles IDE relevant for secure executions")
    (['achilleside', 'secure_execution'], ['relevant_for'])
    >>> m.match("maintenance")
    ([], [])
    """

    def __init__(self, symbols: Iterable[str], relations: Iterable[str], *, labels: Mapping[str, str] | None = None,
                 aliases: Mapping[str, str] | None = None) -> None:
        from lexical import DEFAULT_STOPWORDS, Tokenizer
        self._tok = Tokenizer(stopwords=[])
        self._stop = DEFAULT_STOPWORDS
        self._sym: dict[tuple[str, ...], set[str]] = {}
        self._rel: dict[tuple[str, ...], set[str]] = {}
        self._forms: dict[str, list[tuple[str, ...]]] = {}   # a symbol's words as written (key, label)
        labels = labels or {}
        for key in symbols:
            self._add(self._sym, words(key), key)
            label = labels.get(key)
            if label and label != key:
                self._add(self._sym, words(_CAMEL_2.sub(" ", _CAMEL_1.sub(" ", label))), key)
        for rel in relations:
            self._add(self._rel, words(rel), rel)
        for phrase, rel in (aliases or {}).items():
            self._add(self._rel, words(phrase), rel)

    def patched(self, symbols: Mapping[str, tuple[str | None, str | None] | None], relations: Iterable[str], *,
                aliases: Mapping[str, str] | None = None) -> "SymbolMatcher":
        """A new matcher: this one with each key of ``symbols`` replaced — ``(old label, new label)``
        where the key was matched with its old label and is now matched with the new one (None
        on a side: the key is absent there; a label equal to the key adds nothing) — and the relations
        and aliases read anew. This matcher is left as it is; unchanged entries are shared.

        >>> m = SymbolMatcher(["nginx", "open_ssl"], ["uses"], labels={"open_ssl": "OpenSSL"})
        >>> n = m.patched({"open_ssl": ("OpenSSL", None), "libc": (None, "libc")}, ["uses"])
        >>> n.match("nginx uses libc and Open SSL"), m.match("nginx uses libc and Open SSL")
        ((['libc', 'nginx'], ['uses']), (['nginx', 'open_ssl'], ['uses']))
        """
        twin = SymbolMatcher.__new__(SymbolMatcher)
        twin._tok, twin._stop = self._tok, self._stop
        twin._sym, twin._forms = dict(self._sym), dict(self._forms)
        mine: set[tuple[str, ...]] = set()   # entries copied already (the old matcher's sets are shared)

        def own(stems: tuple[str, ...]) -> set[str]:
            if stems not in mine or stems not in twin._sym:
                twin._sym[stems] = set(twin._sym.get(stems, ()))
                mine.add(stems)
            return twin._sym[stems]

        for key, (old, new) in sorted(symbols.items()):
            if old is not None:
                for ws in twin._forms.pop(key, ()):
                    stems = tuple(self._stem(w) for w in ws)
                    if stems in twin._sym:
                        own(stems).discard(key)
                        if not twin._sym[stems]:
                            del twin._sym[stems]
            if new is not None:
                for ws in self._key_forms(key, new):
                    own(tuple(self._stem(w) for w in ws)).add(key)
                    twin._forms[key] = twin._forms.get(key, []) + [tuple(ws)]   # a new list: never the old one's
        twin._rel = {}
        for rel in relations:
            twin._add(twin._rel, words(rel), rel)
        for phrase, rel in (aliases or {}).items():
            twin._add(twin._rel, words(phrase), rel)
        return twin

    def over(self, symbols: Mapping, forms: Mapping) -> "SymbolMatcher":
        """This matcher's relations and stemmer with another symbol table: ``symbols`` (stem tuple →
        set of keys) and ``forms`` (key → the word tuples it is written as), e.g. mappings that read
        a file as they are asked (:mod:`~thinkingdb.retrieval.symboltable`).

        >>> m = SymbolMatcher([], ["uses"]).over({("nginx",): {"nginx"}}, {"nginx": [("nginx",)]})
        >>> m.match("nginx uses it")
        (['nginx'], ['uses'])
        """
        twin = SymbolMatcher.__new__(SymbolMatcher)
        twin._tok, twin._stop, twin._rel = self._tok, self._stop, self._rel
        twin._sym, twin._forms = symbols, forms
        return twin

    def forms_many(self, labels: Mapping[str, str | None]) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
        """Each key's ``(words as written, their stems)`` per form it is matched on with its label
        (as ``__init__`` adds them); every word is stemmed in one batch.

        >>> SymbolMatcher([], []).forms_many({"web_servers": "Engine X", "a": None})
        {'web_servers': [(('web', 'servers'), ('web', 'server')), (('engine', 'x'), ('engin', 'x'))], 'a': []}
        """
        written = {k: self._key_forms(k, lab) for k, lab in labels.items()}
        uniq = sorted({w for fs in written.values() for ws in fs for w in ws})
        stem = {w: (t[0] if t else w) for w, t in zip(uniq, self._tok.analyze_words(uniq, remember=False))}
        return {k: [(tuple(ws), tuple(stem[w] for w in ws)) for ws in fs] for k, fs in written.items()}

    def _key_forms(self, key: str, label: str | None) -> list[list[str]]:
        """The word lists a symbol is matched on (its key's words, and its label's when it differs),
        as ``__init__`` adds them."""
        out = []
        for ws in (words(key), words(_CAMEL_2.sub(" ", _CAMEL_1.sub(" ", label))) if label and label != key else None):
            if ws is None or not ws or len(ws) > MAX_WORDS:
                continue
            if len(ws) == 1 and (ws[0] in self._stop or len(ws[0]) < 2 or ws[0].isdigit()):
                continue
            out.append(ws)
        return out

    def _stem(self, w: str) -> str:
        t = self._tok.analyze_word(w)
        return t[0] if t else w

    def stem(self, word: str) -> str:
        """The stem symbols and relations are matched on (a case-folded word from :func:`words`).

        >>> SymbolMatcher([], []).stem("regulated")
        'regul'
        """
        return self._stem(word)

    def symbol_spans(self, stems: list[str], surface: list[str] | None = None,
                     relational: frozenset[str] = frozenset()) -> list[tuple[str, int, int]]:
        """``(symbol key, start, end)`` over a list of word stems, longest match first, left to right.

        With the ``surface`` words (case-folded, as :func:`words` gives them), spans that compete for
        a word are weighed: most content words matched *as written* first, then most content words
        covered, less those written otherwise whose stem is in ``relational`` (the stems of relation
        phrases); a tie leaves the word to the later span. "regulators of pigment biosynthetic
        process" names ``pigment_biosynthetic_process`` (three words as written), not
        ``regulation_of_pigmentation`` (whose stems match too).

        >>> m = SymbolMatcher(["cell", "cell_wall"], [])
        >>> m.symbol_spans([m.stem(w) for w in words("is the cell wall part of a cell")])
        [('cell_wall', 2, 4), ('cell', 7, 8)]
        >>> m = SymbolMatcher(["regulation_of_pigmentation", "pigment_biosynthetic_process"], [])
        >>> ws = words("which terms are regulators of pigment biosynthetic process")
        >>> m.symbol_spans([m.stem(w) for w in ws], ws)
        [('pigment_biosynthetic_process', 5, 8)]
        """
        if surface is not None:
            return self._best_spans(stems, surface, relational)
        out: list[tuple[str, int, int]] = []
        i = 0
        while i < len(stems):
            for n in range(min(MAX_WORDS, len(stems) - i), 0, -1):
                keys = self._sym.get(tuple(stems[i:i + n]))
                if keys:
                    out.extend((k, i, i + n) for k in sorted(keys))
                    i += n
                    break
            else:
                i += 1
        return out

    def _best_spans(self, stems: list[str], surface: list[str], relational: frozenset[str]):
        n_w = len(stems)
        best: list[tuple[int, int]] = [(0, 0)] * (n_w + 1)    # (as written, covered less relational)
        choice: list[int] = [0] * (n_w + 1)                    # span length taken at i (0: skip the word)
        for i in range(n_w - 1, -1, -1):
            top, pick = None, 0
            for n in range(1, min(MAX_WORDS, n_w - i) + 1):
                keys = self._sym.get(tuple(stems[i:i + n]))
                if not keys:
                    continue
                w, c = max(self._weigh(k, surface[i:i + n], stems[i:i + n], relational) for k in keys)
                value = (w + best[i + n][0], c + best[i + n][1])
                if top is None or value >= top:                 # ties between spans: the longer
                    top, pick = value, n
            if top is not None and top > best[i + 1]:            # a tie with skipping: the later span
                best[i], choice[i] = top, pick
            else:
                best[i], choice[i] = best[i + 1], 0
        out: list[tuple[str, int, int]] = []
        i = 0
        while i < n_w:
            n = choice[i]
            if n:
                out.extend((k, i, i + n) for k in sorted(self._sym[tuple(stems[i:i + n])]))
                i += n
            else:
                i += 1
        return out

    def _weigh(self, key: str, ws: list[str], stems: list[str], relational: frozenset[str]) -> tuple[int, int]:
        """(content words of ``ws`` written as in ``key`` or its label, content words less those
        written otherwise whose stem is relational), the best over the key's written forms."""
        content = [j for j, w in enumerate(ws) if w not in self._stop]
        out = (0, len(content) - sum(1 for j in content if stems[j] in relational))
        for form in self._forms.get(key, ()):
            if len(form) == len(ws):
                same = [j for j in content if ws[j] == form[j]]
                other = sum(1 for j in content if ws[j] != form[j] and stems[j] in relational)
                out = max(out, (len(same), len(content) - other))
        return out

    def _add(self, table: dict, ws: list[str], key: str) -> None:
        if not ws or len(ws) > MAX_WORDS:
            return
        if len(ws) == 1 and (ws[0] in self._stop or len(ws[0]) < 2 or ws[0].isdigit()):
            return
        table.setdefault(tuple(self._stem(w) for w in ws), set()).add(key)
        if table is self._sym:
            self._forms.setdefault(key, []).append(tuple(ws))

    def _find(self, table: dict, stems: list[str]) -> list[str]:
        found: list[str] = []
        i = 0
        while i < len(stems):
            for n in range(min(MAX_WORDS, len(stems) - i), 0, -1):
                keys = table.get(tuple(stems[i:i + n]))
                if keys:
                    found.extend(sorted(keys))
                    i += n
                    break
            else:
                i += 1
        return sorted(set(found))

    def match(self, text: str) -> tuple[list[str], list[str]]:
        """``(symbol keys, relation keys)`` named in ``text``, each sorted."""
        stems = [self._stem(w) for w in words(text)]
        return self._find(self._sym, stems), self._find(self._rel, stems)


@dataclass(frozen=True)
class Credit:
    """Why a unit is in the closure lane: the candidate fact, its tier, the proof and the score."""

    unit_id: str
    score: float
    tier: str
    fact: Triple
    proof: Proof


@dataclass(frozen=True)
class Expansion:
    """The closure lane's outcome for one search (everything in it is visible to the caller)."""

    credits: Mapping[str, Credit]
    pinned: frozenset[str]
    query_symbols: tuple[str, ...]
    query_relations: tuple[str, ...]
    seed_units: tuple[str, ...]
    seed_symbols: int
    limits: Limits | None
    truncated: str | None
    stats: dict = field(default_factory=dict)
    priority: tuple[str, ...] = ()   # units carrying an answer, ranked above the rest in this order


def _tier(t: Triple, q: set[str], rels: set[str]) -> str | None:
    ends = (t.subject in q) + (t.object in q and t.object != t.subject)
    if not ends:
        return None
    rel_ok = t.relation in rels
    if ends == 2:
        return "exact" if rel_ok or not rels else "strong"
    if rel_ok:
        return "strong" if len(q) == 1 else "weak"
    return "partial"


def expand(graph, rules, unit_facts: Mapping[str, list], fact_units: Mapping[Triple, Mapping[str, float]],
           visible: Callable[[str], bool], seed_units: Iterable[str], query_symbols: Iterable[str],
           query_relations: Iterable[str], *, depth: int, max_nodes: int, max_derived: int,
           timeout_ms: float, partial_weight: float) -> Expansion:
    """Run the bounded closure from the seeds and credit units (see the module docstring)."""
    from ..engine.closure import closure
    rules = tuple(rules)
    t0 = time.perf_counter()
    q = {s for s in query_symbols if graph.symbol_id(s) is not None}
    heads = {r.head.relation for r in rules}
    rels = {r for r in query_relations if graph.relation_id(r) is not None or r in heads}
    seeds_u = tuple(seed_units)
    seed_facts = {t for u in seeds_u for t, _ in unit_facts.get(u, ()) if t in graph}
    seeds = set(q) | {x for t in seed_facts for x in (t.subject, t.object)}
    empty = Expansion({}, frozenset(), tuple(sorted(q)), tuple(sorted(rels)), seeds_u, len(seeds), None, None)
    if not q:
        return empty  # nothing in the query to connect the seeds to
    limits = Limits(max_depth=depth, max_nodes=len(seeds) + max_nodes, max_derived=max_derived,
                    timeout_ms=timeout_ms)
    # goal-directed: only the derived facts that touch a query symbol, by any derived relation
    goals = [Query((QueryPattern(s, PathRel(h), Var("o")),)) for s in sorted(q) for h in sorted(heads)]
    goals += [Query((QueryPattern(Var("s"), PathRel(h), s),)) for s in sorted(q) for h in sorted(heads)]
    res = closure(graph, rules, goals=goals, limits=limits, exact_steps=EXACT_STEPS)
    t1 = time.perf_counter()
    cands: list[tuple[str, float, Triple, Proof]] = []
    relations = graph.relations()
    for s in sorted(q):                      # asserted facts that answer the query
        for r in relations:
            for t in [Triple(s, r, o) for o in graph.objects(s, r)] + [Triple(x, r, s) for x in graph.subjects(r, s)]:
                tier = _tier(t, q, rels)
                if tier in TIERS:
                    c = graph.confidence(t)
                    cands.append((tier, c * TIERS[tier], t, Proof.asserted(t, c)))
    for key in res.derived_keys():           # derived facts: answers, and partial chains from the seeds
        t = res.ids.triple(key)
        tier = _tier(t, q, rels)
        if tier is None:
            continue
        proof = res.fact_proof(key)
        if tier == "partial":
            if not seed_facts.intersection(proof.leaves()):
                continue
            cands.append((tier, proof.score * partial_weight, t, proof))
        else:
            cands.append((tier, proof.score * TIERS[tier], t, proof))
    credits: dict[str, Credit] = {}
    pinned: set[str] = set()
    for tier, score, t, proof in sorted(cands, key=lambda c: (_TIER_RANK[c[0]], -c[1], c[2])):
        for leaf in proof.leaves():
            for uid in sorted(fact_units.get(leaf, ())):
                if not visible(uid):
                    continue
                if proof.kind == "asserted" and tier in ("exact", "strong"):
                    pinned.add(uid)
                if uid not in credits:       # candidates come best first: the first credit is the best
                    credits[uid] = Credit(uid, score, tier, t, proof)
    stats = {"derived": res.derived_count, "candidates": len(cands),
             "closure_ms": round((t1 - t0) * 1000, 3), "credit_ms": round((time.perf_counter() - t1) * 1000, 3)}
    if getattr(res, "stats", None) is not None:
        stats.update(rounds=res.stats.rounds, nodes=res.stats.nodes, engine=res.stats.engine)
    return Expansion(credits, frozenset(pinned), tuple(sorted(q)), tuple(sorted(rels)), seeds_u, len(seeds),
                     limits, res.truncated, stats)
