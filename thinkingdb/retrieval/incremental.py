"""The lanes of a new store generation derived from those of the previous one plus what the writes
in between changed, instead of read and built from the whole store again (docs/serve.md).

What changed comes from the store's write log (:mod:`thinkingdb.store.writelog`): the origins the
writes touched. Their rows are read twice by origin — on a connection still pinned at the old
generation, and on one at the new — which gives the units removed and added, the facts whose
provenance changed, and the symbols whose labels may have changed. From those:

- the fact graph is the graph file with its delta (opened, not rebuilt);
- units, the access table, who asserted what (:class:`~thinkingdb.retrieval.lanes.FactAccess`), the
  topic index and labels are copied from the old lanes and changed where the changes say;
- a caller view's fact graph is the old one patched: an in-memory graph with
  :meth:`FactGraph.patched`, a restricted graph-file graph by laying the write's changes over its
  overlay (:func:`thinkingdb.store.graphdelta.restricted`); its symbol matcher too
  (:meth:`SymbolMatcher.patched`);
- BM25 view indexes and the HDC index are reused as they are when no unit changed, else forked and
  the changed units removed and added (no other unit is tokenized or encoded again);
- rules and declarations are read again (small tables).

The old lanes are never changed: readers of the old snapshot keep seeing the old state. When the
log does not cover the writes, or they changed more than :data:`MAX_CHANGED` rows, :func:`derive`
returns None and the caller builds the lanes from the store as before.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ..model import Triple
from ..store.access import AccessTable, View

__all__ = ["MAX_CHANGED", "Changes", "read_changes", "derive"]

MAX_CHANGED = 50_000   # provenance rows and units of the touched origins (old + new) past which all is read again


@dataclass
class Changes:
    """What the writes between two generations changed, read by origin from both states."""

    origins: set[int]
    removed: set[str] = field(default_factory=set)          # unit ids of the touched origins before
    added: list = field(default_factory=list)               # their units after (sorted by id)
    triples: set[Triple] = field(default_factory=set)       # facts whose provenance may have changed
    label_keys: set[str] = field(default_factory=set)       # symbols whose label may have changed

    @property
    def unit_ids(self) -> set[str]:
        return self.removed | {u.id for u in self.added}


def read_changes(old_conn, new_conn, old_gen: int, new_gen: int) -> Changes | None:
    """The changes between the states ``old_conn`` and ``new_conn`` see (each pinned in a read
    transaction), or None when the write log does not cover them or they are too many."""
    from ..store.sqlite import _UNIT_COLUMNS, _unit
    from ..store.writelog import touched
    origins = touched(new_conn, old_gen, new_gen)
    if origins is None:
        return None
    ch = Changes(origins)
    if not origins:
        return ch
    ph = ",".join("?" * len(origins))
    args = sorted(origins)
    size = 0
    for conn in (old_conn, new_conn):
        size += conn.execute(f"SELECT count(*) FROM provenance WHERE origin IN ({ph})", args).fetchone()[0]
        size += conn.execute(f"SELECT count(*) FROM units WHERE origin IN ({ph})", args).fetchone()[0]
    if size > MAX_CHANGED:
        return None
    ch.removed = {uid for (uid,) in old_conn.execute(f"SELECT id FROM units WHERE origin IN ({ph})", args)}
    ch.added = [_unit(row) for row in new_conn.execute(
        f"SELECT {_UNIT_COLUMNS} FROM units WHERE origin IN ({ph}) ORDER BY id", args)]
    for conn in (old_conn, new_conn):
        ch.triples.update(Triple(s, r, o) for s, r, o in conn.execute(
            f"SELECT f.subject, f.relation, f.object FROM provenance p JOIN facts f ON f.id = p.fact "
            f"WHERE p.origin IN ({ph})", args))
        ch.label_keys.update(k for (k,) in conn.execute(f"SELECT key FROM symbols WHERE origin IN ({ph})", args))
    return ch


# -- the state (units, who asserted what) -------------------------------------------------------------
def _units(old_units: list, ch: Changes) -> list:
    gone = ch.unit_ids
    if not gone:
        return old_units
    kept = [u for u in old_units if u.id not in gone]
    return sorted(kept + ch.added, key=lambda u: u.id)   # two sorted runs: a merge


def _fact_access(old, conn, ch: Changes, old_unit_facts, reader=None) -> object:
    """The old :class:`FactAccess` with the affected units and triples read again (a new lazy one,
    reading through ``reader``, when the old one was read lazily and never whole)."""
    from .lanes import FactAccess
    units = set(ch.unit_ids)
    units.update(u for t in ch.triples for u in old.fact_units.get(t, ()))
    triples = set(ch.triples)
    for u in units:
        triples.update(t for t, _ in old_unit_facts.get(u, ()))
    if reader is not None and getattr(old, "lazy", False) and old._full is None:
        from ..store.stateread import LazyFactAccess
        return LazyFactAccess(reader), triples, units
    fa = FactAccess.__new__(FactAccess)
    fa.unit_facts, fa.fact_units, fa.public = dict(old.unit_facts), dict(old.fact_units), dict(old.public)
    for t in triples:
        rows = conn.execute("SELECT p.unit_id, p.confidence FROM provenance p JOIN facts f ON f.id = p.fact "
                            "WHERE f.subject = ? AND f.relation = ? AND f.object = ?",
                            (t.subject, t.relation, t.object)).fetchall()
        by_unit: dict[str, float] = {}
        public = None
        for uid, c in rows:
            if uid is None:
                public = c if public is None else max(public, c)
            else:
                by_unit[uid] = max(c, by_unit.get(uid, 0.0))
                units.add(uid)
        fa.fact_units.pop(t, None)
        fa.public.pop(t, None)
        if by_unit:
            fa.fact_units[t] = by_unit
            if public is not None:
                fa.public[t] = public
    for uid in units:
        seen: dict[Triple, float] = {}
        for s, r, o, c in conn.execute(
                "SELECT f.subject, f.relation, f.object, p.confidence FROM provenance p JOIN facts f "
                "ON f.id = p.fact WHERE p.unit_id = ? ORDER BY p.rowid", (uid,)):
            seen.setdefault(Triple(s, r, o), c)
        if seen:
            fa.unit_facts[uid] = list(seen.items())
        else:
            fa.unit_facts.pop(uid, None)
    return fa, triples, units


# -- the lanes -------------------------------------------------------------------------------------------
def derive(old_lanes, kb, ch: Changes, views: list[tuple]) -> object:
    """The lanes of ``kb`` (a knowledge base pinned at the new generation) derived from ``old_lanes``
    and the changes ``ch``; what ``views`` — ``(caller, day)`` pairs — had built in the old lanes is
    carried over. Sets ``kb``'s state, so :func:`~thinkingdb.retrieval.lanes.lanes_for` returns them."""
    from dataclasses import replace
    from .lanes import _CACHE, Lanes, topic_key
    old_state = old_lanes.state
    gen = kb.store.current_generation()
    graph = kb._open_graph()
    rules, unit_rules = kb._read_rules()
    from ..store.stateread import StateReader, StoreUnits, read_access
    reader = StateReader(kb.store, None)          # kb's connection is pinned at the new generation
    lazy_units = isinstance(old_state.units, StoreUnits) and not old_state.units.loaded
    if lazy_units:                                # never read whole: read on first use at the new state
        units = StoreUnits(reader, kb.store.conn.execute("SELECT count(*) FROM units").fetchone()[0])
    else:
        units = _units(old_state.units, ch)
    facts, triples, _ = _fact_access(old_state.facts, kb.store.conn, ch, old_state.facts.unit_facts, reader)
    state = replace(old_state, generation=gen, graph=graph, rules=rules, unit_rules=unit_rules, units=units, facts=facts)
    state.reader = reader
    kb._cache = state
    changed_units = ch.unit_ids
    access = old_lanes.access if not changed_units else (
        AccessTable.from_rows(read_access(kb.store.conn)) if lazy_units else AccessTable(units))
    state.access = access
    new = Lanes(kb, state, access)
    new._tokenizer = old_lanes._tokenizer
    _CACHE[kb] = new
    ends = {x for t in triples for x in (t.subject, t.object)}

    # labels of every symbol, and the topic index
    if old_lanes._all_labels is not None:
        labels = dict(old_lanes._all_labels)
        if ch.label_keys:
            now = kb.store.labels_of(ch.label_keys)
            for k in ch.label_keys:
                if k in now:
                    labels[k] = now[k]
                else:
                    labels.pop(k, None)
        new._all_labels = labels
    if old_lanes._topics_all is not None:
        topics = old_lanes._topics_all
        if changed_units:
            topics = dict(old_lanes._topics_all)
            for u in [old_lanes.by_id[i] for i in ch.removed if i in old_lanes.by_id] + ch.added:
                k = topic_key(u)
                if k is not None and k in topics:
                    topics[k] = [i for i in topics[k] if i != u.id]
                    if not topics[k]:
                        del topics[k]
            for u in ch.added:
                k = topic_key(u)
                if k is not None:
                    lst = topics[k] = list(topics.get(k, ()))
                    bisect.insort(lst, u.id)
        new._topics_all = topics
        if old_lanes._topics is not None:
            recheck = ends | {k for u in ch.added if (k := topic_key(u))} | {
                k for i in ch.removed if i in old_lanes.by_id and (k := topic_key(old_lanes.by_id[i]))}
            filtered = dict(old_lanes._topics)
            for k in recheck:
                if k in topics and graph.symbol_id(k) is not None:
                    filtered[k] = topics[k]
                else:
                    filtered.pop(k, None)
            new._topics = filtered

    # the HDC index over all units
    if old_lanes._hdc is not None:
        idx, _ = old_lanes._hdc
        if changed_units:
            idx = idx.fork()
            for uid in ch.removed:
                idx.discard(uid)
            from .lanes import _unit_fields
            for u in ch.added:
                idx.add(u.id, _unit_fields(u))
        new._hdc = (idx, new._hdc_version())

    done: set[str] = set()
    for caller, day in views:
        ov, nv = old_lanes.access.view(caller, day), new.access.view(caller, day)
        okey = "all" if ov.everything else ov.fingerprint
        nkey = "all" if nv.everything else nv.fingerprint
        if nkey in done:
            continue
        done.add(nkey)
        _carry_view(old_lanes, new, ov, nv, okey, nkey, ch, triples, ends)
    return new


def _carry_view(old, new, ov: View, nv: View, okey: str, nkey: str, ch: Changes, triples: set, ends: set) -> None:
    from .lanes import _unit_fields
    got = old._bm25_views.get(okey)
    if got is not None:
        idx, _ = got
        if ch.unit_ids:
            idx = idx.fork()
            for uid in ch.unit_ids:
                if uid in idx:
                    idx.remove(uid)
            row = new.access.row
            for u in ch.added:
                if nv.mask[row[u.id]]:
                    idx.add(u.id, _unit_fields(u))
        new._bm25_views.get_or(nkey, lambda: (idx, new._bm25_version(nv)))
    og = old._graphs.get(okey)
    if og is not None:
        ng = None
        if nv.everything:
            ng = new.state.graph
        else:
            full, fa, visible = new.state.graph, new.facts, new.visible_unit(nv)
            want: dict[Triple, float | None] = {}
            for t in triples:
                c = full.confidence(t)
                if c is not None and any(not visible(u) for u in fa.fact_units.get(t, ())):
                    c = fa.visible_confidence(t, visible)
                want[t] = c
            if og is old.state.graph:          # nothing hidden changed a fact: the full graph served
                if all(c == full.confidence(t) for t, c in want.items()):
                    ng = full
            elif not og.is_mapped:
                ng = og.patched({t: c for t, c in want.items() if og.confidence(t) != c})
            elif og.file is not None and full.file is not None and og.file.stamp == full.file.stamp:
                # the caller's differences laid over the same base file: the write's changes on top
                from ..store.graphdelta import restricted
                ng = restricted(og, [(t.subject, t.relation, t.object, c) for t, c in want.items()
                                     if og.confidence(t) != c], base=full.file)
        if ng is not None:
            new._graphs.get_or(nkey, lambda: ng)
            _carry_matcher(old, new, ov, nv, okey, nkey, og, ng, ch, ends)


def _carry_matcher(old, new, ov, nv, okey, nkey, og, ng, ch: Changes, ends: set) -> None:
    """Labels of the view and its symbol matcher, patched for the symbols whose presence or label
    may have changed (rules and aliases unchanged; else they are built again when first needed)."""
    olabels = old._labels.get(okey)
    if olabels is None or new._all_labels is None:
        return
    recheck = ends | ch.label_keys
    labels = dict(olabels)
    for k in recheck:
        if k in new._all_labels and ng.symbol_id(k) is not None:
            labels[k] = new._all_labels[k]
        else:
            labels.pop(k, None)
    new._labels.get_or(nkey, lambda: labels)
    om = old._matchers.get(okey)
    orules, nrules = old.rules(ov), new.rules(nv)
    if om is None or orules != nrules or old.kb.store.vocabulary().aliases != new.kb.store.vocabulary().aliases:
        return
    consts = {t for r in nrules for a in r.premises + (r.head,) for t in (a.subject, a.object) if isinstance(t, str)}
    diff = {}
    for k in recheck:     # a key is matched on its words and its label's (a constant has no label)
        before = olabels.get(k, k) if k in olabels or k in consts else None
        after = labels.get(k, k) if k in labels or k in consts else None
        if before != after:
            diff[k] = (before, after)
    relations = sorted(set(ng.relations()) | {r.head.relation for r in nrules})
    new._matchers.get_or(nkey, lambda: om.patched(diff, relations, aliases=new.kb.store.vocabulary().aliases))
