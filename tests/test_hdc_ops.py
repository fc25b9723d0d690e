"""hdc operations: bind, bundle, permute, similarity and the batch Hamming scan, against oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hdc.ops as ops
from hdc import (
    DimensionError,
    batch_hamming,
    batch_similarity,
    bind,
    bundle,
    hamming,
    pack_bits,
    permute,
    popcount,
    random_matrix,
    random_vector,
    similarity,
    tie_break_vector,
    unbind,
    unpack_bits,
)
from hdc.ops import popcount_table


def vec(bits: str) -> np.ndarray:
    """A vector from a bit string written bit 0 first, padded with zeros to a multiple of 64."""
    padded = bits + "0" * (-len(bits) % 64)
    return pack_bits([int(b) for b in padded])


def bits_of(v: np.ndarray, n: int) -> str:
    return "".join(str(b) for b in unpack_bits(v)[:n])


# -- bind ----------------------------------------------------------------------------------------


def test_bind_is_xor_by_hand():
    assert bits_of(bind(vec("1100"), vec("1010")), 4) == "0110"


def test_unbinding_recovers_the_bound_value():
    role, filler, other = random_vector("colour"), random_vector("red"), random_vector("size")
    pair = bind(role, filler)
    assert (unbind(pair, role) == filler).all()
    assert similarity(pair, filler) < 0.55 and similarity(pair, role) < 0.55
    # a record of two pairs: unbinding gives a noisy copy of the right filler
    record = bundle([bind(role, filler), bind(other, random_vector("large")), bind(random_vector("w"), random_vector("2kg"))])
    noisy = unbind(record, role)
    assert similarity(noisy, filler) > 0.7
    assert similarity(noisy, random_vector("large")) < 0.55


def test_bind_refuses_different_dimensions():
    with pytest.raises(DimensionError, match="differ in dimension"):
        bind(random_vector("a", 64), random_vector("b", 128))


# -- bundle --------------------------------------------------------------------------------------


def test_bundle_majority_by_hand():
    # columns: 3 ones, 2 ones, 1 one, 0 ones
    b = bundle([vec("1110"), vec("1100"), vec("1000")])
    assert bits_of(b, 4) == "1100"


def test_bundle_even_count_takes_tied_bits_from_the_tie_break_vector():
    tie = vec("0101")
    # bit 0: 2 of 2 -> 1; bits 1 and 2: 1 of 2 -> tie-break (1, 0); bit 3: 0 of 2 -> 0
    b = bundle([vec("1100"), vec("1010")], tie_break=tie)
    assert bits_of(b, 4) == "1100"
    b = bundle([vec("1100"), vec("1010")], tie_break=vec("0011"))
    assert bits_of(b, 4) == "1010"


def test_bundle_weights_by_hand():
    # weights 2,1,1: bit 0 -> 2 of 4 (tie), bit 1 -> 2+1 of 4, bit 2 -> 1 of 4
    b = bundle([vec("110"), vec("011"), vec("010")], [2, 1, 1], tie_break=vec("111"))
    assert bits_of(b, 3) == "110"
    b = bundle([vec("110"), vec("011"), vec("010")], [2, 1, 1], tie_break=vec("000"))
    assert bits_of(b, 3) == "010"


def test_default_tie_break_is_deterministic_and_order_free():
    a, b = random_vector("a"), random_vector("b")
    assert (bundle([a, b]) == bundle([b, a])).all()
    assert (bundle([a, b]) == bundle([a, b])).all()
    assert (tie_break_vector(np.stack([a, b])) != tie_break_vector(np.stack([a, random_vector("c")]))).any()


def test_bundle_of_three_is_closer_to_each_member_than_to_a_non_member():
    for i in range(20):
        members = [random_vector(f"m{i}-{j}") for j in range(3)]
        b = bundle(members)
        outsider = random_vector(f"outsider-{i}")
        # expected similarity to a member is 0.75 (sd 0.007); to a non-member 0.5
        assert all(similarity(b, m) > 0.6 for m in members)
        assert similarity(b, outsider) < 0.56
        assert min(similarity(b, m) for m in members) > similarity(b, outsider)


def test_unrelated_two_member_bundles_are_not_biased_by_the_tie_break():
    # A tie-break vector shared by all bundles would make these agree on 0.625 of their bits.
    sims = [
        similarity(bundle([random_vector(f"a{i}"), random_vector(f"b{i}")]), bundle([random_vector(f"c{i}"), random_vector(f"d{i}")]))
        for i in range(300)
    ]
    assert abs(float(np.mean(sims)) - 0.5) < 0.01


def test_bundle_refuses_empty_and_bad_weights():
    with pytest.raises(DimensionError):
        bundle([])
    with pytest.raises(ValueError, match="weights"):
        bundle([random_vector("a")], [float("nan")])
    with pytest.raises(ValueError, match="weights"):
        bundle([random_vector("a"), random_vector("b")], [1.0])


# -- permute -------------------------------------------------------------------------------------


def test_permute_by_hand_dim_64():
    assert bits_of(permute(vec("1101"), 1), 5) == "01101"
    assert bits_of(permute(vec("1" + "0" * 62 + "1"), 1), 64) == "11" + "0" * 62


def test_permute_by_hand_crosses_words_dim_128():
    v = vec("0" * 63 + "1" + "0" * 64)  # bit 63
    assert np.flatnonzero(unpack_bits(permute(v, 1))).tolist() == [64]
    assert np.flatnonzero(unpack_bits(permute(v, 65))).tolist() == [0]
    assert np.flatnonzero(unpack_bits(permute(v, -64))).tolist() == [127]


@given(st.sampled_from([64, 128, 256, 4096]), st.integers(-10_000, 10_000), st.integers(0, 1000))
def test_permute_matches_rolling_the_bits(dim, k, sym):
    v = random_vector(str(sym), dim)
    assert (unpack_bits(permute(v, k)) == np.roll(unpack_bits(v), k)).all()
    assert (permute(permute(v, k), -k) == v).all()


def test_permuted_vectors_are_unrelated_and_order_matters():
    a, b = random_vector("a"), random_vector("b")
    assert abs(similarity(a, permute(a, 1)) - 0.5) < 0.05
    assert similarity(bind(a, permute(b)), bind(b, permute(a))) < 0.55


# -- similarity and the batch scan ---------------------------------------------------------------


def test_hamming_and_similarity_by_hand():
    assert hamming(vec("1100"), vec("1010")) == 2
    assert similarity(vec("1100"), vec("1010")) == 1 - 2 / 64
    assert similarity(random_vector("a"), random_vector("a")) == 1.0


def test_popcount_and_table_fallback_agree():
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**63, size=1000, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=1000, dtype=np.uint64)
    words[:3] = [0, 1, 2**64 - 1]
    oracle = [bin(int(w)).count("1") for w in words]
    assert popcount(words).tolist() == oracle
    assert popcount_table(words).tolist() == oracle


def naive_hamming(query: np.ndarray, matrix: np.ndarray) -> list[int]:
    return [sum(bin(int(x) ^ int(q)).count("1") for x, q in zip(row, query)) for row in matrix]


@pytest.mark.parametrize("threads", [False, True])
def test_batch_hamming_matches_a_naive_oracle(monkeypatch, threads):
    if threads:  # force the threaded, multi-block path on a small matrix
        monkeypatch.setattr(ops, "_THREAD_MIN_WORDS", 1)
        monkeypatch.setattr(ops, "_BLOCK_BYTES", 3 * 16 * 8)
    m = random_matrix([f"row{i}" for i in range(101)], 1024)
    q = random_vector("query", 1024)
    got = batch_hamming(q, m, workers=2 if threads else 1)
    assert got.tolist() == naive_hamming(q, m)
    rows = [100, 0, 57, 57, 3]
    assert batch_hamming(q, m, rows=rows, workers=2 if threads else 1).tolist() == [naive_hamming(q, m)[r] for r in rows]


def test_batch_hamming_of_very_wide_vectors_uses_wide_sums():
    m = random_matrix(["a", "b"], 65536)  # row sums may exceed uint16
    q = m[0] ^ np.uint64(2**64 - 1)  # the complement: all 65,536 bits differ from row 0
    assert batch_hamming(q, m).tolist() == [65536, naive_hamming(q, m)[1]]


def test_batch_similarity_matches_similarity():
    m = random_matrix(["a", "b", "c"])
    sims = batch_similarity(random_vector("b"), m)
    assert sims.tolist() == [similarity(random_vector("b"), row) for row in m]
    assert sims[1] == 1.0


def test_batch_hamming_checks_shapes_and_rows():
    m = random_matrix(["a", "b"], 128)
    with pytest.raises(DimensionError):
        batch_hamming(random_vector("q", 64), m)
    with pytest.raises(IndexError):
        batch_hamming(random_vector("q", 128), m, rows=[2])
    assert batch_hamming(random_vector("q", 128), m, rows=[]).tolist() == []
