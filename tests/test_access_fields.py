"""Access fields in every spelling the readers meet: understood exactly, or the ingest is refused.

A misspelled or ill-formed access field must never leave a unit public (issue 21).
"""

import json

import pytest

from thinkingdb.errors import IngestError
from thinkingdb.store.ingest import ingest
from thinkingdb.store.markdown import parse_markdown
from thinkingdb.store.sqlite import Store

BODY = "# Vault\n\nThe vault uses ZXQ-code-4711.\n"


def _units(tmp_path, name: str, data: str | bytes):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    with Store(str(tmp_path / "kb.sqlite")) as st:
        ingest(st, [str(p)])
        return {u.id: u for u in st.units()}


@pytest.mark.parametrize("front", [
    "---\nacl:\n  - hr:secret\n---\n",                    # YAML block list
    "---\nacl:\n- hr:secret\n---\n",                      # block list at the key's indentation
    "---\nacl: [hr:secret]\n---\n",
    "---\nacl: [\"hr:secret\"]\n---\n",                    # quoted inside a flow list: stored bare
    "---\nacl: 'hr:secret'\n---\n",
    "---\nacl: hr:secret   # the HR team only\n---\n",    # a YAML comment after the value
    "---\n# comment\n\nacl: hr:secret\n...\n",
    "\n\n---\nacl: hr:secret\n---\n",                     # blank lines before the block
    "acl: hr:secret\n",                                   # a plain line before the first heading
    "acl:\n  - hr:secret\n",                              # a block list before the first heading
])
@pytest.mark.parametrize("encoding", ["plain", "bom", "crlf", "bom+crlf"])
def test_front_matter_spellings_keep_the_acl(tmp_path, front, encoding):
    text = front + BODY
    if "crlf" in encoding:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if "bom" in encoding:
        data = b"\xef\xbb\xbf" + data
    units = _units(tmp_path, "note.md", data)
    assert [u.acl for u in units.values()] == [("hr:secret",)]


@pytest.mark.parametrize("text, reason", [
    ("# Vault\nacl: hr:secret\n\nsecret text uses vault.\n", "after the first heading"),
    ("Vault\n=====\nacl: hr:secret\n\nsecret text.\n", "after the first heading"),          # setext heading
    ("Vault\n-----\nregion: EU\n\nsecret text.\n", "after the first heading"),
    ("---\nACL: hr:secret\n---\n" + BODY, "did you mean 'acl'"),
    ("---\nacl_tags: hr:secret\n---\n" + BODY, "did you mean 'acl'"),
    ("---\nvalid_to: 2020-01-01\n---\n" + BODY, "did you mean 'effective_to'"),
    ("---\nRegion: EU\n---\n" + BODY, "did you mean 'region'"),
    ("Access: hr:secret\n" + BODY, "did you mean 'acl'"),
    ("---\nowner: hr\n---\n" + BODY, "unknown front-matter key 'owner'"),
    ("---\nacl: |\n  hr:secret\n---\n" + BODY, "not understood"),
    ("---\nacl: [hr:secret\n---\n" + BODY, "not closed"),
    ("---\nacl: hr:secret\n" + BODY, "not closed"),
    ("---\nacl:\n---\n" + BODY, "no value"),
    ("---\nacl: \"\"\n---\n" + BODY, "no value"),
    ("---\nacl: [\" \"]\n---\n" + BODY, "empty tag"),
    ("---\nacl: a\nacl: b\n---\n" + BODY, "appears twice"),
    ("---\nacl: hr secret\n---\n" + BODY, "blank"),
    ("---\n  nested: x\n---\n" + BODY, "not understood"),
    ("\n".join(["filler"] * 40) + "\nacl: hr:secret\n" + BODY, "below line 32"),
])
def test_front_matter_not_understood_is_refused(tmp_path, text, reason):
    db = tmp_path / "kb.sqlite"
    p = tmp_path / "note.md"
    p.write_text(text, encoding="utf-8")
    with Store(str(db)) as st, pytest.raises(IngestError, match=reason) as err:
        ingest(st, [str(p)])
    assert err.value.first.line >= 1 and err.value.first.source.endswith("note.md")
    assert not db.exists()


def test_refusal_points_at_the_line():
    b = parse_markdown("# Vault\n\ntext\nacl: hr:secret\n", "n.md")
    assert [(r.diagnostic.line, r.diagnostic.column) for r in b.rejects] == [(4, 1)]
    assert not b.units


def test_setext_headings_make_sections():
    b = parse_markdown("Vault\n=====\n\nThe vault uses locks.\n\nDoors\n-----\n\nDoors use keys.\n", "n.md")
    assert [(u.id, u.topic, u.claim) for u, _ in b.units] == [
        ("n.md#vault", "Vault", "The vault uses locks."), ("n.md#doors", "Vault: Doors", "Doors use keys.")]


def test_prose_key_lines_are_not_front_matter():
    b = parse_markdown("Note: read this first.\n# T\n\nTitle: not metadata.\n", "n.md")
    assert not b.rejects and [u.acl for u, _ in b.units] == [(), ()]


@pytest.mark.parametrize("fields, reason", [
    ({"acl_tags": ["hr:secret"]}, "did you mean 'acl'"),
    ({"ACL": ["hr:secret"]}, "did you mean 'acl'"),
    ({"Region": "EU"}, "did you mean 'region'"),
    ({"valid_to": "2020-01-01"}, "did you mean 'effective_to'"),
    ({"acl": [" "]}, "empty tag"),
    ({"acl": ""}, "empty tag"),
    ({"acl": []}, "empty list"),
    ({"acl": ["\"hr:secret\""]}, "quote"),
    ({"acl": [7]}, "list of tag strings"),
    ({"region": "EU, US"}, "region"),
])
def test_jsonl_access_fields_refused(tmp_path, fields, reason):
    p = tmp_path / "u.jsonl"
    p.write_text(json.dumps({"id": "vault", "claim": "ZXQ-code-4711", **fields}) + "\n", encoding="utf-8")
    with Store(str(tmp_path / "kb.sqlite")) as st, pytest.raises(IngestError, match=reason):
        ingest(st, [str(p)])


def test_jsonl_good_access_fields_and_bom(tmp_path):
    line = json.dumps({"id": "vault", "claim": "x", "acl": [" HR:secret "], "region": " EU "})
    units = _units(tmp_path, "u.jsonl", b"\xef\xbb\xbf" + line.encode() + b"\r\n")
    assert (units["vault"].acl, units["vault"].region) == (("HR:secret",), "EU")
