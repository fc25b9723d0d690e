"""The SQL of a caller view's differences: the facts hidden or dangling units assert, at their best
visible confidence (the rule of :mod:`thinkingdb.store.access`; persisted by :mod:`thinkingdb.store.viewfile`).
"""

from __future__ import annotations

import json

__all__ = ["hidden_changes"]


def hidden_changes(conn, hidden_ids: list[str]) -> list[tuple]:
    """The facts a view hiding the units ``hidden_ids`` sees differently from the full graph, as
    ``(subject, relation, object, confidence or None)``: every fact some hidden unit — or a unit the
    store does not hold (dangling: visible to no one, store/access.py) — asserts whose best *visible*
    assertion — outside any unit, or by a unit that is neither hidden nor unknown — is missing (None:
    the fact is hidden) or lower than the fact's confidence. One SQL statement (finding the dangling
    ids costs one pass over the provenance index, ~0.27 s at 1M records).
    """
    rows = conn.execute(
        "WITH hidden(id) AS MATERIALIZED (SELECT value FROM json_each(?1) UNION ALL "
        "  SELECT d.unit_id FROM (SELECT DISTINCT unit_id FROM provenance WHERE unit_id IS NOT NULL) d "
        "  WHERE d.unit_id NOT IN (SELECT id FROM units)), "
        "touched(fact) AS MATERIALIZED (SELECT DISTINCT p.fact FROM provenance p "
        "  WHERE p.unit_id IN (SELECT id FROM hidden)) "
        "SELECT f.subject, f.relation, f.object, f.confidence, m.best FROM "
        "(SELECT p.fact AS fact, max(CASE WHEN p.unit_id IS NULL OR (p.unit_id NOT IN (SELECT id FROM hidden) "
        "  AND p.unit_id IN (SELECT id FROM units)) THEN p.confidence END) AS best "
        " FROM touched t JOIN provenance p ON p.fact = t.fact GROUP BY p.fact) m JOIN facts f ON f.id = m.fact",
        (json.dumps(hidden_ids),)).fetchall()
    return [(s, r, o, best) for s, r, o, c, best in rows if best is None or best != c]
