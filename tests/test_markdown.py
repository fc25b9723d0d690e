"""Markdown import: units per section, Atlas front matter, extracted and explicit facts; plain text."""

import json

import pytest

from thinkingdb.errors import IngestError
from thinkingdb.store.ingest import ingest
from thinkingdb.store.markdown import parse_front_matter, parse_markdown
from thinkingdb.model import Triple
from thinkingdb.store.sqlite import Store

NOTE = """\
---
atlas_id: sec-007
role: policy
acl: staff, security
region: eu
effective_from: 2024-01-01
---
# Secure Execution

AchillesIDE is relevant for secure execution. It is fast.

## Sandboxing

Ploinky provides sandboxed agents.
The sandbox depends on seccomp.

```tdb
alias "is guarded by" => guarded_by.
Ploinky uses WebAssembly @0.8.
```

## Threats

A prompt injection is guarded by the policy engine.

```python
x uses y
```

### Details stay in the section

Memory leaks cause outages.
"""


@pytest.fixture
def note(tmp_path):
    p = tmp_path / "secure.md"
    p.write_text(NOTE, encoding="utf-8")
    return p


def test_units_per_section_with_front_matter(note, tmp_path):
    with Store(str(tmp_path / "kb.sqlite")) as st:
        report = ingest(st, [str(note)])
        units = {u.id: u for u in st.units()}
    assert report.units == 3
    assert sorted(units) == ["sec-007#sandboxing", "sec-007#secure-execution", "sec-007#threats"]
    top = units["sec-007#secure-execution"]
    assert top.topic == "Secure Execution"
    assert top.claim == "AchillesIDE is relevant for secure execution. It is fast."
    assert (top.role, top.acl, top.region, top.effective_from) == ("policy", ("staff", "security"), "eu", "2024-01-01")
    assert top.source == "atlas:sec-007"
    assert json.loads(top.extra)["atlas_id"] == "sec-007"
    sand = units["sec-007#sandboxing"]
    assert sand.topic == "Secure Execution: Sandboxing"
    assert "Ploinky uses WebAssembly" not in sand.claim  # the tdb block is facts, not claim text
    assert "### Details stay in the section" in units["sec-007#threats"].claim


def test_facts_extracted_and_explicit(note, tmp_path):
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [str(note)])
        facts = {str(f.triple): f.confidence for f in st.facts()}
        prov = st.provenance(Triple("achilleside", "relevant_for", "secure_execution"))
        explicit = st.provenance(Triple("ploinky", "uses", "webassembly"))
        labels = st.labels()
    assert facts == {
        "achilleside relevant_for secure_execution": 1.0,
        "ploinky provides sandboxed_agents": 1.0,
        "sandbox depends_on seccomp": 1.0,
        "ploinky uses webassembly": 0.8,
        # the alias from the tdb block also works as an extraction phrase
        "prompt_injection guarded_by policy_engine": 1.0,
        "memory_leaks causes outages": 1.0,
    }
    assert len(prov) == 1
    p = prov[0]
    assert (p["line"], p["unit_id"], p["sentence"]) == (10, "sec-007#secure-execution",
                                                         "AchillesIDE is relevant for secure execution.")
    start, end = p["span"]
    assert NOTE[start:end] == p["sentence"]
    assert (explicit[0]["line"], explicit[0]["unit_id"]) == (19, "sec-007#sandboxing")
    assert labels["achilleside"] == "AchillesIDE"


def test_atlas_line_without_block_and_no_atlas():
    b = parse_markdown("# Title\natlas_id: a-1\nnginx uses TLS.\n", "n.md")
    assert [u.id for u, _ in b.units] == ["a-1#title"]
    assert b.units[0][0].claim == "nginx uses TLS."
    b = parse_markdown("Intro uses words.\n# A\ntext\n# A\nmore text\n", "dir/n.md")
    assert [u.id for u, _ in b.units] == ["dir/n.md#preamble", "dir/n.md#a", "dir/n.md#a-2"]


def test_front_matter_only_in_first_lines():
    lines = ["# T"] + ["x"] * 40 + ["atlas_id: late"]
    assert parse_front_matter(lines) == ({}, set())


def test_bad_tdb_block_is_reported_with_file_line(tmp_path):
    p = tmp_path / "bad.md"
    p.write_text("# T\n\ntext here\n\n```tdb\na b c.\nbroken fact\n```\n", encoding="utf-8")
    db = tmp_path / "kb.sqlite"
    with Store(str(db)) as st:
        with pytest.raises(IngestError) as err:
            ingest(st, [str(p)])
    assert err.value.first.line == 7 and err.value.first.source.endswith("bad.md")
    assert not db.exists()  # a store created by the failed ingest is not left behind


def test_bad_front_matter_date(tmp_path):
    p = tmp_path / "d.md"
    p.write_text("---\neffective_from: 2024-13-01\n---\n# T\nbody\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st, pytest.raises(IngestError, match="effective_from"):
        ingest(st, [str(p)])


def test_plain_text(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("Dr. Who uses a TARDIS.\nThe TARDIS is part of\nGallifrey lore.\n\nNothing here.\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st:
        r = ingest(st, [str(p)])
        facts = sorted(str(f.triple) for f in st.facts())
        prov = st.provenance(Triple("tardis", "part_of", "gallifrey_lore"))
    assert r.units == 0 and r.facts == 2
    assert facts == ["dr._who uses tardis", "tardis part_of gallifrey_lore"]
    assert prov[0]["line"] == 2 and prov[0]["span"] == [23, 60]


def test_unit_id_held_by_another_source_is_refused(tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("atlas_id: same\n# T\nx uses y.\n", encoding="utf-8")
    b.write_text("atlas_id: same\n# T\nz uses w.\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [str(a)])
        with pytest.raises(IngestError, match="already belongs to source"):
            ingest(st, [str(b)])
        assert [u.id for u in st.units()] == ["same#t"]


def test_tdb_blocks_are_compiled_in_linear_work(monkeypatch):
    """20k headings each with a tdb block took over 300 s: every block was compiled with all the lines
    before it prefixed as blanks (n blocks, n^2 lines). The text compiled must stay linear in the note."""
    import thinkingdb.store.markdown as md
    compiled: list[int] = []
    real = md.compile_source
    monkeypatch.setattr(md, "compile_source", lambda text, *a, **kw: compiled.append(len(text)) or real(text, *a, **kw))
    block = "# H\n```tdb\na r b.\n```\n"
    note = block * 2000
    batch = parse_markdown(note, "n.md")
    assert len(compiled) == 2000 and sum(compiled) <= 2 * len(note)
    # the facts still carry their file lines: the fact of block k is on line 4k + 3
    assert [r[4] for r in batch.rows] == [4 * k + 3 for k in range(2000)]
    assert len({u.id for u, _ in batch.units}) == 2000


def test_tdb_block_lines_are_the_files():
    note = ("# A\ntext.\n\n# B\n```tdb\nx r y.\nflight(qa, syd, mel).\nflight(qa, syd).\n```\n"
            "```tdb\nrule r1: ?x r ?y => ?y r ?x.\nrelation r symmetric.\nalias \"links to\" => r.\n```\n")
    b = parse_markdown(note, "n.md")
    [rej] = b.rejects
    assert (rej.diagnostic.line, rej.record) == (8, "flight(qa, syd).")
    assert rej.diagnostic.reason.endswith("but 3 at line 7")      # the line named inside the reason too
    assert [line for _, line in b.rules] == [11]
    assert [line for _, line in b.declarations] == [12]
    assert [line for *_, line in b.aliases] == [13]


def test_repeated_heading_ids_never_collide_with_a_numbered_heading():
    # "H", "H", "H 2": the second H was h-2, and so was "H 2" — two units with one id
    b = parse_markdown("# H\nt.\n# H\nt.\n# H 2\nt.\n# H\nt.\n", "n.md")
    assert [u.id for u, _ in b.units] == ["n.md#h", "n.md#h-2", "n.md#h-2-2", "n.md#h-3"]
