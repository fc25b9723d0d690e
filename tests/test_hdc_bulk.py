"""hdc: the stored vectors are pinned, and bulk building gives exactly the vectors of one-by-one adds.

Saved indexes are compared across processes and versions, so the encoding of a unit must never drift:
a few encodings are pinned to digests, and to an oracle that rebuilds them from the primitives
(``random_vector``, ``permute``, the generic ``bundle``), independently of the encoders' fast paths.
"""

from __future__ import annotations

import hashlib
import random
import string

import numpy as np
import pytest

from hdc import HDCIndex, HDCParams, bundle, char_ngrams, default_tokenizer, normalize_role, permute, random_vector

PARAMS = [
    HDCParams(),
    HDCParams(dim=256, word_ngram=3, ngram=4, unigram_weight=1.0, order_weight=3.0, char_weight=2.0),
]

UNITS = {
    "u1": {
        "role": "Policy",
        "topic": "Refurbished laptop returns",
        "claim": "Damaged refurbished laptops qualify for replacement within 30 days.",
        "utility_acts": ["refund", "replace laptop"],
    },
    "u2": {
        "topic": "Shipping",
        "claim": ["Orders ship within two business days", "Express ships next day"],
        "procedure": ["pack the box", "print the label"],
    },
    "u3": {"topic": "a", "claim": "x y", "acts": "z"},
    "u4": {"role": "fact", "topic": "nginx depends on openssl openssl"},
}

# blake2b-96 of the little-endian bytes of (topic, claim, acts), computed with the per-unit encoder
# before the bulk path existed (default tokenizer: lowercase + whitespace split).
PINNED = {
    4096: {
        "u1": ("ad3bb2e109bcc660c781151b", "67bafc15d7e853d53200667b", "01c3d70a12bdfd85f3f5fdf2"),
        "u2": ("a9d0bc7e0d110003468078a7", "c5105104fbd23e91952fe9cd", None),
        "u3": ("d963cd7fcb8f775f05bf2b73", "5a9c6628367b03c43eed7fb8", "be9452055af5febb2839d3e4"),
        "u4": ("ebc9bee3601ec3759d5b5fcd", None, None),
    },
    256: {
        "u1": ("40eb550e178b1a1cddcf417a", "9d4e4d98cbe46085c78fec8e", "206d85c750317b409da3494c"),
        "u2": ("15e7247c766b54d6e74f2227", "a6a9ccdf4c590e620604f22d", None),
        "u3": ("b753fa64dd49cbf7eb0dc3f2", "ea8d633256ad83cd4735aa8f", "eccad4d0a183fc8d0929a7f1"),
        "u4": ("91ffaa6806b02a680e36885a", None, None),
    },
}


def digest(v: np.ndarray | None) -> str | None:
    return None if v is None else hashlib.blake2b(v.astype("<u8").tobytes(), digest_size=12).hexdigest()


def items(value: object) -> list[str]:
    return [value] if isinstance(value, str) else list(value)  # type: ignore[arg-type]


def oracle_text(texts: list[str], p: HDCParams) -> np.ndarray | None:
    """The documented components of a text field, bundled by the generic ``bundle``."""
    tok = lambda t: random_vector(t, p.dim, seed=p.seed, namespace="tok")
    groups: tuple[list, list, list] = ([], [], [])  # unigrams, word n-grams, character n-grams
    for text in texts:
        tokens = default_tokenizer(text)
        groups[0].extend(tok(t) for t in tokens)
        for n in range(2, p.word_ngram + 1):
            for i in range(len(tokens) - n + 1):
                g = tok(tokens[i])
                for j in range(1, n):
                    g = g ^ permute(tok(tokens[i + j]), j)
                groups[1].append(g)
        if p.ngram:
            groups[2].extend(
                random_vector(g, p.dim, seed=p.seed, namespace="gram") for t in tokens for g in char_ngrams(t, p.ngram)
            )
    vectors, weights = [], []
    for group, w in zip(groups, (p.unigram_weight, p.order_weight, p.char_weight)):
        if w > 0:
            vectors += group
            weights += [w] * len(group)
    return bundle(vectors, weights, seed=p.seed) if vectors else None


def oracle_unit(fields: dict, p: HDCParams) -> tuple[str | None, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    acts = [t for a in items(fields.get("acts", fields.get("utility_acts", []))) for t in default_tokenizer(a)]
    bag = bundle([random_vector(t, p.dim, seed=p.seed, namespace="tok") for t in acts], seed=p.seed) if acts else None
    return (
        normalize_role(fields["role"]) if "role" in fields else None,
        oracle_text(items(fields.get("topic", [])), p),
        oracle_text(items(fields.get("claim", [])) + items(fields.get("procedure", [])), p),
        bag,
    )


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: f"dim{p.dim}")
@pytest.mark.parametrize("bulk", [False, True], ids=["add", "add_many"])
def test_unit_encodings_are_pinned_and_equal_the_oracle(params, bulk):
    idx = HDCIndex(params)
    if bulk:
        idx.add_many(UNITS.items())
    else:
        for uid, fields in UNITS.items():
            idx.add(uid, fields)
    for uid, fields in UNITS.items():
        got = idx.vectors(uid)
        assert (digest(got.topic), digest(got.claim), digest(got.acts)) == PINNED[params.dim][uid], uid
        role, topic, claim, acts = oracle_unit(fields, params)
        assert got.role == role
        for name, want, have in (("topic", topic, got.topic), ("claim", claim, got.claim), ("acts", acts, got.acts)):
            assert (want is None) == (have is None), (uid, name)
            if want is not None:
                assert (want == have).all(), (uid, name)


def same_vectors(one: HDCIndex, many: HDCIndex) -> None:
    assert sorted(one.ids()) == sorted(many.ids())
    for uid in one.ids():
        a, b = one.vectors(uid), many.vectors(uid)
        assert a.role == b.role, uid
        for f in ("topic", "claim", "acts"):
            va, vb = getattr(a, f), getattr(b, f)
            assert (va is None) == (vb is None) and (va is None or (va == vb).all()), (uid, f)


def random_unit(rng: random.Random, vocab: list[str]) -> dict:
    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(rng.randint(lo, hi)))

    unit: dict = {}
    if rng.random() < 0.8:
        unit["topic"] = text(0, 6)
    if rng.random() < 0.7:
        unit["claim"] = text(0, 40) if rng.random() < 0.7 else [text(0, 8) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:
        unit["procedure"] = [text(1, 6) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.4:
        unit["acts" if rng.random() < 0.5 else "utility_acts"] = [text(1, 2) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.6:
        unit["role"] = rng.choice(["fact", "Policy", "procedure", "  ", ""])
    if rng.random() < 0.1:
        unit["condition"] = "ignored"
    if rng.random() < 0.05:
        unit["topic"] = None
    return unit


def random_vocab(rng: random.Random, n: int) -> list[str]:
    words = ["".join(rng.choice(string.ascii_lowercase[:8]) for _ in range(rng.randint(1, 12))) for _ in range(n)]
    return words + ["é", "naïve", "日本語", "a-b", "x"]


@pytest.mark.parametrize(
    "params",
    [
        *PARAMS,
        HDCParams(dim=128, ngram=0),
        HDCParams(dim=192, word_ngram=1, ngram=2),
        HDCParams(dim=128, unigram_weight=0.0, order_weight=1.0, char_weight=0.0),
        HDCParams(dim=128, unigram_weight=0.3, order_weight=0.7, char_weight=0.1),  # not exact in binary
        HDCParams(dim=128, unigram_weight=2.5, order_weight=0.0, char_weight=0.75),
    ],
    ids=lambda p: f"dim{p.dim}-n{p.ngram}-w{p.word_ngram}-{p.unigram_weight}-{p.order_weight}-{p.char_weight}",
)
def test_add_many_gives_the_vectors_of_one_by_one_adds(params):
    rng = random.Random(params.dim * 7 + params.ngram)
    vocab = random_vocab(rng, 60)
    units = [(f"u{rng.randint(0, 150)}", random_unit(rng, vocab)) for _ in range(300)]  # repeated ids: last wins
    one = HDCIndex(params)
    for uid, fields in units:
        one.add(uid, fields)
    many = HDCIndex(params)
    many.add(units[5][0], {"topic": "replaced by the batch"})
    many.add("keep", {"topic": "kept as it is"})
    one.add("keep", {"topic": "kept as it is"})
    many.add_many(iter(units), batch_size=37)
    same_vectors(one, many)
    query = " ".join(vocab[:3])
    assert one.search(query, k=20) == many.search(query, k=20)


def test_add_many_with_a_real_tokenizer_and_long_texts():
    lexical = pytest.importorskip("lexical")
    tok = lexical.Tokenizer()
    rng = random.Random(5)
    vocab = random_vocab(rng, 400)
    units = [(f"u{i}", random_unit(rng, vocab)) for i in range(200)]
    units.append(("long", {"claim": " ".join(rng.choice(vocab) for _ in range(700)), "acts": ["a"] * 300}))
    # tokens with hundreds of character n-grams (votes above a byte), among short ones
    units += [(f"huge{i}", {"topic": f"short {'ab' * 150}{i} words", "claim": "x" * (260 + i)}) for i in range(3)]
    one, many = HDCIndex(tokenizer=tok), HDCIndex(tokenizer=tok)
    for uid, fields in units:
        one.add(uid, fields)
    assert many.add_many(units) == len(units)
    same_vectors(one, many)


def test_a_bad_unit_in_add_many_leaves_the_index_unchanged():
    from hdc import FieldError

    idx = HDCIndex(HDCParams(dim=128))
    idx.add("a", {"topic": "laptop returns"})
    before = idx.vectors("a").topic.copy()
    with pytest.raises(FieldError):
        idx.add_many([("a", {"topic": "changed"}), ("b", {"topic": "new"}), ("c", {"colour": "red"})])
    assert idx.ids() == ["a"] and (idx.vectors("a").topic == before).all()
    with pytest.raises(FieldError):
        idx.add_many([("d", {"topic": "x"}), (7, {"topic": "y"})])  # type: ignore[list-item]
    assert idx.ids() == ["a"]


def index_bytes(idx: HDCIndex) -> bytes:
    import io
    buf = io.BytesIO()
    idx.save(buf)
    return buf.getvalue()


def test_add_many_when_a_batch_has_more_frequent_tokens_than_the_cache_holds():
    # default settings: the acts cache holds ~815 rows of 4096 bits; 1,024 units with 4 acts each from
    # 1,500 words repeat far more tokens than that in the very first batch
    rng = random.Random(0)
    pool = [f"act{i}" for i in range(1500)]
    units = [(f"u{i}", {"topic": "t", "utility_acts": rng.sample(pool, 4)}) for i in range(1024)]
    one, many = HDCIndex(), HDCIndex()
    for uid, fields in units:
        one.add(uid, fields)
    assert many.add_many(units) == 1024
    same_vectors(one, many)


def test_add_many_with_a_bounded_token_count(monkeypatch):
    from hdc.tokenrows import TokenCache

    monkeypatch.setattr(TokenCache, "count_limit", 50)   # forget tokens met once, over and over
    rng = random.Random(11)
    vocab = random_vocab(rng, 400)
    units = [(f"u{i}", random_unit(rng, vocab)) for i in range(300)]
    one, many = HDCIndex(HDCParams(dim=512)), HDCIndex(HDCParams(dim=512))
    for uid, fields in units:
        one.add(uid, fields)
    many.add_many(units, batch_size=16)
    same_vectors(one, many)


def test_add_many_keeps_first_slots_and_saves_the_bytes_of_one_by_one_adds():
    # (without roles: one-by-one add registers the role of fields that a later add replaces; a batch never sees them)
    units = [("a", {"topic": "one"}), ("b", {"topic": "two"}), ("a", {"topic": "three"})]
    one = HDCIndex(HDCParams(dim=256))
    for uid, fields in units:
        one.add(uid, fields)
    for batch_size in (1, 2, 3):
        many = HDCIndex(HDCParams(dim=256))
        many.add_many(units, batch_size=batch_size)
        assert list(many) == list(one) == ["a", "b"]
        assert index_bytes(many) == index_bytes(one)


def test_a_failed_add_many_forgets_the_roles_it_met():
    from hdc import FieldError

    idx = HDCIndex(HDCParams(dim=128))
    idx.add("a", {"topic": "laptop returns", "role": "policy"})
    before = index_bytes(idx)
    with pytest.raises(FieldError):
        idx.add_many([("b", {"topic": "new", "role": "brandnew"}), ("c", {"colour": "red"})], batch_size=1)
    assert index_bytes(idx) == before
