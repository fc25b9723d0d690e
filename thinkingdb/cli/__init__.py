"""The ``thinkingdb`` command: a thin shell over :mod:`thinkingdb.api` (entry point :func:`main`)."""

from .main import main

__all__ = ["main"]
