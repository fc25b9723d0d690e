"""Exceptions raised by the HDC lane.

Every exception the package raises on purpose derives from :class:`HDCError`; each subclass also
derives from the builtin a caller would otherwise expect, so ``except ValueError`` keeps working::

    HDCError(Exception)
    ├── ParamsError(HDCError, ValueError)        bad HDCParams value (non-finite float, dim, seed ...)
    ├── DimensionError(HDCError, ValueError)     vectors of different or invalid dimension/shape
    ├── FieldError(HDCError, ValueError)         unknown unit field name or a field value of the wrong type
    ├── IndexFormatError(HDCError, ValueError)   a saved index is corrupt or was built with other settings
    └── UnknownUnitError(HDCError, KeyError)     remove()/update() of a unit id the index does not hold

>>> issubclass(IndexFormatError, ValueError) and issubclass(IndexFormatError, HDCError)
True
"""

from __future__ import annotations

__all__ = [
    "HDCError",
    "ParamsError",
    "DimensionError",
    "FieldError",
    "IndexFormatError",
    "UnknownUnitError",
]


class HDCError(Exception):
    """Root of every error raised by :mod:`hdc`."""


class ParamsError(HDCError, ValueError):
    """An :class:`hdc.HDCParams` value is out of range (e.g. ``dim`` not a multiple of 64)."""


class DimensionError(HDCError, ValueError):
    """Vectors have different dimensions, or an array does not have the shape of packed vectors."""


class FieldError(HDCError, ValueError):
    """A unit field name is not one the index knows, or its value has the wrong type."""


class IndexFormatError(HDCError, ValueError):
    """A saved index cannot be used: corrupt, another format version, or other encoder settings.

    The message always says what differs and that the index must be rebuilt.
    """


class UnknownUnitError(HDCError, KeyError):
    """The index holds no unit with this id."""

    def __str__(self) -> str:
        # KeyError.__str__ would repr() the message and wrap it in quotes.
        return str(self.args[0]) if self.args else ""
