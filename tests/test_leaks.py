"""The leak suite: restricted knowledge never reaches a caller who may not see it, through any door.

Units hold unique codes (``ZXQ…``) behind every kind of restriction — acl tags, region, validity in
the past and in the future, and Markdown front matter in every spelling the readers accept — in their
text, their facts, their symbols (one multi-word), and their rules' constants. Every entry point is
then asked, as an anonymous caller and as a caller with the wrong tags and region, and no code may
come back. Two oracles:

* **no code** in any output (results, proofs, traces, answers, provenance, labels, exports, reports);
* **non-interference**: what such a caller gets from the store equals what it gets from a store built
  without the restricted sources at all (timings and index fingerprints aside), so hidden knowledge
  changes neither scores, nor order, nor which query words match a symbol.

``COUNTS`` records entry points x restriction kinds tried; ``test_zz_report`` prints the table.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from thinkingdb.api import KnowledgeBase
from thinkingdb.cli.main import main
from thinkingdb.errors import IngestError
from thinkingdb.retrieval.evaluate import EvalCase, evaluate
from thinkingdb.store.access import Caller

CODE = re.compile(r"zxq", re.I)
COUNTS: Counter = Counter()

PUBLIC_TDB = """\
alice uses vault.
bob uses vault.
vault part_of bank.
alice manages bob.
"""

PUBLIC_JSONL = [{"id": "pub-vault", "topic": "Vault", "claim": "Alice and Bob use the vault of the bank.",
                 "triples": [["alice", "uses", "vault"]]}]


def _restricted_jsonl() -> list[dict]:
    base = {"topic": "Vault codes", "triples": []}
    out = []
    for kind, fields in (("tags", {"acl": ["hr:secret"]}), ("region", {"region": "US"}),
                         ("past", {"effective_to": "2001-01-01"}), ("future", {"effective_from": "2999-01-01"})):
        code = f"ZXQ{kind.upper()}7"
        out.append({**base, "id": f"zxq-{kind}", **fields,
                    "claim": f"The vault code is {code}. Alice uses {code} daily.",
                    "triples": [["alice", "knows", code], [code, "part_of", "vault"],
                                ["alice", "uses", f"zxq {kind} hidden phrase"]]})
    return out


FRONT = {   # every front-matter spelling the Markdown reader accepts
    "block-list": "---\nacl:\n  - hr:secret\n---\n",
    "flow-list": "---\nacl: [\"hr:secret\"]\n---\n",
    "quoted": "---\nacl: 'hr:secret'\n---\n",
    "legacy-line": "acl: hr:secret\n",
    "legacy-list": "acl:\n- hr:secret\n",
    "region": "---\nregion: US\n---\n",
    "expired": "---\neffective_to: 2001-01-01\n---\n",
    "bom-crlf": "\ufeff---\r\nacl: hr:secret\r\n---\r\n",
}


def _note(kind: str, front: str) -> str:
    code = f"ZXQMD{kind.upper().replace('-', '')}9"
    nl = "\r\n" if "\r\n" in front else "\n"
    body = (f"# Vault {code}\n\nAlice uses {code}. The vault depends on {code}.\n\n"
            f"```tdb\nalice knows {code}.\nrule leak_{kind.replace('-', '_')}: ?x uses vault => ?x knows \"{code}R\".\n"
            f"relation knows transitive.\n```\n\nSetext {code}\n------\n\nBob uses {code}.\n")
    return front + body.replace("\n", nl)


KINDS = ["tags", "region", "past", "future"] + [f"md:{k}" for k in FRONT]


def _build(tmp, restricted: bool) -> str:
    tmp.mkdir(exist_ok=True)
    (tmp / "public.tdb").write_text(PUBLIC_TDB, encoding="utf-8")
    (tmp / "public.jsonl").write_text("".join(json.dumps(u) + "\n" for u in PUBLIC_JSONL), encoding="utf-8")
    files = [str(tmp / "public.tdb"), str(tmp / "public.jsonl")]
    if restricted:
        (tmp / "secret.jsonl").write_text("".join(json.dumps(u) + "\n" for u in _restricted_jsonl()),
                                          encoding="utf-8")
        files.append(str(tmp / "secret.jsonl"))
        for kind, front in FRONT.items():
            p = tmp / f"note-{kind}.md"
            p.write_bytes(_note(kind, front).encode("utf-8"))
            files.append(str(p))
    db = str(tmp / "kb.sqlite")
    with KnowledgeBase(db) as kb:
        kb.ingest(files)
    return db


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    base = tmp_path_factory.mktemp("leaks")
    return _build(base / "full", True), _build(base / "public", False)


CALLERS = [None, Caller(tags=("sales:eu",), region="EU")]
AS_OF = "2026-05-27"
QUERIES_TEXT = ["vault code", "ZXQTAGS7", "zxq tags hidden phrase vault", "alice knows", "Alice uses vault",
                "zxq region hidden phrase", "ZXQMDBLOCKLIST9 vault", "what does alice know"]
QUERIES = ["? alice knows ?x.", "? ?x knows ?y.", "? alice knows+ ?x.", "? ?x part_of vault.",
           "? alice uses ?x.", "? alice (uses|knows){1,3} ?x.", "? ?x ^knows alice."]
WHYS = ["alice knows ZXQTAGS7", "alice knows ZXQMDBLOCKLIST9R", "alice uses vault"]


def _clean(obj):
    """Drop what may differ between two stores holding the same visible knowledge: timings, index
    versions and fingerprints, and counts of units or sources that exist but are not visible."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()
                if not any(x in k for x in ("ms", "timings", "version", "fingerprint", "elapsed"))}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return round(obj, 9)
    return obj


def _no_code(text: str, where: str, asked: str = "") -> None:
    """No code in ``text``, once the words of the caller's own question (echoed in traces) are removed."""
    for word in sorted(set(re.findall(r"\w+", asked)), key=len, reverse=True):
        if CODE.search(word):
            text = re.sub(re.escape(word), "", text, flags=re.I)
    m = CODE.search(text)
    assert m is None, f"{where}: leaked {text[max(0, m.start() - 60):m.end() + 60]!r}"


def _count(entry: str) -> None:
    for kind in KINDS:
        COUNTS[(entry, kind)] += 1


@pytest.mark.parametrize("profile", ["kb-fast", "kb-balanced", "kb-thinkingdb"])
@pytest.mark.parametrize("options", [{}, {"decompose": True}, {"alignment": True}])
def test_search_every_profile(stores, profile, options):
    full, public = stores
    with KnowledgeBase(full) as a, KnowledgeBase(public) as b:
        for caller in CALLERS:
            for text in QUERIES_TEXT:
                got = a.search(text, profile=profile, caller=caller, as_of=AS_OF, **options).to_json()
                _no_code(json.dumps(got), f"search {profile} {options} {text!r}", text)
                want = b.search(text, profile=profile, caller=caller, as_of=AS_OF, **options).to_json()
                if "time" in {r["trace"]["lanes"].get("closure", {}).get("truncated") for r in (got, want)}:
                    continue   # a closure cut by its 200 ms budget on a loaded machine: not comparable
                assert _clean(got) == _clean(want), (profile, options, text)
    _count(f"search {profile}" + "".join(f" +{k}" for k in options) + " (results, proofs, trace)")


def test_query_why_provenance_labels(stores):
    full, public = stores
    with KnowledgeBase(full) as a, KnowledgeBase(public) as b:
        for caller in CALLERS:
            for q in QUERIES:
                got, want = (kb.query(q, caller=caller, as_of=AS_OF) for kb in (a, b))
                _no_code(json.dumps(got.to_json()), f"query {q}")
                assert _clean(got.to_json()) == _clean(want.to_json()), q
            for w in WHYS:
                got, want = (kb.why(w, caller=caller, as_of=AS_OF) for kb in (a, b))
                _no_code(json.dumps(None if got is None else got.to_json()), f"why {w}", w)
                assert (got is None) == (want is None)
                _no_code(json.dumps(a.provenance("alice uses vault", caller=caller, as_of=AS_OF)), "provenance")
            _no_code(json.dumps(a.labels(caller=caller, as_of=AS_OF)), "labels")
            assert a.labels(caller=caller, as_of=AS_OF) == b.labels(caller=caller, as_of=AS_OF)
    for entry in ("query (API)", "why (API)", "provenance (API)", "labels (API)"):
        _count(entry)


@pytest.mark.parametrize("fmt", ["jsonl", "tsv", "dot", "graphml"])
def test_export(stores, fmt):
    full, public = stores
    with KnowledgeBase(full) as a, KnowledgeBase(public) as b:
        for caller in CALLERS:
            got = a.export(fmt, caller=caller, as_of=AS_OF)
            _no_code(got, f"export {fmt}")
            assert got == b.export(fmt, caller=caller, as_of=AS_OF)
        g = a.to_networkx()
        _no_code(json.dumps(sorted(map(str, g.edges(data=True)))), "to_networkx")
    _count(f"export {fmt}")
    if fmt == "jsonl":
        _count("to_networkx (API)")


def test_eval_report(stores):
    full, _ = stores
    cases = [EvalCase(f"c{i}", q, Caller(), "2026-05-27", ("pub-vault",), (), False)
             for i, q in enumerate(QUERIES_TEXT)]
    with KnowledgeBase(full) as kb:
        report = evaluate(kb, cases, ["kb-fast", "kb-balanced", "kb-thinkingdb"], k=10)
    _no_code(json.dumps(report.to_json()), "eval", " ".join(QUERIES_TEXT))
    _count("eval")


def _cli(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.parametrize("who", [[], ["--caller-tags", "sales:eu", "--region", "EU"]])
def test_cli_every_command(stores, who):
    full, _ = stores
    db = ["--db", full]
    runs = []
    for q in QUERIES:
        for fmt in ("text", "json", "tsv"):
            runs.append(db + ["query", q, "--format", fmt, "--as-of", AS_OF] + who)
    for w in WHYS:
        for fmt in ("text", "json", "dot"):
            runs.append(db + ["why", w, "--format", fmt, "--sources", "--as-of", AS_OF] + who)
    for fmt in ("jsonl", "tsv", "dot", "graphml"):
        runs.append(db + ["export", "--format", fmt] + who)
    for text in QUERIES_TEXT:
        for profile in ("kb-fast", "kb-balanced", "kb-thinkingdb"):
            runs.append(db + ["search", text, "--profile", profile, "--as-of", AS_OF] + who)
            runs.append(db + ["--json", "search", text, "--profile", profile, "--as-of", AS_OF] + who)
    for args in runs:
        code, out = _cli(args)
        assert code in (0, 1), (args, out)
        _no_code(out, " ".join(args), " ".join(args[2:]))
    for entry in ("cli query", "cli why", "cli export", "cli search"):
        _count(entry)


def test_allowed_caller_does_see(stores):
    """The suite can fail: a caller allowed to see the units gets the codes through the same doors."""
    full, _ = stores
    hr = Caller(tags=("hr:secret",))
    with KnowledgeBase(full) as kb:
        answers = {a.bindings["x"] for a in kb.query("? alice knows ?x.", caller=hr, as_of=AS_OF).answers}
        assert {"zxqtags7", "zxqmdblocklist9", "zxqmdblocklist9r"} <= answers
        assert kb.why("alice knows ZXQMDQUOTED9R", caller=hr, as_of=AS_OF) is not None   # a scoped rule
        assert "zxqregion7" in kb.export("tsv", caller=Caller(region="US"), as_of=AS_OF).lower()
        assert "zxqpast7" in kb.export("tsv", as_of="2000-06-01").lower()
        assert "zxq-tags" in kb.search("vault code ZXQTAGS7", caller=hr, as_of=AS_OF).ids()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=st.sampled_from(sorted(FRONT)), key_case=st.sampled_from(["acl", "ACL", "Acl", "acl_tags", "acls"]),
       tag=st.sampled_from(["hr:secret", " hr:secret ", "\"hr:secret\"", "", " "]),
       shape=st.sampled_from(["scalar", "flow", "block"]), where=st.sampled_from(["block", "legacy", "after"]),
       crlf=st.booleans(), bom=st.booleans())
def test_any_acl_spelling_is_hidden_or_refused(tmp_path_factory, spelling, key_case, tag, shape, where, crlf, bom):
    """Whatever the spelling, the note is either refused or hidden from an anonymous caller."""
    value = {"scalar": f" {tag}", "flow": f" [{tag}]", "block": f"\n  - {tag}"}[shape]
    line = f"{key_case}:{value}\n"
    code = "ZXQHYPO5"
    head = f"# Vault\n\nAlice uses {code}.\n"
    text = {"block": f"---\n{line}---\n{head}", "legacy": f"{line}{head}", "after": f"{head}{line}"}[where]
    if crlf:
        text = text.replace("\n", "\r\n")
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    tmp = tmp_path_factory.mktemp("hypo")
    (tmp / "n.md").write_bytes(data)
    with KnowledgeBase(str(tmp / "kb.sqlite")) as kb:
        try:
            kb.ingest([str(tmp / "n.md")])
        except IngestError:
            COUNTS[("ingest (refused)", "md:generated")] += 1
            return
        _no_code(kb.export("tsv"), f"generated note {data!r}")
        _no_code(json.dumps(kb.search("alice uses", profile="kb-thinkingdb").to_json()), f"search {data!r}")
        units = list(kb.store.units())
        assert units and all(u.acl == ("hr:secret",) for u in units), data
        COUNTS[("export+search", "md:generated")] += 1


def test_zz_report():
    """Print the table of the closing note (runs last in this module)."""
    entries = sorted({e for e, _ in COUNTS})
    print("\nleak suite: entry point x restriction kinds tried (0 leaks, or a test above failed)")
    for e in entries:
        kinds = [k for (x, k) in COUNTS if x == e]
        print(f"  {e:<50} {len(kinds):>3} kinds  {sum(COUNTS[(e, k)] for k in kinds):>4} runs")
    assert len(entries) >= 1


def test_unit_written_while_a_search_reads_the_store_is_not_leaked(tmp_path, monkeypatch):
    """The race of issue 21: a restricted unit committed by another process while a search reads the
    store. Units, facts and provenance are read in one read transaction, so the new unit is in all of
    them (and hidden) or in none — never a fact whose unit the access table does not know."""
    from thinkingdb.store.sqlite import Store
    (tmp_path / "pub.tdb").write_text(PUBLIC_TDB, encoding="utf-8")
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"id": "s", "acl": ["hr:secret"], "claim": "alice knows ZXQRACE1",
                                  "triples": [["alice", "knows", "ZXQRACE1"]]}) + "\n", encoding="utf-8")
    db = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(db) as kb:
        kb.ingest([str(tmp_path / "pub.tdb")])
    original = Store.rule_rows
    fired = []

    def rules_then_concurrent_write(self):   # read inside the state's read transaction (units come later, lazily)
        got = original(self)
        if not fired:
            fired.append(True)
            with KnowledgeBase(db) as other:          # another connection commits meanwhile
                other.ingest([str(secret)])
        return got
    monkeypatch.setattr(Store, "rule_rows", rules_then_concurrent_write)
    with KnowledgeBase(db) as kb:
        for _ in range(2):                            # during the write, then after it
            for profile in ("kb-fast", "kb-thinkingdb"):
                res = kb.search("alice knows vault", profile=profile).to_json()
                _no_code(json.dumps(res), "search during a concurrent ingest")
            _no_code(json.dumps(kb.query("? alice knows ?x.").to_json()), "query during a concurrent ingest")
    assert fired
