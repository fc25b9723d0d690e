"""Store.vocabulary reads the symbol mode, aliases and inverse declarations in one statement; the
separate reads it replaced (one per table, as ``symbol_mode``, the aliases in force and
``declarations`` give them) are the oracle."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings, strategies as st

from thinkingdb.model import Declaration
from thinkingdb.normalize import Vocabulary
from thinkingdb.store.sqlite import Store


def separate_reads(store: Store) -> Vocabulary:
    conn = store.conn
    row = conn.execute("SELECT value FROM meta WHERE key = 'symbols'").fetchone()
    v = Vocabulary(mode=row[0] if row else "folded")
    for phrase, rel, _ in conn.execute("SELECT phrase, relation, max(origin) FROM aliases GROUP BY phrase ORDER BY phrase"):
        v.aliases[phrase] = rel
    for rel, kind, other in conn.execute("SELECT DISTINCT relation, kind, other FROM declarations "
                                         "ORDER BY relation, kind, other"):
        if kind == "inverse" and other:
            v.inverses[other] = rel
    return v


def test_the_latest_source_s_alias_and_each_inverse(tmp_path):
    with Store(str(tmp_path / "kb.sqlite")) as s:
        with s.transaction():
            s.add_aliases([("needs", "depends_on", "a.tdb", 1), ("uses", "employs", "a.tdb", 2)])
            s.add_declarations([(Declaration("part_of", "inverse", "has_part"), "a.tdb", 3),
                                (Declaration("part_of", "transitive"), "a.tdb", 4)])
        with s.transaction():
            s.add_aliases([("needs", "requires", "b.tdb", 1)])
            s.add_declarations([(Declaration("contains_of", "inverse", "has_part"), "b.tdb", 2)])
        v = s.vocabulary()
        # b.tdb came later: its "needs"; has_part is declared the inverse of two relations, the last in
        # relation order (part_of after contains_of) stands, as the separate reads left it
        assert v.aliases == {"needs": "requires", "uses": "employs"}
        assert v.inverses == {"has_part": "part_of"}
        assert v.mode == "iris" and list(v.aliases) == ["needs", "uses"]
        s.conn.execute("DELETE FROM meta WHERE key = 'symbols'")   # a store made before the modes
        assert s.vocabulary().mode == "folded"


names = st.sampled_from(["a", "b", "c", "d", "needs", "has_part"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), names, names), max_size=8),
       st.lists(st.tuples(st.integers(0, 2), names, st.sampled_from(["inverse", "transitive", "symmetric"]), names),
                max_size=8),
       st.sampled_from([None, "folded", "quoted"]))
def test_one_statement_reads_what_the_separate_reads_do(aliases, decls, mode):
    path = os.path.join(tempfile.mkdtemp(), "kb.sqlite")
    with Store(path) as s:
        if mode is not None:
            s.set_symbol_mode(mode)
        for batch in range(3):
            with s.transaction():
                s.add_aliases([(p, r, f"s{src}.tdb", i) for i, (src, p, r) in enumerate(aliases) if src == batch])
                s.add_declarations([(Declaration(r, k, o if k == "inverse" else None), f"s{src}.tdb", i)
                                    for i, (src, r, k, o) in enumerate(decls) if src == batch])
        got, want = s.vocabulary(), separate_reads(s)
        assert (got.mode, got.aliases, got.inverses) == (want.mode, want.aliases, want.inverses)
        assert list(got.aliases) == list(want.aliases) and list(got.inverses) == list(want.inverses)
