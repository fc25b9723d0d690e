"""Exceptions raised by the lexical package.

Every error derives from :class:`LexicalError`, and each subclass also inherits
the builtin exception that best matches it, so callers may catch either::

    Exception
     └── LexicalError
          ├── UnknownLanguageError (also ValueError)   no Snowball stemmer for a language
          ├── ParameterError       (also ValueError)   a BM25 / tokenizer parameter out of range
          ├── FieldError           (also ValueError)   a field name the index has no weight for
          ├── DocumentError        (also TypeError)    a doc id or field value of the wrong type
          ├── TextError            (also ValueError)   text that is not valid Unicode (a lone surrogate)
          ├── UnknownDocumentError (also KeyError)     remove() of an id that is not indexed
          └── IndexFormatError     (also ValueError)   a saved index that cannot be loaded as is

The ``thinkingdb`` package translates these at its own boundary.

>>> issubclass(IndexFormatError, ValueError) and issubclass(IndexFormatError, LexicalError)
True
"""

from __future__ import annotations

__all__ = [
    "LexicalError",
    "UnknownLanguageError",
    "ParameterError",
    "FieldError",
    "DocumentError",
    "TextError",
    "UnknownDocumentError",
    "IndexFormatError",
]


class LexicalError(Exception):
    """Root of every error raised by :mod:`lexical`."""


class UnknownLanguageError(LexicalError, ValueError):
    """No Snowball stemmer exists for the requested language; the message lists the available ones."""


class ParameterError(LexicalError, ValueError):
    """A parameter is not finite or out of its range; the message names the field."""


class FieldError(LexicalError, ValueError):
    """A document used a field name that has no weight in the index."""


class DocumentError(LexicalError, TypeError):
    """A document id or a field value has the wrong type."""


class TextError(LexicalError, ValueError):
    """Text holds a lone surrogate (U+D800 to U+DFFF alone), which is not valid Unicode.

    Such strings come from an unpaired ``\\uD800`` escape in JSON or from ``surrogateescape``
    decoding; they cannot be encoded, so the stemmer cannot read them.
    """


def check_text(text: str, where: str = "text") -> None:
    """Raise :class:`TextError` if ``text`` holds a lone surrogate; ``where`` names it in the message.

    >>> check_text("café")
    >>> check_text("ab\\ud800c", "query")
    Traceback (most recent call last):
    ...
    lexical.errors.TextError: query is not valid Unicode: a lone surrogate U+D800 at character 2
    """
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TextError(
            f"{where} is not valid Unicode: a lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}"
        ) from None


class UnknownDocumentError(LexicalError, KeyError):
    """``remove`` was asked for an id that the index does not hold."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else ""


class IndexFormatError(LexicalError, ValueError):
    """A saved index is corrupt, of another format version, or built with other parameters."""
