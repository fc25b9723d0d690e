"""Hyperdimensional computing lane of ThinkingDB: hypervectors, encoders and fast Hamming search.

Knows nothing about facts or rules; depends on numpy only. See ``docs/hdc.md``.

>>> from hdc import HDCIndex
>>> idx = HDCIndex()
>>> idx.add("u1", {"topic": "refurbished laptops", "claim": "Damaged refurbished laptops qualify for replacement"})
>>> idx.add("u2", {"topic": "shipping", "claim": "Orders ship within two days"})
>>> idx.search("refurbised laptop replacment", k=1)[0][0]
'u1'
"""

from .encoders import (
    FIELD_ALIASES,
    IGNORED_FIELDS,
    UNIT_FIELDS,
    QueryVectors,
    TokenizerFn,
    UnitEncoder,
    UnitVectors,
    char_ngrams,
    default_tokenizer,
    encode_bag,
    encode_char_ngrams,
    encode_positions,
    encode_role,
    encode_sequence,
    encode_text,
    normalize_role,
)
from .errors import DimensionError, FieldError, HDCError, IndexFormatError, ParamsError, UnknownUnitError
from .index import FIELD_WEIGHTS, HDCIndex, field_score, final_score
from .ops import (
    batch_hamming,
    batch_similarity,
    bind,
    bundle,
    hamming,
    permute,
    popcount,
    similarity,
    tie_break_vector,
    top_k,
    unbind,
)
from .params import DEFAULT_DIM, DEFAULT_SEED, HDCParams
from .persist import FORMAT_VERSION
from .vectors import Vector, as_matrix, as_vector, pack_bits, random_matrix, random_vector, unpack_bits, zeros

__all__ = [
    "DEFAULT_DIM",
    "DEFAULT_SEED",
    "FIELD_ALIASES",
    "FIELD_WEIGHTS",
    "FORMAT_VERSION",
    "IGNORED_FIELDS",
    "UNIT_FIELDS",
    "DimensionError",
    "FieldError",
    "HDCError",
    "HDCIndex",
    "HDCParams",
    "IndexFormatError",
    "ParamsError",
    "QueryVectors",
    "TokenizerFn",
    "UnitEncoder",
    "UnitVectors",
    "UnknownUnitError",
    "Vector",
    "as_matrix",
    "as_vector",
    "batch_hamming",
    "batch_similarity",
    "bind",
    "bundle",
    "char_ngrams",
    "default_tokenizer",
    "encode_bag",
    "encode_char_ngrams",
    "encode_positions",
    "encode_role",
    "encode_sequence",
    "encode_text",
    "field_score",
    "final_score",
    "hamming",
    "normalize_role",
    "pack_bits",
    "permute",
    "popcount",
    "random_matrix",
    "random_vector",
    "similarity",
    "tie_break_vector",
    "top_k",
    "unbind",
    "unpack_bits",
    "zeros",
]
