"""The tokenizer shared by documents and queries.

Pipeline, applied to each whitespace-separated word of ``text``:

1. Unicode NFKC normalization, then lowercase (``str.lower``).
2. Split on whitespace (``str.split()``, Unicode aware).
3. Curly and modifier apostrophes (’ ‘ ʼ ＇) become ``'``; every dash
   (Unicode category ``Pd``: - ‐ ‑ – — …) inside a word becomes ``-``.
4. Strip edge characters whose Unicode category is punctuation (P*), symbol (S*)
   or other (C*); letters, digits and marks survive, so ``café`` stays whole.
5. Remove a possessive ``'s`` (after step 3 that also covers ``’s``), strip again.
6. A word with inner hyphens is emitted whole and then part by part
   (``sandbox-runtime`` → ``sandbox-runtime``, ``sandbox``, ``runtime``),
   unless every part is a number (``2024-01-01``, ``1.5-2.0`` stay whole).
7. Drop stopwords (checked before stemming, on the whole word and on each part;
   a hyphenated word that is itself a stopword is dropped with its parts).
8. Snowball stemming through PyStemmer (English by default).

The result of a word depends only on the word, so it is cached per tokenizer.
A word gives two or more terms exactly when it is a *compound*: its whole form
followed by the parts that survived step 7. :meth:`Tokenizer.groups` keeps the
terms of each word together, so the index can treat the whole form and its
parts as two readings of one position (see ``lexical.scoring``).

>>> Tokenizer()("Ploinky’s sandbox-runtime")
['ploinki', 'sandbox-runtim', 'sandbox', 'runtim']
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from itertools import chain
from typing import Any

import Stemmer

from .errors import ParameterError, UnknownLanguageError, check_text

__all__ = ["Tokenizer", "tokenize", "DEFAULT_STOPWORDS", "available_languages", "TOKENIZER_VERSION"]

#: Bumped whenever the rules above change the tokens of some input; recorded in saved indexes.
TOKENIZER_VERSION = 2

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
_CACHE_LIMIT = 1_000_000
# every ASCII character of category P*, S* or C* (what _strip_edges removes), for str.strip
_ASCII_EDGE = "".join(chr(c) for c in range(128) if unicodedata.category(chr(c))[0] in "PSC")


def _load_default_stopwords() -> frozenset[str]:
    text = resources.files(__package__).joinpath("stopwords.txt").read_text(encoding="utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


#: The default English stopword list (``lexical/stopwords.txt``).
DEFAULT_STOPWORDS: frozenset[str] = _load_default_stopwords()


def available_languages() -> list[str]:
    """Languages that have a Snowball stemmer in the installed PyStemmer.

    >>> "english" in available_languages()
    True
    """
    return sorted(Stemmer.algorithms())


@lru_cache(maxsize=4096)
def _is_edge(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PSC"


@lru_cache(maxsize=4096)
def _is_dash(ch: str) -> bool:
    return unicodedata.category(ch) == "Pd"


def _strip_edges(word: str) -> str:
    start, end = 0, len(word)
    while start < end and _is_edge(word[start]):
        start += 1
    while end > start and _is_edge(word[end - 1]):
        end -= 1
    return word[start:end]


def _is_number(part: str) -> bool:
    """Digits, with ``.`` and ``,`` anywhere between or around them (``2024``, ``1.5``, ``10,000``)."""
    return part.replace(".", "").replace(",", "").isdigit()


class Tokenizer:
    """Turn text into index terms; documents and queries use the same instance.

    ``stopwords=None`` selects :data:`DEFAULT_STOPWORDS` for English and no
    stopwords for other languages; pass any iterable (possibly empty) to choose.
    ``stem=False`` keeps the words unstemmed.

    >>> tok = Tokenizer()
    >>> tok("The Ploinky's 2024-01-01 release, “state-of-the-art”!")
    ['ploinki', '2024-01-01', 'releas', 'state-of-the-art', 'state', 'art']
    >>> tok("Ploinky’s") == tok("Ploinky's") == tok("ploinky")
    True
    >>> Tokenizer(stem=False, stopwords=[])("Café—bar (x-15)")
    ['café-bar', 'café', 'bar', 'x-15', 'x', '15']
    """

    __slots__ = ("language", "stem", "stopwords", "_stemmer", "_cache", "_stem_lock")

    def __init__(
        self, language: str = "english", stem: bool = True, stopwords: Iterable[str] | None = None
    ) -> None:
        if not isinstance(language, str) or language not in Stemmer.algorithms():
            raise UnknownLanguageError(
                f"no Snowball stemmer for language {language!r}; "
                f"available: {', '.join(available_languages())}"
            )
        if not isinstance(stem, bool):
            raise ParameterError(f"stem must be True or False, got {stem!r}")
        if stopwords is None:
            words = DEFAULT_STOPWORDS if language == "english" else frozenset()
        elif isinstance(stopwords, str):
            raise ParameterError("stopwords must be an iterable of words, not one string")
        else:
            words = frozenset(unicodedata.normalize("NFKC", w).lower() for w in stopwords)
        self.language = language
        self.stem = stem
        self.stopwords: frozenset[str] = words
        # our own per-word cache makes PyStemmer's (slow to purge) cache redundant
        self._stemmer = Stemmer.Stemmer(language, 0) if stem else None
        self._stem_lock = threading.Lock()  # a PyStemmer instance must not be used by two threads at once
        self._cache: dict[str, tuple[str, ...]] = {}

    def __repr__(self) -> str:
        return f"Tokenizer(language={self.language!r}, stem={self.stem!r}, stopwords=<{len(self.stopwords)} words>)"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and copied by its settings; the stemmer, lock and word cache are made anew.

        >>> import pickle; pickle.loads(pickle.dumps(Tokenizer()))("Ploinky's sandboxes")
        ['ploinki', 'sandbox']
        """
        return (Tokenizer, (self.language, self.stem, sorted(self.stopwords)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tokenizer) and self.params() == other.params()

    def __hash__(self) -> int:
        return hash((self.language, self.stem, self.stopwords))

    def params(self) -> dict[str, Any]:
        """A JSON-able record of everything that decides the tokens (saved with indexes).

        >>> p = Tokenizer().params()
        >>> (p["language"], p["stem"], len(p["stopwords"]))
        ('english', True, 93)
        """
        return {
            "tokenizer_version": TOKENIZER_VERSION,
            "language": self.language,
            "stem": self.stem,
            "stopwords": sorted(self.stopwords),
        }

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`params` output.

        >>> Tokenizer.from_params(Tokenizer(stem=False).params()) == Tokenizer(stem=False)
        True
        """
        if params.get("tokenizer_version") != TOKENIZER_VERSION:
            raise ParameterError(
                f"tokenizer_version {params.get('tokenizer_version')!r} is not {TOKENIZER_VERSION}"
            )
        return cls(params["language"], params["stem"], params["stopwords"])

    def analyze_word(self, word: str) -> tuple[str, ...]:
        """Terms of one already lowercased, whitespace-free word (steps 3 to 8).

        >>> Tokenizer().analyze_word("(ploinky's)")
        ('ploinki',)
        """
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        return self.analyze_words([word])[0]

    def word_keys(self, words: Sequence[str]) -> list[str]:
        """For each word, a key with the same terms that many words share: an ASCII word without
        its edge punctuation (``fox``, ``(fox),`` and ``fox.`` all give ``fox``). Analysing the
        distinct keys of many words is enough: ``analyze_word(key) == analyze_word(word)``.

        >>> Tokenizer().word_keys(["(fox),", "fox.", "fox", "café,"])
        ['fox', 'fox', 'fox', 'café,']
        """
        edge = _ASCII_EDGE
        return [w.strip(edge) if w.isascii() and not w.isalnum() else w for w in words]

    def analyze_words(self, words: Sequence[str], remember: bool = True) -> list[tuple[str, ...]]:
        """Terms of many words at once; unseen words are stemmed in one PyStemmer call.

        ``remember=False`` leaves the per-word cache untouched (bulk indexing keeps its own).

        >>> Tokenizer().analyze_words(["running", "the", "x-ray"])
        [('run',), (), ('x-ray', 'x', 'ray')]
        """
        cache = self._cache
        if not remember:
            return self._analyze_batch(words)
        missing = list({w for w in words if w not in cache})
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                cache.clear()
            cache.update(zip(missing, self._analyze_batch(missing)))
        try:
            return [cache[w] for w in words]
        except KeyError:  # another thread emptied the full cache in between
            return self._analyze_batch(words)

    def _analyze_batch(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        prepared = [self._prepare(w) for w in words]
        if self._stemmer is None:
            return [tuple(parts) for parts in prepared]
        flat = list({s for parts in prepared for s in parts})
        with self._stem_lock:
            stems = self._stemmer.stemWords(flat)
        stem_of = dict(zip(flat, stems))
        return [tuple(stem_of[s] for s in parts) for parts in prepared]

    def _prepare(self, word: str) -> list[str]:
        """Steps 3 to 7: the unstemmed surviving words."""
        stop = self.stopwords
        if word.isascii():
            w = word if word.isalnum() else word.strip(_ASCII_EDGE)
            if w.isalnum():
                return [] if w in stop else [w]
            if w.endswith("'s"):
                w = w[:-2].strip(_ASCII_EDGE)
        else:
            w = word.translate(_APOSTROPHES)
            if any(_is_dash(c) for c in w):
                w = "".join("-" if _is_dash(c) else c for c in w)
            w = _strip_edges(w)
            if w.endswith("'s"):
                w = _strip_edges(w[:-2])
        if not w or w in stop:
            return []
        words = [w]
        if "-" in w:
            if w.isascii():  # str.strip with the ASCII edge characters: the same, much faster
                parts = [p for p in (p.strip(_ASCII_EDGE) for p in w.split("-")) if p]
            else:
                parts = [p for p in (_strip_edges(p) for p in w.split("-")) if p]
            if len(parts) > 1 and not all(map(_is_number, parts)):
                words.extend(parts)
            elif len(parts) == 1:
                words = parts
        return [x for x in words if x not in stop]

    def words(self, text: str) -> list[str]:
        """Steps 1 and 2: the normalized, lowercased whitespace words of ``text``.

        >>> Tokenizer().words("Ａ  Big\\tDog")
        ['a', 'big', 'dog']
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        if not text.isascii():
            check_text(text)
            text = unicodedata.normalize("NFKC", text)
        return text.lower().split()

    def groups(self, text: str) -> list[tuple[str, ...]]:
        """The terms of each word of ``text`` that has any, word by word.

        A group of two or more terms is a compound: the whole form, then its parts.
        Concatenated, the groups are exactly ``self(text)``.

        >>> Tokenizer().groups("the wing-body interference")
        [('wing-bodi', 'wing', 'bodi'), ('interfer',)]
        """
        words = self.words(text)
        try:
            found = list(map(self._cache.__getitem__, words))
        except KeyError:
            found = self.analyze_words(words)
        return [g for g in found if g]

    def __call__(self, text: str) -> list[str]:
        """Tokenize ``text`` into a list of terms.

        >>> Tokenizer()("Nginx depends on OpenSSL.")
        ['nginx', 'depend', 'openssl']
        """
        cache = self._cache
        words = self.words(text)
        try:
            return list(chain.from_iterable(map(cache.__getitem__, words)))
        except KeyError:
            return list(chain.from_iterable(self.analyze_words(words)))


_DEFAULT: Tokenizer | None = None


def default_tokenizer() -> Tokenizer:
    """The shared tokenizer with the default settings (English, stemming, default stopwords).

    >>> default_tokenizer() is default_tokenizer()
    True
    """
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Tokenizer()
    return _DEFAULT


def tokenize(text: str) -> list[str]:
    """Tokenize with the default tokenizer.

    >>> tokenize("Ploinky's sandbox-runtime")
    ['ploinki', 'sandbox-runtim', 'sandbox', 'runtim']
    """
    return default_tokenizer()(text)
