"""What a cold question imports (issue 20: the whole process, interpreter start and imports included).

A module set, not a wall-clock bound: ``import thinkingdb.api`` loads exactly the modules below, and a
plain question — through the API or ``thinkingdb query`` — or a small one the default rules close
loads no ``dataclasses`` (which compiles generated methods per class and imports ``inspect``, ``ast``,
``dis``, ``tokenize``) and, from the command line, not the parsers and modules of the other commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the project modules `import thinkingdb.api` runs: the store, the language and the model, no engine
API_MODULES = {
    "grammar", "grammar.ast", "grammar.errors", "grammar.values",
    "thinkingdb", "thinkingdb.api", "thinkingdb.arith", "thinkingdb.errors", "thinkingdb.language",
    "thinkingdb.model", "thinkingdb.normalize", "thinkingdb.numeric", "thinkingdb.store",
    "thinkingdb.store.locking", "thinkingdb.store.sqlite", "thinkingdb.values",
}
# what compiling dataclasses costs a fresh process (dataclasses imports inspect, which imports the rest)
NO_DATACLASSES = ("dataclasses", "inspect", "ast", "dis", "tokenize", "linecache")
OTHER_COMMANDS = ("thinkingdb.cli.search", "thinkingdb.cli.tools", "thinkingdb.cli.serve",
                  "thinkingdb.cli.materialize", "thinkingdb.store.stdin")
NO_HELP = ("shutil", "bz2", "lzma")   # what argparse's own formatter imports to find the terminal's width
# what a question on ASCII names whose rules have no `not` premise does not need: the stratifier and
# Unicode's tables (NFKC of ASCII text is the text itself); nor does any question need typing (~3 ms:
# annotations are strings, and the modules test a TYPE_CHECKING = False of their own)
NOT_NEEDED = ("thinkingdb.stratify", "unicodedata", "typing")
# nor, when no rule has one premise (the GO worker's: a transitive declaration's two), the layer rules'
# splitter (engine/layer.py)
NO_LAYER = ("thinkingdb.engine.layer",)
# nor the sqlite3 package (its wrapper of _sqlite3 imports datetime for date adapters no store uses), nor
# json (the graph file's header is read by json's C scanner) nor datetime (a store without units); and
# `import thinkingdb.api` alone loads no json (rules, units, indexes and exports import it), no datetime
# (access dates) and no grammar.safety (a rule's variables: a question has no rule to check)
NOT_NEEDED_ANY = NOT_NEEDED + ("sqlite3", "json", "datetime")
NOT_BY_IMPORT = NOT_NEEDED_ANY + ("json", "datetime", "grammar.safety")
# nor, for any question, the store's write side, whole-store reads, units or stored rules' JSON: sqlite.py
# holds what a question reads, the rest of Store is imported on first use (store/transact.py, adding.py, ...)
STORE_WRITE_SIDE = ("thinkingdb.store.transact", "thinkingdb.store.adding", "thinkingdb.store.contents",
                    "thinkingdb.store.unit", "thinkingdb.store.rulejson")

# nor a delta's composition or the cleanup of dead writers' files (graphdelta re-exports them, loaded on
# first use): opening a current graph file needs neither
# nor, where nothing loaded them before (an installed package; `python -S`), re and what it loads, the
# context helpers, importlib and the Python half of bisect
NO_SITE_NOT_NEEDED = ("re", "enum", "contextlib", "importlib", "warnings", "bisect")
# nor, on a store whose state file is current (store/statefile.py), SQLite and what its C module imports
NO_CONNECTION = ("_sqlite3", "sqlite3", "functools", "collections", "thinkingdb.store.transact")

NOT_ON_READ = STORE_WRITE_SIDE + ("thinkingdb.store.deltacompose", "thinkingdb.store.storefiles")

_SCRIPT = """
import sys   # json only to print the result: the checks see what the question imported
kind, db = sys.argv[1], sys.argv[2]
before = set(sys.modules)
if kind == "import":
    import thinkingdb.api
    found = None
elif kind == "api":
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(db, default_rules=False) as kb:
        found = [sorted(a.bindings["x"] for a in kb.query("? a r ?x.").answers), len(kb.query("? ?x r c.").answers),
                 len(kb.query("? ?x r+ c, a r ?y.").answers)]
elif kind == "rules":   # depends_on is transitive in the default library: small single-source questions
    from thinkingdb.api import KnowledgeBase
    with KnowledgeBase(db) as kb:
        found = [sorted(a.bindings["x"] for a in kb.query("? a depends_on ?x.").answers),
                 [str(p.conclusion) for p in kb.why("a depends_on d").premises],
                 len(kb.query("? a depends_on ?x, ?x depends_on ?y.").answers)]
elif kind in ("declared", "ruled", "unicode"):   # scale.py's GO worker: the rules plus a file of its own
    from thinkingdb.api import KnowledgeBase
    kb = KnowledgeBase(db, readonly=False)
    kb.add_rules_file(sys.argv[3])
    found = sorted(a.bindings["x"] for a in kb.query(sys.argv[4]).answers)
    import thinkingdb.arith, thinkingdb.normalize, thinkingdb.store.columns
    # no comparison: number()'s patterns never compiled; every name a key or a CURIE: nor the fold's; nor
    # the IRI pattern (str methods check it), nor a 512 KiB block of ones for a relation under 65,536 facts
    import thinkingdb.engine.smallsource as small
    found = [found, thinkingdb.arith._NUMBER is None, thinkingdb.normalize._FOLDS is None,
             "_IRI" not in vars(thinkingdb.normalize), small._ONES == b"", "_DTYPE" not in vars(thinkingdb.store.columns)]
else:
    import contextlib, io
    from thinkingdb.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["query", "--db", db, "--no-default-rules", "? a r ?x."])
    found = [code, out.getvalue()]
new, loaded = sorted(set(sys.modules) - before), sorted(sys.modules)
import json
print(json.dumps({"found": found, "new": new, "all": loaded}))
"""


def fresh(kind: str, db: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _SCRIPT, kind, db, *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from thinkingdb.api import KnowledgeBase
    path = str(tmp_path_factory.mktemp("cold") / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "r", "b"), ("b", "r", "c"), ("a", "r", "c")])
        len(kb.graph)   # the graph file is written, as an earlier question would have
    return path


def project(modules) -> set[str]:
    return {m for m in modules if m.split(".")[0] in ("thinkingdb", "grammar", "lexical", "hdc")}


def test_import_of_the_api_loads_exactly_its_modules(store):
    got = fresh("import", store)
    assert project(got["new"]) == API_MODULES - {"thinkingdb.stratify"}
    assert [m for m in got["all"] if m in NO_DATACLASSES or m in NOT_BY_IMPORT or m in NOT_ON_READ] == []


def test_a_plain_question_compiles_no_dataclass(store):
    got = fresh("api", store)
    assert got["found"] == [["b", "c"], 2, 4]   # a r b, a r c; a and b reach c; ?x in {a, b} times ?y in {b, c}
    assert "thinkingdb.engine.query" in got["all"]   # the oracle reads real imports
    assert [m for m in got["all"] if m in NO_DATACLASSES or m in NOT_NEEDED_ANY or m in NOT_ON_READ] == []


def test_a_small_question_with_the_rules_compiles_no_dataclass(tmp_path):
    from thinkingdb.api import KnowledgeBase
    path = str(tmp_path / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("a", "depends_on", "b"), ("b", "depends_on", "c"), ("c", "depends_on", "d")])
        len(kb.graph)
    got = fresh("rules", path)
    # a reaches b, c, d; the walk a..d split in the middle; (x, y) = (b, c), (b, d), (c, d)
    assert got["found"] == [["b", "c", "d"], ["a depends_on c", "c depends_on d"], 3]
    assert "thinkingdb.engine.closure" in got["all"]   # the rules ran
    assert [m for m in got["all"] if m in NO_DATACLASSES or m in NOT_NEEDED_ANY or m in NOT_ON_READ] == []


@pytest.fixture(scope="module")
def curies(tmp_path_factory):
    from thinkingdb.api import KnowledgeBase
    d = tmp_path_factory.mktemp("curies")
    path = str(d / "kb.sqlite")
    with KnowledgeBase(path) as kb:
        kb.add_facts([("GO:1", "is_a", "GO:2"), ("GO:2", "is_a", "GO:3"), ("e", "is_a", "GO:1")])
        len(kb.graph)
    (d / "declared.tdb").write_text("relation is_a transitive.\n", encoding="utf-8")
    (d / "ruled.tdb").write_text("rule up: ?x is_a ?y, not ?y is_a ?x => ?x above ?y.\n", encoding="utf-8")
    return path, str(d)


def test_the_go_worker_s_question_loads_no_stratifier_nor_unicode_tables(curies):
    """benchmarks/scale.py on GO: the default rules plus ``relation is_a transitive.``, a CURIE asked."""
    path, d = curies
    got = fresh("declared", path, d + "/declared.tdb", "? GO:1 is_a ?x.")
    assert got["found"] == [["GO:2", "GO:3"], True, True, True, True, True]   # GO:1 is_a GO:2 is_a GO:3, closed
    assert "thinkingdb.engine.closure" in got["all"]
    assert [m for m in got["all"] if m in NO_DATACLASSES or m in NOT_NEEDED_ANY or m in NO_LAYER or m in NOT_ON_READ] == []


def test_without_site_a_question_loads_no_urllib_nor_re(curies):
    """In this venv the interpreter's start (an editable install's finder) loads urllib.parse, re and the
    rest before any question; without site (``-S``, as in an installed package's process) what the
    question itself loads shows: not urllib.parse and ipaddress (a store's file URI is quoted by hand),
    nor re and enum (~4 ms: the quick parser reads words with string methods), nor contextlib, importlib,
    warnings or bisect.py; and, the state file being current, neither SQLite's C module nor the
    functools and collections it imports."""
    path, d = curies
    for kind in ("declared", "rules"):
        args = [d + "/declared.tdb", "? GO:1 is_a ?x."] if kind == "declared" else []
        db = path if kind == "declared" else d + "/rules.sqlite"
        if kind == "rules":
            from thinkingdb.api import KnowledgeBase
            with KnowledgeBase(db) as kb:
                kb.add_facts([("a", "depends_on", "b"), ("b", "depends_on", "c"), ("c", "depends_on", "d")])
                len(kb.graph)
        out = subprocess.run([sys.executable, "-S", "-c", _SCRIPT, kind, db, *args],
                             capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout.strip().splitlines()[-1])
        if kind == "declared":
            assert got["found"][0] == ["GO:2", "GO:3"]
        else:   # a -> b -> c -> d: a proof of `a depends_on d` has two premises through b or through c
            assert got["found"][0] == ["b", "c", "d"] and got["found"][2] == 3
            assert got["found"][1] in (["a depends_on b", "b depends_on d"], ["a depends_on c", "c depends_on d"])
        assert [m for m in got["new"] if m.split(".")[0] in ("urllib", "ipaddress")] == []
        assert [m for m in got["new"] if m in NO_SITE_NOT_NEEDED] == [], kind
        assert [m for m in got["new"] if m in NO_CONNECTION] == [], kind


def test_the_deferred_modules_load_when_needed(curies):
    """The same check sees them: a rule with ``not`` is stratified, a non-ASCII name is NFKC-normalized."""
    path, d = curies
    got = fresh("ruled", path, d + "/ruled.tdb", "? GO:1 above ?x.")
    assert got["found"][0] == ["GO:2"] and "thinkingdb.stratify" in got["all"]
    got = fresh("unicode", path, d + "/declared.tdb", "? \uff45 is_a ?x.")   # a fullwidth e: NFKC gives e
    assert got["found"] == [["GO:1", "GO:2", "GO:3"], True, False, True, True, True] and "unicodedata" in got["all"]


def test_the_command_line_builds_only_the_question_s_command(store):
    got = fresh("cli", store)
    assert got["found"][0] == 0 and got["found"][1].splitlines() == ["?x = b  (score 1)", "?x = c  (score 1)"]
    assert "thinkingdb.cli.main" in got["all"]
    assert [m for m in got["all"] if m in NO_DATACLASSES or m in OTHER_COMMANDS or m in NO_HELP or m in NOT_ON_READ] == []
    # nor typing (cli/main.py's annotations are strings) nor json (a text answer prints none)
    assert [m for m in got["all"] if m in NOT_NEEDED_ANY] == []


def test_the_checks_can_fail(store):
    """The same check sees the modules a heavier path loads: ingest's readers use dataclasses, and the
    full parser loads every command's module."""
    code = ("import sys; from thinkingdb.cli.main import build_parser; build_parser(); "
            "import thinkingdb.store.ingest; print(sorted(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    mods = set(eval(out.stdout))  # noqa: S307 - our own list literal
    assert "dataclasses" in mods and set(OTHER_COMMANDS[:4]) <= mods
    # and a write (the API's add_facts) loads the store's write side and units, a stats its whole-store reads
    code = ("import sys, tempfile, os; from thinkingdb.api import KnowledgeBase; "
            "kb = KnowledgeBase(os.path.join(tempfile.mkdtemp(), 'kb.sqlite')); kb.add_facts([('a', 'r', 'b')]); "
            "kb.stats(); print(sorted(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    mods = set(eval(out.stdout))  # noqa: S307 - our own list literal
    assert set(STORE_WRITE_SIDE) - {"thinkingdb.store.rulejson", "thinkingdb.store.unit"} <= mods


@pytest.mark.parametrize("command", ["ingest", "query", "why", "stats", "export"])
def test_a_command_s_own_parser_is_the_full_parser_s(command):
    from thinkingdb.cli.main import build_parser

    def sub(parser):
        return parser._subparsers._group_actions[0].choices[command]

    full, own = sub(build_parser()), sub(build_parser(command))
    assert own.format_help() == full.format_help()
    argv = {"ingest": ["f.tdb"], "query": ["? a r ?x.", "--limit", "3"], "why": ["a r b", "--sources"],
            "stats": [], "export": ["--format", "tsv"]}[command]
    assert vars(build_parser(command).parse_args([command, *argv])).keys() == \
        vars(build_parser().parse_args([command, *argv])).keys()


@pytest.mark.parametrize("columns", [None, "100", "0", "wide"])
def test_the_help_width_is_shutil_s(monkeypatch, columns):
    import shutil
    from thinkingdb.cli.commands import HelpFormatter, terminal_columns
    monkeypatch.delenv("COLUMNS", raising=False)
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    assert HelpFormatter("p")._width == __import__("argparse").HelpFormatter("p")._width


def test_the_hand_checks_are_the_patterns():
    """normalize's IRI check and columns' dtype check, written with str methods (no regex compiled by a
    question), against the patterns they replace, on generated texts and every code point in each place."""
    import re
    from hypothesis import given, settings, strategies as st
    from thinkingdb import normalize
    from thinkingdb.store.columns import itemsize
    iri, dtype = re.compile(normalize._IRI_SOURCE), re.compile(r"[<>|][iufb]([1248])")
    assert normalize._IRI.pattern == normalize._IRI_SOURCE   # the RDF reader's compiled pattern, on first use
    for c in map(chr, range(0, 0x3100)):
        for t in (c, "a:" + c, c + ":x", "a" + c + ":x", "a:x" + c):
            assert normalize._is_iri(t) == bool(iri.fullmatch(t)), repr(t)
    near = st.text(st.sampled_from("aZ09+.-: \t\u00a0\u2028\x85<>\"{}|^`\\\u00e9/_\x00\x1c"), max_size=8)

    @settings(max_examples=3000, deadline=None)
    @given(st.one_of(near, st.text(max_size=12)))
    def same_iri(t):
        assert normalize._is_iri(t) == bool(iri.fullmatch(t))

    @settings(max_examples=2000, deadline=None)
    @given(st.text(st.sampled_from("<>|iufbU1248x\n"), max_size=5))
    def same_dtype(t):
        m = dtype.fullmatch(t)
        assert itemsize(t) == (None if m is None else int(m.group(1)))

    same_iri()
    same_dtype()
    assert (itemsize("<i4"), itemsize("|b1"), itemsize("<i4\n"), itemsize(None)) == (4, 1, None, None)


def test_the_console_script_freezes_the_collector_before_exit_and_main_does_not(store):
    """pyproject's ``thinkingdb`` runs ``cli.run``: ``main``, then ``gc.freeze()`` (the process ends
    next; its exit then skips collecting over the modules' objects, ~3-5 ms of a cold question)."""
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        assert tomllib.load(fh)["project"]["scripts"]["thinkingdb"] == "thinkingdb.cli:run"
    for fn, frozen in (("run", True), ("main", False)):
        code = (f"import contextlib, gc, io, sys; from thinkingdb.cli import {fn}; out = io.StringIO()\n"
                f"with contextlib.redirect_stdout(out): code = {fn}(['query', '--db', {store!r}, '--no-default-rules', '? a r ?x.'])\n"
                "print(code, gc.get_freeze_count() > 0, out.getvalue().count('score'))")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
        assert got.returncode == 0, got.stderr
        assert got.stdout.split() == ["0", str(frozen), "2"]
