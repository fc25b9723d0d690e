"""Encoders: token lists and knowledge units to hypervectors.

Vector spaces (namespaces of :func:`hdc.random_vector`): ``"tok"`` for whole tokens, ``"gram"`` for
character n-grams, ``"role"`` for role names. With ``t`` the token vector and ``ρ`` :func:`hdc.permute`:

- bag ``[t_1 + ... + t_n]``: no order.
- sequence ``[Σ u·t_i + Σ o·g_i]``, unigrams plus order-keeping word n-grams
  ``g_i = t_i ⊗ ρ(t_{i+1}) (⊗ ρ²(t_{i+2}) ...)``: the j-th word of an n-gram is rotated j places, so
  ``a b`` and ``b a`` give unrelated n-grams and reversing the words lowers the similarity.
  The n-grams are relative, not absolute positions, so a phrase matches wherever it stands.
- positions ``[ρ^0(t_1) + ρ^1(t_2) + ...]``: absolute positions, for comparing whole sequences.
- character n-grams ``[Σ c·gram]`` over the n-grams of ``#token#``: a typo or another word form
  shares most n-grams (``refurbised``/``refurbished`` share 7 of their trigrams), so it still scores.
- text = one weighted majority of all three kinds of components (weights u, o, c from
  :class:`hdc.HDCParams`); this is the encoder of the topic and claim fields.

``[...]`` is :func:`hdc.bundle`. Every encoder returns ``None`` for an empty token list: an absent
field, which scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .errors import FieldError
from .ops import bundle, permute
from .tally import Tally
from .bulk import encode_texts, weight_scale
from .tokenrows import TokenCache, char_ngrams
from .params import HDCParams
from .vectors import Vector, _random_words, random_vector, unpack_bits

__all__ = [
    "TokenizerFn",
    "default_tokenizer",
    "char_ngrams",
    "encode_bag",
    "encode_sequence",
    "encode_positions",
    "encode_char_ngrams",
    "encode_text",
    "encode_role",
    "normalize_role",
    "UnitVectors",
    "QueryVectors",
    "UnitEncoder",
    "TEXT_FIELDS",
    "UNIT_FIELDS",
    "FIELD_ALIASES",
    "IGNORED_FIELDS",
]

#: Turns text into tokens. thinkingdb passes ``lexical.Tokenizer()`` (stemmed, stopwords removed).
TokenizerFn = Callable[[str], list[str]]

#: Fields encoded as text (topic, and claim with procedure merged into it).
TEXT_FIELDS = ("topic", "claim", "procedure")
#: Every field name :meth:`UnitEncoder.encode_unit` accepts and encodes.
UNIT_FIELDS = ("role", "topic", "claim", "procedure", "acts")
#: Other names accepted for a field (the knowledge-unit name of the acts field).
FIELD_ALIASES = {"utility_acts": "acts"}
#: Unit fields that are accepted and not encoded (BM25 covers them).
IGNORED_FIELDS = ("condition", "utility_note")


def default_tokenizer(text: str) -> list[str]:
    """The tokenizer used when none is given: lowercase, then split on whitespace.

    No stemming and no punctuation handling; pass ``lexical.Tokenizer()`` for those.

    >>> default_tokenizer("Damaged  Refurbished laptops")
    ['damaged', 'refurbished', 'laptops']
    """
    return text.lower().split()


@lru_cache(maxsize=1 << 15)
def _rotated_token(token: str, k: int, dim: int, seed: int) -> Vector:
    v = permute(_random_words(token.encode("utf-8"), dim, seed, b"tok"), k)
    v.flags.writeable = False
    return v


def _token(token: str, params: HDCParams) -> Vector:
    # params are validated already: skip random_vector's checks on this hot path
    return _random_words(token.encode("utf-8"), params.dim, params.seed, b"tok")


def _order_grams(tokens: Sequence[str], params: HDCParams) -> npt.NDArray[np.uint64]:
    """All order n-grams ``t_i ⊗ ρ(t_{i+1}) ⊗ ...`` (n = 2 .. word_ngram) as the rows of a matrix."""
    dim, seed, length = params.dim, params.seed, len(tokens)
    rows = [np.zeros((0, params.words), dtype=np.uint64)]
    rotated: dict[int, npt.NDArray[np.uint64]] = {}
    for n in range(2, min(params.word_ngram, length) + 1):
        grams = None
        for j in range(n):
            if j not in rotated:
                rotated[j] = np.stack([_rotated_token(t, j, dim, seed) if j else _token(t, params) for t in tokens])
            part = rotated[j][j : length - n + 1 + j]
            grams = part.copy() if grams is None else np.bitwise_xor(grams, part, out=grams)
        rows.append(grams)
    return np.concatenate(rows)


def _char_grams(tokens: Sequence[str], params: HDCParams) -> list[Vector]:
    if params.ngram == 0:
        return []
    return [
        _random_words(g.encode("utf-8"), params.dim, params.seed, b"gram")
        for t in tokens
        for g in char_ngrams(t, params.ngram)
    ]


@lru_cache(maxsize=8192)  # at most 4 KiB + 512 B each at 4096 bits: about 37 MiB
def _gram_votes(token: str, n: int, dim: int, seed: int) -> tuple[npt.NDArray[np.integer], int, npt.NDArray[np.uint64]]:
    """Per-bit count of ones over the character n-grams of ``token``, their number and word sum."""
    grams = np.stack([_random_words(g.encode("utf-8"), dim, seed, b"gram") for g in char_ngrams(token, n)])
    ones = unpack_bits(grams).sum(axis=0, dtype=np.uint8 if grams.shape[0] < 256 else np.uint16)
    word_sum = np.add.reduce(grams, axis=0, dtype=np.uint64)
    ones.flags.writeable = False
    word_sum.flags.writeable = False
    return ones, grams.shape[0], word_sum


def _text_tally(tally: Tally, tokens: Sequence[str], p: HDCParams, chars: bool = True) -> None:
    """Add the components of one text to ``tally``: words, order n-grams, character n-grams."""
    if not tokens:
        return
    tally.add_matrix(np.stack([_token(t, p) for t in tokens]), p.unigram_weight)
    if p.order_weight > 0:
        tally.add_matrix(_order_grams(tokens, p), p.order_weight)
    if chars and p.char_weight > 0 and p.ngram > 0:
        ones = np.zeros(p.dim, dtype=np.int32)
        word_sum = np.zeros(p.words, dtype=np.uint64)
        count = 0
        for t in tokens:
            t_ones, t_count, t_sum = _gram_votes(t, p.ngram, p.dim, p.seed)
            np.add(ones, t_ones, out=ones)
            np.add(word_sum, t_sum, out=word_sum)  # wraps modulo 2**64, as intended
            count += t_count
        tally.add_votes(ones, count, word_sum, p.char_weight)


def _bundle_parts(parts: Iterable[tuple[list[Vector], float]], params: HDCParams) -> Vector | None:
    vectors: list[Vector] = []
    weights: list[float] = []
    for vs, w in parts:
        if w > 0:
            vectors += vs
            weights += [w] * len(vs)
    if not vectors:
        return None
    return bundle(np.stack(vectors), weights, seed=params.seed)


def encode_bag(tokens: Sequence[str], params: HDCParams | None = None) -> Vector | None:
    """Bundle of the token vectors, order ignored.

    >>> from hdc.ops import similarity
    >>> p = HDCParams()
    >>> similarity(encode_bag(["a", "b"], p), encode_bag(["b", "a"], p))
    1.0
    >>> encode_bag([], p) is None
    True
    """
    p = params or HDCParams()
    return _bundle_parts([([_token(t, p) for t in tokens], 1.0)], p)


def encode_sequence(tokens: Sequence[str], params: HDCParams | None = None) -> Vector | None:
    """Unigrams plus order-keeping word n-grams (``t_i ⊗ ρ(t_{i+1})``); word order matters.

    >>> from hdc.ops import similarity
    >>> p = HDCParams()
    >>> s = encode_sequence("the cat sat on the mat".split(), p)
    >>> r = encode_sequence("mat the on sat cat the".split(), p)
    >>> similarity(s, s) > similarity(s, r)
    True
    """
    p = params or HDCParams()
    tally = Tally(p.dim)
    _text_tally(tally, tokens, p, chars=False)
    return tally.resolve(p.seed)


def encode_positions(tokens: Sequence[str], params: HDCParams | None = None) -> Vector | None:
    """Bundle of ``ρ^i(t_i)``: every token marked with its absolute position.

    >>> from hdc.ops import similarity
    >>> p = HDCParams()
    >>> round(similarity(encode_positions(["a", "b"], p), encode_positions(["b", "a"], p)), 1)
    0.5
    """
    p = params or HDCParams()
    return _bundle_parts([([_rotated_token(t, i, p.dim, p.seed) for i, t in enumerate(tokens)], 1.0)], p)


def encode_char_ngrams(tokens: Sequence[str], params: HDCParams | None = None) -> Vector | None:
    """Bundle of the character n-grams (``params.ngram`` long; ``None`` if 0) of every token.

    >>> from hdc.ops import similarity
    >>> p = HDCParams()
    >>> near = similarity(encode_char_ngrams(["refurbised"], p), encode_char_ngrams(["refurbished"], p))
    >>> far = similarity(encode_char_ngrams(["refurbised"], p), encode_char_ngrams(["quantum"], p))
    >>> near > 0.7 and abs(far - 0.5) < 0.05
    True
    """
    p = params or HDCParams()
    return _bundle_parts([(_char_grams(tokens, p), 1.0)], p)


def encode_text(tokens: Sequence[str], params: HDCParams | None = None) -> Vector | None:
    """The text encoder of topic and claim: unigrams, order n-grams and character n-grams together.

    >>> from hdc.ops import similarity
    >>> p = HDCParams()
    >>> unit = encode_text("damaged refurbished laptops qualify for replacement".split(), p)
    >>> query = encode_text("refurbised laptop replacment".split(), p)
    >>> other = encode_text("quantum chromodynamics lattice".split(), p)
    >>> similarity(unit, query) > 0.6 > similarity(unit, other)
    True
    """
    p = params or HDCParams()
    tally = Tally(p.dim)
    _text_tally(tally, tokens, p)
    return tally.resolve(p.seed)


def normalize_role(role: str) -> str:
    """Role names compare case-insensitively, with runs of whitespace folded.

    >>> normalize_role("  Procedure ")
    'procedure'
    """
    return " ".join(role.split()).casefold()


def encode_role(role: str, params: HDCParams | None = None) -> Vector:
    """The role's random vector: roles match exactly or not at all.

    >>> from hdc.ops import similarity
    >>> similarity(encode_role("Fact"), encode_role("fact"))
    1.0
    """
    p = params or HDCParams()
    return random_vector(normalize_role(role), p.dim, seed=p.seed, namespace="role")


@dataclass(frozen=True, eq=False)
class UnitVectors:
    """The field vectors of one unit (``None``: field absent). ``role`` is the normalized name."""

    role: str | None
    topic: Vector | None
    claim: Vector | None
    acts: Vector | None


@dataclass(frozen=True, eq=False)
class QueryVectors:
    """A query encoded for every field: ``text`` against topic and claim, ``bag`` against acts."""

    text: Vector | None
    bag: Vector | None
    role: Vector | None


def _as_items(name: str, value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise FieldError(f"field {name!r} must be a string or a list of strings, got {type(value).__name__}")


class UnitEncoder:
    """Encodes units and queries with one tokenizer and one set of params.

    Field rules: ``topic`` → text vector; ``claim`` and ``procedure`` → one text vector (the claim
    field of the score); ``acts`` (or ``utility_acts``) → bag of the tokens of every act; ``role`` →
    role vector. A list of strings is encoded item by item (no word n-gram crosses two items).
    ``condition`` and ``utility_note`` are accepted and ignored; any other name raises
    :class:`hdc.FieldError`.

    >>> enc = UnitEncoder()
    >>> u = enc.encode_unit({"topic": "Laptop returns", "role": "Policy", "acts": ["refund"]})
    >>> u.role, u.claim is None
    ('policy', True)
    """

    def __init__(self, params: HDCParams | None = None, tokenizer: TokenizerFn | None = None) -> None:
        self.params = params or HDCParams()
        self.tokenizer: TokenizerFn = tokenizer or default_tokenizer

    def _tokens(self, text: str) -> list[str]:
        return [t for t in self.tokenizer(text) if t]

    def _text(self, items: list[str]) -> Vector | None:
        tally = Tally(self.params.dim)
        for item in items:
            _text_tally(tally, self._tokens(item), self.params)
        return tally.resolve(self.params.seed)

    def _parse(self, fields: Mapping[str, object]) -> tuple[str | None, dict[str, list[str]]]:
        """Check a unit's fields: its normalized role and the items of every encoded field."""
        items: dict[str, list[str]] = {}
        role = None
        for raw_name, value in fields.items():
            name = FIELD_ALIASES.get(raw_name, raw_name)
            if name in IGNORED_FIELDS or value is None:
                continue
            if name not in UNIT_FIELDS:
                allowed = ", ".join(UNIT_FIELDS + tuple(FIELD_ALIASES) + IGNORED_FIELDS)
                raise FieldError(f"unknown unit field {raw_name!r}; fields are: {allowed}")
            if name == "role":
                if not isinstance(value, str):
                    raise FieldError(f"field 'role' must be a string, got {type(value).__name__}")
                role = normalize_role(value) or None
                continue
            items.setdefault(name, []).extend(_as_items(raw_name, value))
        return role, items

    def encode_unit(self, fields: Mapping[str, object]) -> UnitVectors:
        """Encode a unit's fields (see the class docstring for the rules)."""
        role, items = self._parse(fields)
        acts_tokens = [t for item in items.get("acts", []) for t in self._tokens(item)]
        return UnitVectors(
            role=role,
            topic=self._text(items.get("topic", [])),
            claim=self._text(items.get("claim", []) + items.get("procedure", [])),
            acts=encode_bag(acts_tokens, self.params),
        )

    def encode_batch(
        self, units: Sequence[Mapping[str, object]], caches: dict[str, TokenCache] | None = None
    ) -> tuple[list[str | None], dict[str, tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]]]:
        """Encode many units at once: their roles, and per field (topic, claim, acts) an
        ``(n, words)`` matrix with a presence mask (absent field: ``False`` and a zero row).

        The vectors are bit for bit those of :meth:`encode_unit` (texts are encoded together by
        :func:`hdc.bulk.encode_texts`; weights with no exact binary scale are encoded one by one).
        Every unit is checked before any is encoded: a bad field raises :class:`hdc.FieldError`.
        ``caches``: pass the same (initially empty) dict to every batch of one build to keep the
        rows of recurring tokens between batches (:class:`hdc.tokenrows.TokenCache`, at most ~52 MiB).

        >>> enc = UnitEncoder()
        >>> roles, got = enc.encode_batch([{"topic": "a b", "role": "Fact"}, {"acts": ["c"]}])
        >>> roles, got["topic"][1].tolist(), got["acts"][1].tolist()
        (['fact', None], [True, False], [False, True])
        >>> bool((got["topic"][0][0] == enc.encode_unit({"topic": "a b"}).topic).all())
        True
        """
        parsed = [self._parse(f) for f in units]
        p = self.params
        roles = [role for role, _ in parsed]
        weights = (p.unigram_weight, p.order_weight, p.char_weight)
        if weight_scale(weights) is None:
            out = {f: (np.zeros((len(units), p.words), dtype=np.uint64), np.zeros(len(units), dtype=bool)) for f in ("topic", "claim", "acts")}
            for i, f in enumerate(units):
                u = self.encode_unit(f)
                for name in ("topic", "claim", "acts"):
                    v = getattr(u, name)
                    if v is not None:
                        out[name][0][i] = v
                        out[name][1][i] = True
            return roles, out
        tokens = self._tokens
        topic = [[tokens(x) for x in items.get("topic", [])] for _, items in parsed]
        claim = [[tokens(x) for x in items.get("claim", []) + items.get("procedure", [])] for _, items in parsed]
        acts = [[[t for x in items.get("acts", []) for t in tokens(x)]] for _, items in parsed]
        text_cache = bag_cache = None
        if caches is not None:
            if "text" not in caches:
                caches["text"], caches["bag"] = TokenCache(p), TokenCache(p, budget=4 << 20)
            text_cache, bag_cache = caches["text"], caches["bag"]
        texts, present = encode_texts(topic + claim, p, weights, chars=True, order=True, cache=text_cache)
        n = len(units)
        bags, has_bag = encode_texts(acts, p, (1.0, 0.0, 0.0), chars=False, order=False, cache=bag_cache)
        return roles, {"topic": (texts[:n], present[:n]), "claim": (texts[n:], present[n:]), "acts": (bags, has_bag)}

    def encode_query(self, text: str, role: str | None = None) -> QueryVectors:
        """Encode free text: text vector for topic and claim, bag for acts, role only if named.

        >>> q = UnitEncoder().encode_query("how do I return a laptop")
        >>> q.role is None, q.text is not None
        (True, True)
        """
        tokens = self._tokens(text)
        return QueryVectors(
            text=encode_text(tokens, self.params),
            bag=encode_bag(tokens, self.params),
            role=encode_role(role, self.params) if role and normalize_role(role) else None,
        )

