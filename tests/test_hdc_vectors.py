"""hdc vectors and params: keyed-BLAKE2b random vectors, packing, validation."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hdc import (
    DimensionError,
    HDCError,
    HDCParams,
    ParamsError,
    pack_bits,
    random_matrix,
    random_vector,
    similarity,
    unpack_bits,
    zeros,
)

REPO = Path(__file__).resolve().parent.parent


def blake2b_oracle_bits(symbol: str, dim: int, seed: int, namespace: str = "") -> np.ndarray:
    """The documented expansion, written out with hashlib alone: bit i = bit i%8 of byte i//8."""
    stream = b"".join(
        hashlib.blake2b(
            symbol.encode(),
            digest_size=64,
            key=seed.to_bytes(8, "little"),
            salt=j.to_bytes(16, "little"),
            person=namespace.encode(),
        ).digest()
        for j in range(math.ceil(dim / 512))
    )[: dim // 8]
    return np.array([(byte >> k) & 1 for byte in stream for k in range(8)], dtype=np.uint8)


@pytest.mark.parametrize(
    ("symbol", "dim", "seed", "namespace"),
    [("openssl", 4096, HDCParams().seed, ""), ("x", 64, 0, ""), ("Zürich", 640, 12345, "tok"), ("", 128, 2**64 - 1, "role")],
)
def test_random_vector_follows_the_documented_blake2b_expansion(symbol, dim, seed, namespace):
    v = random_vector(symbol, dim, seed=seed, namespace=namespace)
    assert v.dtype == np.uint64 and v.shape == (dim // 64,)
    assert unpack_bits(v).tolist() == blake2b_oracle_bits(symbol, dim, seed, namespace).tolist()


def test_same_symbol_same_vector_in_another_process():
    code = "import hdc, sys; sys.stdout.write(hdc.random_vector('openssl').astype('<u8').tobytes().hex())"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout == random_vector("openssl").astype("<u8").tobytes().hex()


def test_vectors_depend_on_symbol_seed_and_namespace_only():
    base = random_vector("nginx")
    assert (base == random_vector(b"nginx")).all()
    assert similarity(base, random_vector("nginx", seed=1)) < 0.6
    assert similarity(base, random_vector("nginx", namespace="tok")) < 0.6
    assert similarity(base, random_vector("Nginx")) < 0.6


def test_cached_vectors_are_read_only():
    v = random_vector("cached")
    with pytest.raises(ValueError):
        v[0] = 0


def test_unrelated_random_vectors_average_half_similarity():
    # 1,000 pairs of 4096-bit vectors: the mean's standard error is 0.5/sqrt(4096*1000) = 0.00025,
    # so a tolerance of 0.01 is 40 standard errors; a linear-generator bias (0.625) is far outside.
    sims = [similarity(random_vector(f"left-{i}"), random_vector(f"right-{i}")) for i in range(1000)]
    assert abs(float(np.mean(sims)) - 0.5) < 0.01
    # each pair: sd 0.0078; none should be further than 6 sd from 0.5
    assert max(abs(s - 0.5) for s in sims) < 0.05


def test_bits_are_balanced():
    m = random_matrix([f"s{i}" for i in range(200)])
    ones = unpack_bits(m).mean()
    assert abs(ones - 0.5) < 0.005  # 819,200 fair bits: sd 0.00055


@pytest.mark.parametrize("dim", [64, 128, 4096])
def test_pack_unpack_round_trip(dim):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2, size=(3, dim), dtype=np.uint8)
    packed = pack_bits(bits)
    assert packed.shape == (3, dim // 64) and packed.dtype == np.uint64
    assert (unpack_bits(packed) == bits).all()


def test_pack_bits_order_is_least_significant_first():
    bits = np.zeros(128, dtype=np.uint8)
    bits[[0, 3, 64, 127]] = 1
    assert pack_bits(bits).tolist() == [0b1001, 1 + 2**63]


def test_zeros():
    assert zeros(128).tolist() == [0, 0]


BAD_PARAMS = [
    ({"dim": 100}, "dim must be a positive multiple of 64"),
    ({"dim": 0}, "dim must be a positive multiple of 64"),
    ({"dim": -64}, "dim must be a positive multiple of 64"),
    ({"dim": True}, "dim must be a positive multiple of 64"),
    ({"dim": 64.0}, "dim must be a positive multiple of 64"),
    ({"seed": -1}, "seed must be in"),
    ({"seed": 2**64}, "seed must be in"),
    ({"seed": "abc"}, "seed must be an int"),
    ({"ngram": -1}, "ngram must be in"),
    ({"word_ngram": 0}, "word_ngram must be in"),
    ({"char_weight": float("nan")}, "char_weight must be finite"),
    ({"unigram_weight": float("inf")}, "unigram_weight must be finite"),
    ({"order_weight": -1.0}, "order_weight must be finite and >= 0"),
    ({"unigram_weight": 0.0, "order_weight": 0.0, "char_weight": 0.0}, "must not all be 0"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_PARAMS)
def test_bad_params_are_refused_with_a_message(kwargs, message):
    with pytest.raises(ParamsError, match=message) as info:
        HDCParams(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, HDCError)


def test_params_are_frozen_hashable_and_round_trip():
    p = HDCParams(dim=1024, seed=9)
    assert HDCParams.from_dict(p.to_dict()) == p
    assert hash(p) == hash(HDCParams(dim=1024, seed=9))
    with pytest.raises(AttributeError):
        p.dim = 64  # type: ignore[misc]
    with pytest.raises(ParamsError, match="unknown HDCParams field"):
        HDCParams.from_dict({"dim": 64, "colour": "red"})


def test_random_vector_validates_dim_and_namespace():
    with pytest.raises(ParamsError):
        random_vector("x", 65)
    with pytest.raises(ParamsError, match="namespace"):
        random_vector("x", namespace="n" * 17)


def test_pack_bits_refuses_bad_lengths():
    with pytest.raises(DimensionError):
        pack_bits([1, 0, 1])
