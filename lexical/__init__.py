"""lexical — a tokenizer (PyStemmer Snowball) and a BM25F index; knows nothing about facts or rules.

>>> from lexical import tokenize
>>> tokenize("Ploinky’s sandbox-runtime")
['ploinki', 'sandbox-runtim', 'sandbox', 'runtim']
"""

from .errors import (
    DocumentError,
    FieldError,
    IndexFormatError,
    LexicalError,
    ParameterError,
    UnknownDocumentError,
    UnknownLanguageError,
)
from .tokenizer import DEFAULT_STOPWORDS, Tokenizer, available_languages, tokenize

__all__ = [
    "DEFAULT_STOPWORDS",
    "DocumentError",
    "FieldError",
    "IndexFormatError",
    "LexicalError",
    "ParameterError",
    "Tokenizer",
    "UnknownDocumentError",
    "UnknownLanguageError",
    "available_languages",
    "tokenize",
]
