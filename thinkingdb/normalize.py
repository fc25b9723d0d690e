"""Canonical keys for symbols and relations, aliases, and the one stored direction of inverses.

A symbol's key is its text after Unicode NFKC, case folding and trimming, with quotes stripped and
every run of spaces, ``-`` and ``_`` folded into one ``_``; the first label seen is kept for display.
A relation's key is the same fold applied after splitting camelCase, so ``dependsOn``, ``depends-on``,
``depends on`` and ``DEPENDS_ON`` are all ``depends_on``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import ValidationError

_FOLD = re.compile(r"[\s\-_]+")
_CAMEL_1 = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_CAMEL_2 = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
_QUOTES = "\"'“”‘’«»`"
# after the fold, quotes can reach an edge ('-"0' -> '_"0'): strip them with the underscores, so that
# a key is its own key
_EDGES = _QUOTES + "_"


@lru_cache(maxsize=1 << 18)
def symbol_key(label: str) -> str:
    """The canonical key of a symbol.

    >>> symbol_key("Secure Execution"), symbol_key("secure-execution"), symbol_key(" secure__execution ")
    ('secure_execution', 'secure_execution', 'secure_execution')
    >>> symbol_key('"AchillesIDE"')
    'achilleside'
    """
    text = unicodedata.normalize("NFKC", label).strip().strip(_QUOTES).strip()
    key = _FOLD.sub("_", text.casefold()).strip(_EDGES)
    if not key:
        raise ValidationError(f"empty symbol {label!r}")
    return key


@lru_cache(maxsize=1 << 14)
def relation_key(name: str) -> str:
    """The canonical snake_case key of a relation name.

    >>> [relation_key(n) for n in ("dependsOn", "depends-on", "depends on", "DEPENDS_ON", "HTTPServerOf")]
    ['depends_on', 'depends_on', 'depends_on', 'depends_on', 'http_server_of']
    """
    text = unicodedata.normalize("NFKC", name).strip().strip(_QUOTES).strip()
    text = _CAMEL_2.sub("_", _CAMEL_1.sub("_", text))
    key = _FOLD.sub("_", text.casefold()).strip(_EDGES)
    if not key:
        raise ValidationError(f"empty relation name {name!r}")
    return key


@dataclass
class Vocabulary:
    """Aliases and inverse declarations that decide a relation's canonical key and direction.

    >>> v = Vocabulary()
    >>> v.add_alias("requires", "depends_on")
    >>> v.add_inverse("part_of", "has_part")
    >>> v.relation("Requires"), v.orient("wheel", "hasPart", "car")
    ('depends_on', ('car', 'part_of', 'wheel'))
    """

    aliases: dict[str, str] = field(default_factory=dict)
    inverses: dict[str, str] = field(default_factory=dict)  # non-canonical name -> canonical relation

    def add_alias(self, phrase: str, relation: str) -> None:
        src, dst = relation_key(phrase), relation_key(relation)
        dst = self.aliases.get(dst, dst)
        if src == dst:
            return
        if self.aliases.get(src, dst) != dst:
            raise ValidationError(f"alias {phrase!r} already maps to {self.aliases[src]!r}, not {dst!r}")
        self.aliases[src] = dst

    def add_inverse(self, relation: str, inverse: str) -> None:
        """``relation R inverse S``: facts written with S are stored as R, reversed."""
        r, s = self.relation(relation), self.relation(inverse)
        if r == s:
            raise ValidationError(f"relation {relation!r} cannot be its own inverse")
        if self.inverses.get(s, r) != r or s in self.inverses.values():
            raise ValidationError(f"conflicting inverse declarations for {inverse!r}")
        self.inverses[s] = r

    def relation(self, name: str) -> str:
        """Canonical relation key with aliases applied."""
        key = relation_key(name)
        return self.aliases.get(key, key)

    def orient(self, subject: str, relation: str, obj: str) -> tuple[str, str, str]:
        """Canonical (subject, relation, object) keys with inverses stored in their one direction."""
        rel = self.relation(relation)
        s, o = symbol_key(subject), symbol_key(obj)
        if rel in self.inverses:
            return o, self.inverses[rel], s
        return s, rel, o
