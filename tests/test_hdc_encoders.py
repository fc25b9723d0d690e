"""hdc encoders: statistics of text vectors, word order, character n-grams, unit field rules."""

from __future__ import annotations

import random
import string

import numpy as np
import pytest

from hdc import (
    FieldError,
    HDCParams,
    UnitEncoder,
    bundle,
    char_ngrams,
    default_tokenizer,
    encode_bag,
    encode_char_ngrams,
    encode_positions,
    encode_role,
    encode_sequence,
    encode_text,
    permute,
    random_vector,
    similarity,
)

P = HDCParams()


def random_words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9))) for _ in range(n)]


def test_unrelated_two_token_texts_average_half_similarity():
    # 500 pairs; one pair's sd is about 0.008, so the mean's is about 0.0004: 0.02 is a wide margin,
    # and the 0.625 of a biased generator or a shared tie-break vector is far outside it.
    rng = random.Random(20240611)
    sims = [similarity(encode_text(random_words(rng, 2), P), encode_text(random_words(rng, 2), P)) for _ in range(500)]
    assert abs(float(np.mean(sims)) - 0.5) < 0.02
    bags = [similarity(encode_bag(random_words(rng, 2), P), encode_bag(random_words(rng, 2), P)) for _ in range(500)]
    assert abs(float(np.mean(bags)) - 0.5) < 0.02


def test_reversing_word_order_lowers_similarity():
    words = "damaged refurbished laptops qualify for replacement".split()
    for encode in (encode_text, encode_sequence, encode_positions):
        same = encode(list(words), P)
        assert similarity(encode(words, P), same) == 1.0
        assert similarity(encode(words, P), encode(words[::-1], P)) < 0.95, encode.__name__
    # the bag ignores order
    assert similarity(encode_bag(words, P), encode_bag(words[::-1], P)) == 1.0


def test_sequence_is_unigrams_plus_order_bigrams_by_hand():
    # the documented formula, rebuilt from the primitives
    a, b, c = (random_vector(t, namespace="tok") for t in "abc")
    expected = bundle(
        [a, b, c, a ^ permute(b, 1), b ^ permute(c, 1)],
        [P.unigram_weight] * 3 + [P.order_weight] * 2,
        seed=P.seed,
    )
    assert (encode_sequence(["a", "b", "c"], P) == expected).all()


@pytest.mark.parametrize(
    "params",
    [P, HDCParams(dim=256, word_ngram=3, ngram=4, unigram_weight=1.0, order_weight=3.0, char_weight=2.0), HDCParams(dim=128, ngram=0)],
)
@pytest.mark.parametrize("text", ["a", "the cat sat on the mat", "refurbished laptops refurbished laptops", "x y"])
def test_text_vector_is_the_bundle_of_its_components(params, text):
    # oracle: the documented components, bundled by the generic bundle()
    tokens = text.split()
    tok = {t: random_vector(t, params.dim, seed=params.seed, namespace="tok") for t in tokens}
    vectors, weights = [], []
    for t in tokens:
        vectors.append(tok[t])
        weights.append(params.unigram_weight)
    for n in range(2, params.word_ngram + 1):
        for i in range(len(tokens) - n + 1):
            g = tok[tokens[i]]
            for j in range(1, n):
                g = g ^ permute(tok[tokens[i + j]], j)
            vectors.append(g)
            weights.append(params.order_weight)
    if params.ngram:
        for t in tokens:
            for gram in char_ngrams(t, params.ngram):
                vectors.append(random_vector(gram, params.dim, seed=params.seed, namespace="gram"))
                weights.append(params.char_weight)
    assert (encode_text(tokens, params) == bundle(vectors, weights, seed=params.seed)).all()


def test_a_phrase_matches_wherever_it_stands():
    phrase = ["refurbished", "laptops"]
    early = encode_sequence(phrase + ["are", "cheap"], P)
    late = encode_sequence(["we", "sell"] + phrase, P)
    unrelated = encode_sequence(["we", "sell", "phones", "cheap"], P)
    assert similarity(early, late) > similarity(early, unrelated) + 0.05


def test_char_ngrams_by_hand():
    assert char_ngrams("cat", 3) == ["#ca", "cat", "at#"]
    assert char_ngrams("ab", 2) == ["#a", "ab", "b#"]
    assert char_ngrams("", 3) == ["##"]


@pytest.mark.parametrize(
    ("typo", "word"),
    [("refurbised", "refurbished"), ("replacment", "replacement"), ("laptp", "laptop"), ("colour", "color")],
)
def test_word_forms_and_typos_still_overlap(typo, word):
    near = similarity(encode_char_ngrams([typo], P), encode_char_ngrams([word], P))
    far = similarity(encode_char_ngrams([typo], P), encode_char_ngrams(["quantum"], P))
    assert near > 0.6 and abs(far - 0.5) < 0.04
    # the same holds through the full text encoder
    assert similarity(encode_text([typo], P), encode_text([word], P)) > 0.55


def test_empty_input_is_an_absent_field():
    for encode in (encode_bag, encode_sequence, encode_positions, encode_char_ngrams, encode_text):
        assert encode([], P) is None
    assert encode_char_ngrams(["abc"], HDCParams(ngram=0)) is None


def test_params_change_the_vectors():
    words = ["some", "words"]
    assert similarity(encode_text(words, P), encode_text(words, HDCParams(seed=1))) < 0.6
    assert encode_text(words, HDCParams(dim=1024)).shape == (16,)


def test_default_tokenizer_lowercases_and_splits():
    assert default_tokenizer("  Hello\tWORLD \n") == ["hello", "world"]


def test_roles_compare_case_insensitively():
    assert similarity(encode_role(" Procedure", P), encode_role("procedure", P)) == 1.0
    assert similarity(encode_role("fact", P), encode_role("procedure", P)) < 0.55


# -- unit encoder ---------------------------------------------------------------------------------


def test_unit_fields_follow_the_documented_rules():
    enc = UnitEncoder(P)
    u = enc.encode_unit(
        {
            "role": "Policy",
            "topic": "Laptop returns",
            "claim": "Damaged laptops qualify",
            "procedure": ["Open a ticket", "Ship it back"],
            "utility_acts": ["refund", "replace"],
            "condition": "within 30 days",
            "utility_note": "ignored",
        }
    )
    assert u.role == "policy"
    assert (u.topic == encode_text(["laptop", "returns"], P)).all()
    assert (u.acts == encode_bag(["refund", "replace"], P)).all()
    # claim and procedure share the claim slot; procedure steps are separate items
    assert u.claim is not None and similarity(u.claim, encode_text("damaged laptops qualify".split(), P)) > 0.6
    assert enc.encode_unit({"topic": "x"}).claim is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"topc": "typo in the name"}, "unknown unit field 'topc'"),
        ({"topic": 3}, "field 'topic' must be a string or a list of strings"),
        ({"acts": ["ok", 4]}, "field 'acts' must be a string or a list of strings"),
        ({"role": ["a", "b"]}, "field 'role' must be a string"),
    ],
)
def test_bad_unit_fields_are_refused(fields, message):
    with pytest.raises(FieldError, match=message):
        UnitEncoder(P).encode_unit(fields)


def test_query_encoding_uses_the_given_tokenizer():
    seen: list[str] = []

    def tok(text: str) -> list[str]:
        seen.append(text)
        return text.upper().split()

    q = UnitEncoder(P, tok).encode_query("a b", role="Fact")
    assert seen == ["a b"]
    assert (q.text == encode_text(["A", "B"], P)).all()
    assert (q.bag == encode_bag(["A", "B"], P)).all()
    assert q.role is not None and (q.role == encode_role("fact", P)).all()
    assert UnitEncoder(P).encode_query("a b").role is None
