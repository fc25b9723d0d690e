"""Front matter of a Markdown note and where its headings are (ATX ``#`` and setext underlines).

Two ways to write front matter, both for every unit of the note:

* a ``---`` block at the top (blank lines and a byte-order mark before it are allowed), closed by
  ``---`` or ``...``, in a small YAML subset: ``key: value``, ``key: "quoted"``, flow lists
  ``key: [a, "b"]``, block lists (``key:`` then ``  - a`` lines), ``#`` comments and blank lines;
* ``key: value`` lines (block lists too) before the first heading, among the first
  :data:`FRONT_MATTER_LINES` lines (``atlas_id:`` may stand anywhere among them).

The keys are ``atlas_id``, ``role``, ``acl``, ``region``, ``effective_from``, ``effective_to`` and
``utility_acts``; a ``---`` block may also hold the descriptive keys of :data:`DESCRIPTIVE`, which are
ignored. Front matter that is not understood is refused with its line and column, never read as
"no access control": a YAML feature outside the subset, a block never closed, a key repeated, an
unknown key in a ``---`` block, a misspelled access field anywhere (``ACL``, ``acl_tags``,
``valid_to``: see :mod:`thinkingdb.store.fields`), or an access field (``acl``, ``region``,
``effective_from``, ``effective_to``) at the start of a line after the first heading.

>>> parse_front_matter(["---", "acl:", "  - hr:secret", "  - 'legal'", "---", "# T"])
({'acl': ['hr:secret', 'legal']}, {0, 1, 2, 3, 4})
>>> parse_front_matter(["# T", "acl: hr:secret"])
Traceback (most recent call last):
...
thinkingdb.store.frontmatter.FrontMatterError: line 2: access field 'acl' after the first heading; front matter goes before the first heading, within the first 32 lines
"""

from __future__ import annotations

import re

from ..errors import ValidationError
from .fields import ACCESS_FIELDS, access_misspelling

__all__ = ["DESCRIPTIVE", "FRONT_MATTER_LINES", "FrontMatterError", "KEYS", "headings", "parse_front_matter"]

FRONT_MATTER_LINES = 32
KEYS = ("atlas_id", "role", "acl", "region", "effective_from", "effective_to", "utility_acts")
DESCRIPTIVE = ("title", "author", "authors", "date", "description", "summary")

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+-]*)")
_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_ITEM = re.compile(r"^[ \t]*-[ \t]+(.*?)[ \t]*$")
_ANY_KEY = re.compile(r"^[ \t]*([A-Za-z_][\w-]*)[ \t]*:")


class FrontMatterError(ValidationError):
    """Front matter that is not understood; ``line`` and ``column`` are 1-based."""

    def __init__(self, line: int, column: int, reason: str) -> None:
        self.line, self.column, self.reason = line, column, reason
        super().__init__(f"line {line}: {reason}")


def headings(lines: list[str], skip: set[int] = frozenset()) -> dict[int, tuple[int, str, int | None]]:
    """Headings outside fenced code: ``{line index: (level, text, underline index or None)}``.

    A setext heading is a line right after a blank line (or the start) underlined by ``===`` (level 1)
    or ``---`` (level 2).

    >>> headings(["Title", "=====", "", "## Part", "```", "# not", "```"])
    {0: (1, 'Title', 1), 3: (2, 'Part', None)}
    """
    out: dict[int, tuple[int, str, int | None]] = {}
    fence = None
    prev_blank = True
    i, n = 0, len(lines)
    while i < n:
        if i in skip:
            i += 1
            prev_blank = True
            continue
        line = lines[i]
        f = _FENCE.match(line)
        if f:
            if fence is None:
                fence = f.group(1)
            elif f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not f.group(2):
                fence = None
            prev_blank = False
            i += 1
            continue
        if fence is None:
            m = _ATX.match(line)
            if m:
                out[i] = (len(m.group(1)), m.group(2).strip(), None)
                prev_blank, i = True, i + 1
                continue
            if (line.strip() and prev_blank and i + 1 < n and i + 1 not in skip and _SETEXT.match(lines[i + 1])
                    and not _ITEM.match(line) and not _SETEXT.match(line) and not _keyish(line)):
                out[i] = (1 if lines[i + 1].strip()[0] == "=" else 2, line.strip(), i + 1)
                prev_blank, i = True, i + 2
                continue
        prev_blank = not line.strip()
        i += 1
    return out


def _keyish(line: str) -> bool:
    """A ``key:`` line of a front-matter key (then ``  -`` under it is a list item, not an underline)."""
    m = _ANY_KEY.match(line)
    return m is not None and (m.group(1).lower() in KEYS or access_misspelling(m.group(1)) is not None)


def _unquote(text: str, line: int, col: int) -> str:
    if text[:1] in ("'", '"'):
        if len(text) < 2 or text[-1] != text[0]:
            raise FrontMatterError(line, col, f"unterminated quoted value {text!r}")
        return text[1:-1]
    return text


def _scalar(raw: str, line: int, col: int) -> str:
    if raw[:1] not in ("'", '"'):
        raw = re.split(r"[ \t]+#", raw, maxsplit=1)[0].rstrip()   # a YAML comment after the value
    return _unquote(raw, line, col)


def _flow_list(raw: str, line: int, col: int) -> list[str]:
    if not raw.endswith("]"):
        raise FrontMatterError(line, col, f"a list opened with [ is not closed on its line: {raw!r}")
    items, cur, quote = [], "", None
    for ch in raw[1:-1]:
        if quote:
            cur += ch
            quote = None if ch == quote else quote
        elif ch in ("'", '"'):
            cur += ch
            quote = ch
        elif ch == ",":
            items.append(cur.strip())
            cur = ""
        elif ch in "[]{}":
            raise FrontMatterError(line, col, f"nested lists or maps are not understood: {raw!r}")
        else:
            cur += ch
    if quote:
        raise FrontMatterError(line, col, f"unterminated quote in {raw!r}")
    if cur.strip() or items:
        items.append(cur.strip())
    return [_unquote(x, line, col) for x in items]


def _value(lines: list[str], i: int, end: int, raw: str | None, col: int) -> tuple[str | list[str] | None, int]:
    """The value of the key on line ``i`` and the index of the next line to read."""
    if raw:
        if raw[0] in "|>&*!{%@`":
            raise FrontMatterError(i + 1, col, f"YAML value {raw!r} is not understood (plain, quoted or [list] only)")
        return (_flow_list(raw, i + 1, col) if raw[0] == "[" else _scalar(raw, i + 1, col)), i + 1
    items: list[str] = []
    j = i + 1
    while j < end:
        m = _ITEM.match(lines[j])
        if not m:
            break
        items.append(_scalar(m.group(1), j + 1, lines[j].index("-") + 3))
        j += 1
    return (items if items else None), j


def _check_key(key: str, line: int, block: bool) -> bool:
    """True when ``key`` is a front-matter key; raise for misspelled access fields (and, in a block,
    for unknown keys); False for keys to ignore."""
    if key in KEYS:
        return True
    meant = access_misspelling(key) or (key.lower() if key.lower() in KEYS else None)
    if meant is not None:
        raise FrontMatterError(line, 1, f"front-matter key {key!r} is not understood; did you mean {meant!r}?")
    if block and key not in DESCRIPTIVE:
        raise FrontMatterError(line, 1, f"unknown front-matter key {key!r}; known keys: {', '.join(KEYS)} "
                                        f"(and, ignored: {', '.join(DESCRIPTIVE)})")
    return False


def _block(lines: list[str], start: int) -> tuple[dict, set[int]] | None:
    end = next((j for j in range(start + 1, min(len(lines), start + 200)) if lines[j].strip() in ("---", "...")), None)
    if end is None:
        raise FrontMatterError(start + 1, 1, "front matter opened with --- is not closed by --- or ... "
                                             "within 200 lines")
    meta: dict = {}
    i = start + 1
    while i < end:
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        m = _KEY.match(line)
        if not m:
            raise FrontMatterError(i + 1, 1, f"front-matter line not understood: {line.strip()[:60]!r} "
                                             "(expected key: value, key: [list] or '  - item' under key:)")
        key = m.group(1)
        keep = _check_key(key, i + 1, True)
        value, nxt = _value(lines, i, end, m.group(2), m.start(2) + 1 if m.group(2) else 1)
        if key in meta:
            raise FrontMatterError(i + 1, 1, f"front-matter key {key!r} appears twice")
        if keep:
            meta[key] = value
        i = nxt
    return meta, set(range(start, end + 1))


def parse_front_matter(lines: list[str]) -> tuple[dict[str, str | list[str] | None], set[int]]:
    """Front-matter values (a string, a list of strings, or None for ``key:`` with nothing) and the
    (0-based) indexes of the lines they used; raises :class:`FrontMatterError` (see the module).

    >>> parse_front_matter(["---", "atlas_id: kb-1", "role: policy", "---", "# T"])
    ({'atlas_id': 'kb-1', 'role': 'policy'}, {0, 1, 2, 3})
    >>> parse_front_matter(["# Title", "atlas_id: kb-7", "text"])
    ({'atlas_id': 'kb-7'}, {1})
    """
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    meta: dict = {}
    used: set[int] = set()
    if first is not None and lines[first].strip() == "---":
        meta, used = _block(lines, first)
    heads = headings(lines, used)
    first_heading = min(heads, default=len(lines))
    skip_until = -1
    in_fence = None
    for i, line in enumerate(lines):
        if i in used or i <= skip_until:
            continue
        f = _FENCE.match(line)
        if f:
            in_fence = f.group(1) if in_fence is None else None
            continue
        if in_fence is not None or i in heads:
            continue
        m = _ANY_KEY.match(line)
        if not m:
            continue
        key = m.group(1)
        meant = key.lower() if key.lower() in KEYS else access_misspelling(key)
        legacy = i < first_heading and i < FRONT_MATTER_LINES
        if not legacy:
            if meant in ACCESS_FIELDS:
                where = "after the first heading" if i > first_heading else f"below line {FRONT_MATTER_LINES}"
                raise FrontMatterError(i + 1, 1, f"access field {key!r} {where}; front matter goes before the "
                                                 f"first heading, within the first {FRONT_MATTER_LINES} lines")
            if key.lower() == "atlas_id" and i < FRONT_MATTER_LINES and "atlas_id" not in meta:
                km = _KEY.match(line)
                if km and km.group(2):
                    meta["atlas_id"] = _scalar(km.group(2), i + 1, km.start(2) + 1)
                    used.add(i)
            continue
        if meant is None:
            continue
        km = _KEY.match(line)
        if km is None:
            raise FrontMatterError(i + 1, 1, f"front-matter line not understood: {line.strip()[:60]!r}")
        _check_key(key, i + 1, False)
        if key in meta:
            raise FrontMatterError(i + 1, 1, f"front-matter key {key!r} appears twice")
        value, nxt = _value(lines, i, min(len(lines), first_heading), km.group(2), km.start(2) + 1 if km.group(2) else 1)
        meta[key] = value
        used.update(range(i, nxt))
        skip_until = nxt - 1
    return meta, used
