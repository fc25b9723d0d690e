"""Canonical keys for symbols and relations, aliases, and the one stored direction of inverses.

A symbol's key is its text after Unicode NFKC, case folding and trimming, with quotes stripped and
every run of spaces, ``-`` and ``_`` folded into one ``_``; the first label seen is kept for display.
A relation's key is the same fold applied after splitting camelCase, so ``dependsOn``, ``depends-on``,
``depends on`` and ``DEPENDS_ON`` are all ``depends_on``.

Identity matters for IRIs and CURIEs (``http://example.org/Paris``, ``<urn:x:1>``, ``ex:Paris``,
``GO:0000001``): in the default symbol mode ``"iris"`` such a name is its own key, exactly as written
(only surrounding spaces, quotes and ``<>`` are removed), so ``ex:Paris`` and ``ex:paris`` stay two
symbols. Mode ``"folded"`` (stores made before the modes existed) folds them like any word. Plain words
are folded the same way in every mode. Mode ``"quoted"`` also keeps a symbol written in quotes in the
language exactly (``"New York"`` and ``"new york"`` are two symbols; bare ``New-York`` still folds to
``new_york``). A store keeps its mode (:attr:`Vocabulary.mode`).
"""

from __future__ import annotations

from .errors import ValidationError
from .model import Atom, Rule
from .values import Record

# the fold's patterns (a signed number is its own key: '-4' is not '4'), compiled by the first name that
# is not already a key (:func:`_is_key`)
_FOLD_SOURCES = (r"[+-]?\d+(?:\.\d+)?", r"[\s\-_]+", r"(?<=[a-z0-9])(?=[A-Z])", r"(?<=[A-Z])(?=[A-Z][a-z])")
_FOLDS: tuple | None = None
_QUOTES = "\"'“”‘’«»`"
# after the fold, quotes can reach an edge ('-"0' -> '_"0'): strip them with the underscores, so that
# a key is its own key
_EDGES = _QUOTES + "_"
# a scheme or prefix, a colon and no space or IRI-forbidden character: an IRI or a CURIE (_IRI's pattern,
# checked by :func:`_is_iri` with str methods: a question compiles no regex to read ``GO:0006915``)
_IRI_SOURCE = r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|^`\\]+"
_SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_NOT_IN_IRI = frozenset('<>"{}|^`\\')
SYMBOL_MODES = ("iris", "folded", "quoted")
"""``iris``: IRIs and CURIEs are kept exactly (the default); ``folded``: every name is folded;
``quoted``: IRIs, CURIEs and quoted symbols are kept exactly."""


def exact_name(text: str) -> str | None:
    """The name itself when it is an IRI or CURIE (kept exactly in mode ``iris``), else None.

    >>> exact_name(" <http://example.org/Paris> "), exact_name("GO:0000001"), exact_name("New York")
    ('http://example.org/Paris', 'GO:0000001', None)
    """
    t = text.strip().strip(_QUOTES).strip()
    if t[:1] == "<" and t[-1:] == ">":
        t = t[1:-1].strip()
    return t if _is_iri(t) else None


def _is_iri(t: str) -> bool:
    """``_IRI.fullmatch(t)`` without a regex: a scheme (an ASCII letter, then ASCII letters, digits, ``+``,
    ``.``, ``-``), a colon and at least one character that is no white space (``str.isspace``, as ``\\s``)
    nor ``<>"{}|^`\\``.

    >>> _is_iri("GO:0000001"), _is_iri("http://x.org/a b"), _is_iri("1a:b"), _is_iri("a:"), _is_iri("new york")
    (True, False, False, False, False)
    """
    scheme, colon, rest = t.partition(":")
    return bool(colon and scheme[:1].isalpha() and scheme.isascii() and _SCHEME.issuperset(scheme)
                and rest.split() == [rest] and _NOT_IN_IRI.isdisjoint(rest))


def __getattr__(name: str):
    """``_IRI``, the compiled pattern (the RDF reader's), compiled on first use."""
    if name == "_IRI":
        import re
        globals()["_IRI"] = pattern = re.compile(_IRI_SOURCE)
        return pattern
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _nfkc(text: str) -> str:
    """Unicode NFKC of ``text``; ASCII text is its own NFKC form, so most names never load unicodedata.

    >>> _nfkc("ﬁle ①"), _nfkc("plain_ascii")
    ('file 1', 'plain_ascii')
    """
    if text.isascii():
        return text
    import unicodedata
    return unicodedata.normalize("NFKC", text)


def _is_key(text: str) -> bool:
    """True when ``text`` is already its own symbol and relation key in every mode: ASCII letters,
    digits and single inner underscores, no capital (no colon: not an IRI) — most names in a store.

    >>> _is_key("depends_on"), _is_key("n5"), _is_key("42"), _is_key("dependsOn"), _is_key("a__b"), _is_key("_a")
    (True, True, True, False, False, False)
    """
    return (text.isascii() and text.replace("_", "").isalnum() and text.lower() == text and text[0] != "_"
            and text[-1] != "_" and "__" not in text)


def _memo(maxsize: int):
    """``functools.lru_cache(maxsize)``, made by its C type directly: importing ``functools`` (and the
    ``collections`` and ``types`` it loads) costs a cold question ~1 ms (store/statefile.py)."""
    try:
        from _functools import _lru_cache_wrapper
    except ImportError:   # pragma: no cover - an interpreter without functools' C half
        from functools import lru_cache
        return lru_cache(maxsize=maxsize)

    def wrap(fn):
        cached = _lru_cache_wrapper(fn, maxsize, False, lambda *info: info)   # (info: cache_info()'s tuple)
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(cached, name, getattr(fn, name))
        cached.__wrapped__ = fn
        return cached
    return wrap


def _folds() -> tuple:
    global _FOLDS
    if _FOLDS is None:
        import re
        _FOLDS = tuple(re.compile(p) for p in _FOLD_SOURCES)
    return _FOLDS


@_memo(1 << 18)
def symbol_key(label: str, mode: str = "iris") -> str:
    """The canonical key of a symbol (see the module docstring for ``mode``).

    >>> symbol_key("Secure Execution"), symbol_key("secure-execution"), symbol_key(" secure__execution ")
    ('secure_execution', 'secure_execution', 'secure_execution')
    >>> symbol_key('"AchillesIDE"')
    'achilleside'
    >>> symbol_key("-4"), symbol_key("+2.5"), symbol_key("-x")
    ('-4', '2.5', 'x')
    >>> symbol_key("ex:New_York"), symbol_key("ex:New-York"), symbol_key("ex:New-York", "folded")
    ('ex:New_York', 'ex:New-York', 'ex:new_york')
    """
    if _is_key(label):
        return label
    if mode != "folded":
        exact = exact_name(label)
        if exact is not None:
            return exact
    numeral, fold, _, _ = _folds()
    text = _nfkc(label).strip().strip(_QUOTES).strip()
    if numeral.fullmatch(text):
        return text.lstrip("+")
    key = fold.sub("_", text.casefold()).strip(_EDGES)
    if not key:
        raise ValidationError(f"empty symbol {label!r}")
    return key


def quoted_key(text: str) -> str:
    """The key of a quoted symbol in mode ``quoted``: the text itself, exactly (never empty or blank).

    >>> quoted_key("New York"), quoted_key(" GO:0000001 ")
    ('New York', ' GO:0000001 ')
    """
    if not text.strip():
        raise ValidationError(f"empty symbol {text!r}")
    return text


@_memo(1 << 14)
def relation_key(name: str, mode: str = "iris") -> str:
    """The canonical snake_case key of a relation name; an IRI or CURIE is kept exactly (mode ``iris``).

    >>> [relation_key(n) for n in ("dependsOn", "depends-on", "depends on", "DEPENDS_ON", "HTTPServerOf")]
    ['depends_on', 'depends_on', 'depends_on', 'depends_on', 'http_server_of']
    >>> relation_key("http://schema.org/knowsAbout"), relation_key("schema:knowsAbout", "folded")
    ('http://schema.org/knowsAbout', 'schema:knows_about')
    """
    if _is_key(name):
        return name
    if mode != "folded":
        exact = exact_name(name)
        if exact is not None:
            return exact
    _, fold, camel_1, camel_2 = _folds()
    text = _nfkc(name).strip().strip(_QUOTES).strip()
    text = camel_2.sub("_", camel_1.sub("_", text))
    key = fold.sub("_", text.casefold()).strip(_EDGES)
    if not key:
        raise ValidationError(f"empty relation name {name!r}")
    return key


class Vocabulary(Record):
    """Aliases and inverse declarations that decide a relation's canonical key and direction.

    >>> v = Vocabulary()
    >>> v.add_alias("requires", "depends_on")
    >>> v.add_inverse("part_of", "has_part")
    >>> v.relation("Requires"), v.orient("wheel", "hasPart", "car")
    ('depends_on', ('car', 'part_of', 'wheel'))
    """

    _fields = ("aliases", "inverses", "mode")
    aliases: dict[str, str]
    inverses: dict[str, str]   # non-canonical name -> canonical relation
    mode: str                  # see SYMBOL_MODES

    def __init__(self, aliases: dict[str, str] | None = None, inverses: dict[str, str] | None = None,
                 mode: str = "iris") -> None:
        self.aliases = {} if aliases is None else aliases
        self.inverses = {} if inverses is None else inverses
        self.mode = mode
        if mode not in SYMBOL_MODES:
            raise ValidationError(f"unknown symbol mode {mode!r}; expected one of {', '.join(SYMBOL_MODES)}")

    def symbol(self, label: str, quoted: bool = False) -> str:
        """The key of a symbol in this vocabulary's mode (``quoted``: it was written in quotes).

        >>> Vocabulary().symbol("ex:Paris"), Vocabulary(mode="folded").symbol("ex:Paris")
        ('ex:Paris', 'ex:paris')
        >>> q = Vocabulary(mode="quoted")
        >>> q.symbol("New York", quoted=True), q.symbol("New-York"), Vocabulary().symbol("New York", quoted=True)
        ('New York', 'new_york', 'new_york')
        """
        if quoted and self.mode == "quoted":
            return quoted_key(label)
        return symbol_key(label, self.mode)

    def add_alias(self, phrase: str, relation: str) -> None:
        src, dst = relation_key(phrase, self.mode), relation_key(relation, self.mode)
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
        if self.inverses.get(s, r) != r:
            raise ValidationError(f"conflicting inverse declarations for {inverse!r}")
        # a chain, in either order (a fact is turned once, so the far name would be read as nothing)
        far = self.inverses.get(r)
        if far == s:
            raise ValidationError(f"conflicting inverse declarations for {inverse!r}")
        if far is not None:   # relation far inverse r, then relation r inverse s
            raise ValidationError(f"relation {r} inverse {s}: {r} is itself the inverse of {far} (relation {far} "
                                  f"inverse {r}), so {s} means {far}: write alias {s} => {far}")
        near = next((b for b, c in self.inverses.items() if c == s), None)
        if near is not None:   # relation s inverse near, then relation r inverse s
            raise ValidationError(f"relation {r} inverse {s}: {s} has itself an inverse, {near} (relation {s} "
                                  f"inverse {near}), so {near} means {r}: write alias {near} => {r}")
        self.inverses[s] = r

    def relation(self, name: str) -> str:
        """Canonical relation key with aliases applied."""
        key = relation_key(name, self.mode)
        return self.aliases.get(key, key)

    def orient(self, subject: str, relation: str, obj: str) -> tuple[str, str, str]:
        """Canonical (subject, relation, object) keys with inverses stored in their one direction."""
        rel = self.relation(relation)
        s, o = symbol_key(subject, self.mode), symbol_key(obj, self.mode)
        if rel in self.inverses:
            return o, self.inverses[rel], s
        return s, rel, o


def orient_rules(rules, inverses: dict[str, str]) -> tuple[Rule, ...]:
    """``rules`` with every atom over a non-canonical inverse name turned to its canonical relation
    (``relation c inverse b``: ``?x b ?y`` is ``?y c ?x``), as facts and questions are: a rule or a
    declaration stored before the inverse was declared, or over the other name, then sees the facts.

    >>> from thinkingdb.model import Var
    >>> x, y = Var("x"), Var("y")
    >>> [str(r) for r in orient_rules([Rule("r", (Atom(x, "b", y),), Atom(x, "h", y))], {"b": "c"})]
    ['rule r @1: ?y c ?x => ?x h ?y.']
    """
    if not inverses:
        return tuple(rules)

    def atom(a: Atom) -> Atom:
        rel = inverses.get(a.relation)
        return a if rel is None else Atom(a.object, rel, a.subject)

    out = []
    for r in rules:
        if any(a.relation in inverses for a in (r.head, *r.premises, *r.negated)):
            r = Rule(r.name, tuple(map(atom, r.premises)), atom(r.head), r.weight, tuple(map(atom, r.negated)),
                     r.constraints)
        out.append(r)
    return tuple(out)
