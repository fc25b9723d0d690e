"""Markdown notes and plain text as knowledge: one unit per ``#``/``##`` section, facts extracted from
the prose, and fenced ``tdb`` blocks taken as written.

A note (the Atlas layout of the seeds)::

    atlas_id: kb-042            <- optional front-matter line in the first 32 lines: kept as provenance
    # Title                     <- a unit: topic = title, claim = the text before the first ## heading
    ## Section heading          <- a unit per section: topic = "Title: Section heading", claim = its body
    ```tdb
    nginx depends_on openssl.   <- explicit facts (and rules, declarations, aliases) taken as written
    ```

Front matter — a ``---`` block at the top, or ``key: value`` lines before the first heading — may also
set ``role``, ``acl`` (comma-separated tags), ``region``, ``effective_from``, ``effective_to`` and
``utility_acts`` for every unit of the file. Unit ids are ``<atlas_id or file>#<heading slug>``. Facts
found in prose record the sentence and its character span (in the file) as provenance. Phrases of
multi-word aliases in force (``alias "is maintained by" => maintained_by.``) extend the extraction.
Headings, front matter and tdb blocks are not prose; other fenced code blocks are kept in the claim but
never extracted from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Iterator

from ..errors import ParseError, ValidationError
from .extract import extract
from .fields import check_region, check_tags
from .frontmatter import FrontMatterError, headings, parse_front_matter
from .records import CHUNK, Batch, Reject, _check_date, _decode, _reject, read_whole
from ..language import compile_source
from ..model import Fact
from ..normalize import Vocabulary, symbol_key
from .sqlite import Unit

_AT_LINE = re.compile(r"\bat line (\d+)")   # a line named inside a diagnostic's reason
_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+-]*)")


@dataclass
class Section:
    """One ``#`` or ``##`` section: heading (empty for text before any heading), body lines."""

    level: int
    heading: str
    line: int                       # line of the heading (or of the first body line)
    body: list[tuple[int, str]] = field(default_factory=list)   # (line number, text)


def slug(text: str) -> str:
    """A heading as an id fragment.

    >>> slug("Secure Execution: What & Why?")
    'secure-execution-what-why'
    """
    s = re.sub(r"[^\w]+", "-", text.casefold()).strip("-")
    return s or "section"


def _sections(lines: list[str], skip: set[int]) -> list[Section]:
    sections: list[Section] = []
    current = Section(0, "", 1)
    heads = {i: h for i, h in headings(lines, skip).items() if h[0] <= 2}
    underlines = {h[2] for h in heads.values() if h[2] is not None}
    for i, line in enumerate(lines):
        if i in skip or i in underlines:
            continue
        h = heads.get(i)
        if h is not None:
            sections.append(current)
            current = Section(h[0], h[1], i + 1)
        else:
            current.body.append((i + 1, line))
    sections.append(current)
    return [s for s in sections if s.heading or any(t.strip() for _, t in s.body)]


def _split_body(body: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[tuple[int, list[str]]], str]:
    """(prose lines, tdb blocks as (first line, lines), claim text without the tdb blocks)."""
    prose: list[tuple[int, str]] = []
    blocks: list[tuple[int, list[str]]] = []
    claim: list[str] = []
    fence, lang, block = None, "", []
    for ln, text in body:
        f = _FENCE.match(text)
        if fence is None and f:
            fence, lang, block = f.group(1), f.group(2).lower(), []
            if lang != "tdb":
                claim.append(text)
            continue
        if fence is not None and f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) and not f.group(2):
            if lang == "tdb":
                blocks.append((block[0][0] if block else ln, [t for _, t in block]))
            else:
                claim.append(text)
            fence = None
            continue
        if fence is not None:
            block.append((ln, text))
            if lang != "tdb":
                claim.append(text)
            continue
        prose.append((ln, text))
        claim.append(text)
    if fence is not None and lang == "tdb":
        blocks.append((block[0][0] if block else 0, [t for _, t in block]))
    return prose, blocks, "\n".join(claim).strip()


def _phrases(vocab: Vocabulary) -> dict[str, str]:
    return {k.replace("_", " "): v for k, v in vocab.aliases.items() if "_" in k}


def _unit_fields(meta: dict) -> dict:
    """Unit fields from front-matter values (strings, lists, or None for a key given no value)."""
    out: dict = {}
    for key, value in meta.items():
        if key == "atlas_id":
            continue
        if value is None or (isinstance(value, str) and not value.strip() and key in ("acl", "region")):
            raise ValidationError(f"{key}: no value given (leave the key out instead)")
        if key in ("acl", "utility_acts"):
            items = value if isinstance(value, list) else [t for t in value.split(",")]
            out[key] = check_tags(items, key) if key == "acl" else tuple(t.strip() for t in items if t.strip())
        elif isinstance(value, list):
            raise ValidationError(f"{key}: must be one value, not a list")
        elif key == "region":
            out[key] = check_region(value, key)
        elif key in ("effective_from", "effective_to"):
            out[key] = _check_date(value, key)
        else:
            out[key] = value
    if out.get("effective_from") and out.get("effective_to") and out["effective_to"] < out["effective_from"]:
        raise ValidationError(f"effective_to {out['effective_to']} is before effective_from {out['effective_from']}")
    return out


def parse_markdown(text: str, source: str, vocab: Vocabulary | None = None, batch: Batch | None = None) -> Batch:
    """The units, facts and rejects of one Markdown note.

    >>> b = parse_markdown("atlas_id: kb-1\\n# nginx\\nnginx uses OpenSSL.\\n## Build\\n```tdb\\nnginx depends_on pcre.\\n```\\n",
    ...                    "notes/nginx.md")
    >>> [(u.id, u.topic, u.claim, u.source) for u, _ in b.units]
    [('kb-1#nginx', 'nginx', 'nginx uses OpenSSL.', 'atlas:kb-1'), ('kb-1#build', 'nginx: Build', '', 'atlas:kb-1')]
    >>> [(r[:3], r[4], r[5]) for r in b.rows]
    [(('nginx', 'uses', 'openssl'), 3, 'kb-1#nginx'), (('nginx', 'depends_on', 'pcre'), 6, 'kb-1#build')]
    """
    vocab = vocab if vocab is not None else Vocabulary()
    batch = batch if batch is not None else Batch(source)
    lines = text.split("\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    try:
        meta, used = parse_front_matter(lines)
    except FrontMatterError as exc:
        batch.rejects.append(_reject(source, exc.line, exc.column, f"front matter: {exc.reason}",
                                     lines[exc.line - 1] if 0 < exc.line <= len(lines) else ""))
        return batch
    try:
        fields = _unit_fields(meta)
    except ValidationError as exc:
        batch.rejects.append(_reject(source, min(used or {0}) + 1, 1, f"front matter: {exc}", ""))
        return batch
    atlas = meta.get("atlas_id")
    if isinstance(atlas, list):
        batch.rejects.append(_reject(source, min(used or {0}) + 1, 1, "front matter: atlas_id must be one value", ""))
        return batch
    atlas = (atlas or "").strip()
    restricted = bool(fields.get("acl") or fields.get("region") or fields.get("effective_from")
                      or fields.get("effective_to"))
    if restricted:   # the note's own aliases and inverses stay in the note (see _tdb_block)
        vocab = Vocabulary(dict(vocab.aliases), dict(vocab.inverses))
    base = atlas or source
    extra = {"file": source, **({"atlas_id": atlas} if atlas else {})}
    title = ""
    seen_ids: dict[str, int] = {}   # heading id -> the last suffix tried for it
    taken: set[str] = set()
    pending: list[tuple[Section, str, list, list, str]] = []
    for sec in _sections(lines, used):
        if sec.level == 1:
            title = sec.heading
        topic = sec.heading if sec.level < 2 or not title else f"{title}: {sec.heading}"
        prose, blocks, claim = _split_body(sec.body)
        root = uid = f"{base}#{slug(sec.heading or title or 'preamble')}"
        n = seen_ids.get(root, 1)
        while uid in taken:   # "H", "H", "H 2": the third is h-3, never a second h-2
            n += 1
            uid = f"{root}-{n}"
        seen_ids[root] = n
        taken.add(uid)
        pending.append((sec, uid, prose, blocks, claim))
        for first, block in blocks:  # pass 1: tdb blocks, so their aliases also guide extraction
            _tdb_block(batch, "\n".join(block), source, first, uid, vocab, restricted)
        if claim or blocks:
            unit = Unit(uid, topic=topic, claim=claim, source=f"atlas:{atlas}" if atlas else source,
                        chunk=sec.heading, extra=json.dumps({**extra, "heading_line": sec.line}, sort_keys=True),
                        **fields)
            batch.units.append((unit, sec.line))
    phrases = _phrases(vocab)
    unit_ids = {u.id for u, _ in batch.units}
    for sec, uid, prose, _, _ in pending:  # pass 2: prose
        if not prose or uid not in unit_ids:
            continue
        _extract_into(batch, prose, offsets, source, vocab, phrases, uid)
    batch.rows.sort(key=lambda r: r[4])  # file order (tdb blocks were compiled first)
    return batch


def _tdb_block(batch: Batch, text: str, source: str, first_line: int, uid: str, vocab: Vocabulary,
               restricted: bool = False) -> None:
    """Facts, rules, declarations and aliases of one fenced ``tdb`` block of unit ``uid``.

    In a restricted unit (acl, region or validity dates) rules and declarations apply only to callers
    who can see the unit: they are stored with the unit's id (declarations compiled to their rules).
    Its aliases and inverse declarations shape how the note itself is read (``vocab`` is then the
    note's own copy) and are not stored, so they never change how other files or queries are read.
    """
    # The block is compiled on its own and its line numbers moved to the file's (prefixing
    # first_line - 1 blank lines instead made a note of n blocks cost n^2 lines: 20k blocks > 300 s).
    shift = first_line - 1
    try:
        # against the default library, as a .tdb file is (store/tdbfile.py): a rule may not take a library
        # rule's name, nor close a `not` cycle with it, in a restricted note either
        from ..engine.rules import library_rules
        program = compile_source(text, source, vocab, library=library_rules)
    except ParseError as exc:
        lines = text.split("\n")
        for d in exc.diagnostics:
            moved = replace(d, line=d.line + shift if d.line > 0 else d.line,
                            reason=_AT_LINE.sub(lambda m: f"at line {int(m.group(1)) + shift}", d.reason))
            batch.rejects.append(Reject(moved, lines[d.line - 1] if 0 < d.line <= len(lines) else ""))
        return
    for f, line in program.facts:
        batch.add_fact(f, line + shift, uid)
    for k, v in program.labels.items():
        batch.labels.setdefault(k, v)
    rules = [(r, line + shift) for r, line in program.rules]
    declarations = [(d, line + shift) for d, line in program.declarations]
    if not restricted:
        batch.rules += rules
        batch.declarations += declarations
        batch.aliases += [(p, r, line + shift) for p, r, line in program.aliases]
        return
    from ..engine.rules import compile_declarations
    batch.unit_rules += [(r, line, uid) for r, line in rules]
    for d, line in declarations:
        if d.kind != "inverse":
            batch.unit_rules += [(r, line, uid) for r in compile_declarations([d])]


def _extract_into(batch: Batch, prose: list[tuple[int, str]], offsets: list[int], source: str,
                  vocab: Vocabulary, phrases: dict[str, str], uid: str | None) -> None:
    # Paragraphs of consecutive lines, so a sentence may span lines but never a blank line or a gap.
    para: list[tuple[int, str]] = []
    for item in prose + [(0, "")]:
        ln, text = item
        if text.strip() and (not para or para[-1][0] == ln - 1):
            para.append(item)
            continue
        if para:
            _extract_paragraph(batch, para, offsets[para[0][0] - 1], source, vocab, phrases, uid)
        para = [item] if text.strip() else []


def _extract_paragraph(batch: Batch, para: list[tuple[int, str]], base: int, source: str,
                       vocab: Vocabulary, phrases: dict[str, str], uid: str | None) -> None:
    """Facts of consecutive lines ``para``; ``base`` is the character offset of its first line."""
    text = "\n".join(t for _, t in para)
    first = para[0][0]
    for x in extract(text, phrases):
        line = first + text.count("\n", 0, x.start)
        try:
            s, r, o = vocab.orient(x.subject, x.relation, x.object)
            fact = Fact(s, r, o)
            ks, ko = vocab.symbol(x.subject), vocab.symbol(x.object)
        except ValidationError as exc:
            batch.rejects.append(_reject(source, line, 1, str(exc), x.sentence))
            continue
        detail = x.detail()
        detail["span"] = [base + x.start, base + x.end]
        batch.add_fact(fact, line, uid, detail)
        batch.labels.setdefault(ks, x.subject)
        batch.labels.setdefault(ko, x.object)


def read_markdown(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """Reader for ``.md`` / ``.markdown`` files (see the module docstring)."""
    text, batch = read_whole(path, source)
    if text is not None:
        parse_markdown(text.removeprefix("\ufeff").replace("\r\n", "\n"), source, vocab, batch)
        if not batch.units and not batch.rejects:
            batch.rejects.append(_reject(source, 1, 1, "the file holds no sections with text", ""))
    yield batch


def read_text(path: str, source: str, vocab: Vocabulary) -> Iterator[Batch]:
    """Reader for ``.txt``: facts extracted from every paragraph, streamed (no units).

    Each fact records its line, sentence and the sentence's character span in the file.
    """
    phrases = _phrases(vocab)
    batch = Batch(source)
    para: list[tuple[int, str]] = []
    offsets_base = 0
    para_base = 0
    any_text = False

    def flush() -> None:
        if para:
            _extract_paragraph(batch, para, para_base, source, vocab, phrases, None)

    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            decoded, bad = _decode(raw, source, line_no)
            batch.size += len(raw)
            if bad is not None:
                batch.rejects.append(bad)
                decoded = ""
            text = decoded.rstrip("\r\n")
            if text.strip():
                any_text = True
                if not para:
                    para_base = offsets_base
                para.append((line_no, text))
            else:
                flush()
                para = []
                if len(batch.rows) >= CHUNK:
                    yield batch
                    batch = Batch(source)
            offsets_base += len(decoded) if bad is None else len(raw)
    flush()
    if not any_text and not batch.rejects:
        batch.rejects.append(_reject(source, 1, 1, "the file holds no text", ""))
    yield batch


__all__ = ["Section", "parse_front_matter", "parse_markdown", "read_markdown", "read_text", "slug"]
