"""lexical — a tokenizer (PyStemmer Snowball) and a BM25F index; knows nothing about facts or rules.

>>> from lexical import BM25Index, tokenize
>>> tokenize("Ploinky’s sandbox-runtime")
['ploinki', 'sandbox-runtim', 'sandbox', 'runtim']
>>> idx = BM25Index()
>>> idx.rebuild([("u1", {"topic": "Ploinky sandbox", "claim": "isolates agents"}), ("u2", "plain text about sandboxes")])
>>> [hit.doc_id for hit in idx.search("sandbox")]
['u1', 'u2']
"""

from .errors import (
    DocumentError,
    FieldError,
    IndexFormatError,
    LexicalError,
    ParameterError,
    TextError,
    UnknownDocumentError,
    UnknownLanguageError,
)
from .index import BM25Index
from .persist import FORMAT_VERSION
from .tokenizer import DEFAULT_STOPWORDS, Tokenizer, available_languages, tokenize
from .values import DEFAULT_FIELD_WEIGHTS, BM25Params, Hit, IndexStats

__all__ = [
    "BM25Index",
    "BM25Params",
    "DEFAULT_FIELD_WEIGHTS",
    "DEFAULT_STOPWORDS",
    "FORMAT_VERSION",
    "Hit",
    "IndexStats",
    "DocumentError",
    "FieldError",
    "IndexFormatError",
    "LexicalError",
    "ParameterError",
    "TextError",
    "Tokenizer",
    "UnknownDocumentError",
    "UnknownLanguageError",
    "available_languages",
    "tokenize",
]
