"""The fast path of the N-Triples and N-Quads reader: lines of three IRIs, read without pyoxigraph objects.

A block of whole lines is split with array operations (:func:`plain_lines`: lines written exactly
``<s> <p> <o> .``) or a regular expression (:data:`SIMPLE_LINES`: other spacing, comments); each IRI is
looked up in a memo from IRI to the integer id of its key (:class:`~thinkingdb.store.records.Interner`,
the bulk writer's own when it takes the bulk path), so a line costs three dictionary look-ups and no
string is keyed twice. An IRI seen for the first time is checked by pyoxigraph (the same IRI rules as
the parser) and keyed by :meth:`thinkingdb.store.rdfterms.Reader.named`. The rows come as
:attr:`Batch.columns <thinkingdb.store.records.Batch.columns>`; every line this path cannot take (a
literal, a blank node, an escape, a special predicate, an IRI pyoxigraph refuses) goes to pyoxigraph.
"""

from __future__ import annotations

import re
from itertools import compress, repeat

from .records import Batch, Interner

MEMO = 1 << 20
"""IRIs the memo from IRI to id holds; past it the memo is emptied (ids stay: the keys are interned)."""

_IRIREF = r'<([^\x00-\x20<>"{}|^`\\]+)>'
SIMPLE_LINES = re.compile(r"(?m)^" + _IRIREF + r"[ \t]+" + _IRIREF + r"[ \t]+" + _IRIREF
                          + r"[ \t]*\.[ \t]*(?:#.*)?\r?$|^(.*)$")
"""Every line of a block: ``(s, p, o, "")`` for an N-Triples line of three IRIs without escapes (read
without building pyoxigraph objects; each distinct IRI is still checked by pyoxigraph once), else
``("", "", "", line)``."""


_BLANK = r"_:([A-Za-z0-9_]+)"
TERM_LINE = re.compile(r"(?:" + _IRIREF + "|" + _BLANK + r")[ \t]+" + _IRIREF + r"[ \t]+(?:" + _IRIREF + "|" + _BLANK
                       + r'|"([^"\\\r\n]*)"(?:@([A-Za-z]+(?:-[A-Za-z0-9]+)*))?)[ \t]*\.[ \t]*(?:#.*)?\r?')
"""A line of a subject IRI or blank node, a predicate IRI and an object IRI, blank node or literal
without escapes or datatype (with a language tag, checked by pyoxigraph once): ``(s, s blank, p, o,
o blank, literal, tag)``. Blank node labels of letters, digits and ``_`` only; other lines go to the parser."""

_WEIGHTS = None
_PLAIN = 3 + (3 << 16) + (3 << 32)   # a line of exactly three '<', three '>', three spaces, nothing forbidden


def plain_lines(data: bytes):
    """The lines of ``data`` (whole lines, ending with a newline) written exactly ``<s> <p> <o> .``, split
    with array operations: ``((flat, plain), (rest, others))``: ``flat`` the three IRIs of each such
    line in turn, ``plain`` their line indexes (0-based in the block, an array), ``rest`` the text of
    the other lines joined by newlines and ``others`` their indexes. None when the block is not UTF-8.

    A line is plain when it starts with ``<``, ends with ``> .``, holds exactly three ``<``, three ``>``
    and three spaces and no other whitespace, control character or ``"{}|^`\\\\`` (IRIs with escapes and
    literals are left to the parser). Such a line splits at ``> <`` into exactly three IRIs holding none
    of ``<``, ``>`` and space, exactly when it holds ``> <`` twice: the count of the pieces checks it.

    >>> (flat, plain), rest = plain_lines(b'<a> <b> <c> .\\n_:x <b> "y" .\\n<d> <b> <e:f> .\\n')
    >>> flat, plain.tolist(), rest
    (['a', 'b', 'c', 'd', 'b', 'e:f'], [0, 2], ('_:x <b> "y" .', [1]))
    >>> (flat, plain), rest = plain_lines(b'<a> .<b> <c> .\\n')   # three '<', '>' and spaces, but one '> <'
    >>> flat, plain.tolist(), rest
    ([], [], ('<a> .<b> <c> .', [0]))
    """
    import numpy as np
    global _WEIGHTS
    if _WEIGHTS is None:
        w = np.zeros(256, np.int64)
        w[:33] = 1 << 48          # control characters and whitespace other than a space
        w[ord(" ")] = 1 << 32
        w[ord("<")], w[ord(">")] = 1, 1 << 16
        for ch in b'"{}|^`\\':
            w[ch] = 1 << 48
        w[ord("\n")] = 0         # never inside a line
        _WEIGHTS = w
    arr = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    length = ends - starts
    cum = np.zeros(len(arr) + 1, np.int64)
    np.cumsum(_WEIGHTS[arr], out=cum[1:])
    sel = np.flatnonzero((length >= 10) & (length < 1 << 16))   # short enough for the counts not to carry
    s, e = starts[sel], ends[sel]
    sel = sel[(arr[s] == 60) & (arr[e - 1] == 46) & (arr[e - 2] == 32) & (arr[e - 3] == 62)
              & (cum[e] - cum[s] == _PLAIN)]
    flat: list[str] = []
    if len(sel):
        keep = np.zeros(len(ends), dtype=bool)
        keep[sel] = True
        mask = np.repeat(keep, length + 1)
        try:
            text = arr[mask].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
        flat = text[1:-4].replace("> .\n<", "> <").split("> <")
        if len(flat) != 3 * len(sel):   # some line holds '> <' less than twice: leave them all to the rest
            flat, sel = [], sel[:0]
            keep[:] = False
    if len(sel) == len(ends):
        return (flat, sel), ("", [])
    if not len(sel):
        try:
            return ([], sel), (data[:-1].decode("utf-8"), list(range(len(ends))))
        except UnicodeDecodeError:
            return None
    try:
        rest = arr[~mask].tobytes()[:-1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return (flat, sel), (rest, np.flatnonzero(~keep).tolist())


def block_reader(reader, ox, current: list[Batch], ids: Interner, special: frozenset[str]):
    """The handler of a block of whole lines for :func:`thinkingdb.store.rdfquads.line_quads`:
    ``current[0]`` is the batch to fill, ``reader`` the :class:`~thinkingdb.store.rdfterms.Reader` (it keys
    IRIs and predicates), ``special`` the predicates that are never plain facts.

    It takes the block's bytes and its first line number, adds a column entry for the lines of three
    IRIs it can key, and returns ``(line number, text)`` of the other statement lines (for pyoxigraph),
    or None, changing nothing, when the block is not UTF-8."""
    import numpy as np
    check, named, relation = ox.NamedNode, reader.named, reader.relation
    sid: dict[str, int] = {}     # IRI -> id of its key
    pid: dict[str, int] = {}     # predicate IRI (not special) -> id of its relation
    flipped: set[str] = set()    # those of them stored reversed (an inverse was declared)

    def key(iri: str) -> str | None:
        try:
            check(iri)  # the same IRI rules as the parser
        except ValueError:
            return None
        return named(iri)

    tags: dict[str, bool] = {}   # language tags seen: whether pyoxigraph takes them
    blank, literal = reader.blank, reader.literal

    def tag_ok(tag: str) -> bool:
        ok = tags.get(tag)
        if ok is None:
            try:
                ox.Literal("", language=tag)
                ok = True
            except ValueError:
                ok = False
            tags[tag] = ok
        return ok

    def symbol(iri: str) -> int:
        i = sid.get(iri)
        if i is None:
            i = symbols([iri])[0]
        return int(i)

    def predicate(p: str) -> int:
        i = pid.get(p)
        if i is None:
            i = predicates([p])[0]
        return int(i)

    def term_lines(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """A column entry of the lines :data:`TERM_LINE` takes (those with a literal object also add a
        label, as the parser's path does); the other lines are returned."""
        S, R, O, L, slow = [], [], [], [], []
        for i, text in found:
            m = TERM_LINE.fullmatch(text)
            if m is None:
                slow.append((i, text))
                continue
            si, sb, p, oi, ob, lit, tag = m.groups()
            ks = symbol(si) if si is not None else ids.symbol(blank + sb)
            rl = predicate(p)
            if ks < 0 or rl < 0 or (tag is not None and not tag_ok(tag)):
                slow.append((i, text))
                continue
            if lit is not None:
                key = literal(lit, tag is not None, current[0])
                if key is None:   # skipped (and counted)
                    continue
                ko = ids.symbol(key)
            else:
                ko = symbol(oi) if oi is not None else ids.symbol(blank + ob)
                if ko < 0:
                    slow.append((i, text))
                    continue
            if p in flipped:
                ks, ko = ko, ks
            S.append(ks)
            R.append(rl)
            O.append(ko)
            L.append(i)
        if L:
            batch = current[0]
            batch.columns.append((len(batch.rows), np.array(S, dtype=np.int64), np.array(R, dtype=np.int64),
                                  np.array(O, dtype=np.int64), np.array(L, dtype=np.int64)))
        return slow

    def symbols(S: list[str]):
        got = np.fromiter(map(sid.get, S, repeat(-1)), np.int64, len(S))
        for j in np.flatnonzero(got < 0).tolist():   # first sight of an IRI (or one refused before)
            iri = S[j]
            i = sid.get(iri)
            if i is None:
                k = key(iri)
                if k is None:
                    continue
                if len(sid) >= MEMO:
                    sid.clear()
                i = sid[iri] = ids.symbol(k)
            got[j] = i
        return got

    def predicates(P: list[str]):
        got = np.fromiter(map(pid.get, P, repeat(-1)), np.int64, len(P))
        for j in np.flatnonzero(got < 0).tolist():
            p = P[j]
            i = pid.get(p)
            if i is None:
                if p in special or key(p) is None:
                    continue
                rel, flip = relation(p)
                i = pid[p] = ids.relation(rel)
                if flip:
                    flipped.add(p)
            got[j] = i
        return got

    def keyed(S: list[str], P: list[str], O: list[str], idx, text_of) -> list[tuple[int, str]]:
        """A column entry of the triples of lines ``idx``; the lines that cannot be keyed here are returned."""
        if not len(idx):
            return []
        KS, RL, KO = symbols(S), predicates(P), symbols(O)
        if flipped:
            flip = np.fromiter(map(flipped.__contains__, P), bool, len(P))
            if flip.any():    # a predicate declared an inverse: its lines are stored reversed
                KS, KO = np.where(flip, KO, KS), np.where(flip, KS, KO)
        bad = (KS < 0) | (RL < 0) | (KO < 0)
        slow = []
        if bad.any():
            slow = [(int(idx[j]), text_of(j)) for j in np.flatnonzero(bad).tolist()]
            good = ~bad
            KS, RL, KO, idx = KS[good], RL[good], KO[good], idx[good]
        if len(idx):
            batch = current[0]
            batch.columns.append((len(batch.rows), KS, RL, KO, idx))
        return slow

    def block(data: bytes, first: int) -> list[tuple[int, str]] | None:
        if not data.endswith(b"\n"):
            data += b"\n"
        split = plain_lines(data)
        if split is None:
            return None
        (flat, plain_idx), (rest, rest_idx) = split
        slow = keyed(flat[0::3], flat[1::3], flat[2::3], plain_idx + first,
                     lambda j: "<" + "> <".join(flat[3 * j:3 * j + 3]) + "> .")
        if rest_idx:
            found = SIMPLE_LINES.findall(rest)[:len(rest_idx)]
            texts = rest.split("\n")
            S, P, O, X = zip(*found)
            lines = [first + i for i in rest_idx]
            where = list(compress(range(len(lines)), S))   # the lines of three IRIs
            slow += keyed(list(compress(S, S)), list(compress(P, S)), list(compress(O, S)),
                          np.array([lines[j] for j in where], dtype=np.int64), lambda j: texts[where[j]])
            slow += term_lines([(i, x) for i, x in zip(compress(lines, X), compress(X, X)) if x.strip() and
                                x.lstrip()[0] != "#"])
            slow.sort()
        return slow
    return block
