"""The ``thinkingdb`` command: a thin shell over :mod:`thinkingdb.api` (:func:`main`; the console script runs :func:`run`)."""

from .main import main, run

__all__ = ["main", "run"]
