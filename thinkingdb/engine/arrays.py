"""Which engine answers a question with its answers held as arrays, for the general evaluator
(:mod:`thinkingdb.engine.query`, :mod:`thinkingdb.engine.stream`): the conjunction engine
(:mod:`thinkingdb.engine.conj`), the pairs of a closed relation (:mod:`thinkingdb.engine.pairs`) or
one pattern's answer set (:mod:`thinkingdb.engine.bulk`).

Kept apart from those engines so that a question loads only the one that answers it (issue 20: a cold
question pays for every module it imports).
"""

from __future__ import annotations

from ..model import Limits, Query, Var

__all__ = ["array_answers"]


def array_answers(view, query: Query, limits: Limits, deadline, aggregate: str):
    """``(answers, truncated)`` held as arrays — a conjunction run with the closure (its table), one
    pattern with both ends free (:func:`thinkingdb.engine.pairs.pair_answers`) or with a constant end
    (:func:`thinkingdb.engine.bulk.bulk_answers`) — or None."""
    table = getattr(view, "table", None)
    if table is not None and table.query is query:
        from .conjanswers import table_answers
        return table_answers(view, table, aggregate), view.truncated
    pats = query.patterns
    if len(pats) == 1 and isinstance(pats[0].subject, Var) and isinstance(pats[0].object, Var):
        from .pairs import pair_answers   # both ends free over a closed relation (pairs loads numpy)
        got = pair_answers(view, query, limits, deadline, aggregate)
        if got is not None:
            return got
    from .bulk import bulk_answers
    return bulk_answers(view, query, limits, deadline, aggregate)
