"""Each package has one public surface: ``__all__`` lists exactly its public names (STYLE 2)."""

import importlib
import types

import pytest


@pytest.mark.parametrize("name", ["grammar", "lexical", "hdc", "thinkingdb"])
def test_all_matches_public_names(name):
    mod = importlib.import_module(name)
    for n in getattr(mod, "__all__", ()):  # thinkingdb imports its names on first use (PEP 562)
        getattr(mod, n)
    public = {n for n, v in vars(mod).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"}
    assert set(mod.__all__) - {"__version__"} == public - {"__version__"}
    for n in mod.__all__:
        assert hasattr(mod, n)


def test_leaves_import_no_project_package():
    import ast
    import pathlib
    root = pathlib.Path(__file__).resolve().parent.parent
    for leaf in ("grammar", "lexical", "hdc"):
        for path in (root / leaf).glob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for n in names:
                    top = n.split(".")[0]
                    assert top not in {"grammar", "lexical", "hdc", "thinkingdb"} - {leaf}, f"{path} imports {n}"


def test_leaf_errors_are_translated_at_the_boundary():
    import grammar
    import thinkingdb
    from thinkingdb.errors import translate
    try:
        grammar.parse("a b c @2.")
    except grammar.GrammarError as exc:
        err = translate(exc)
    assert isinstance(err, thinkingdb.ParseError)
    assert err.diagnostics[0].reason == "confidence must be in [0, 1], got 2"
    with pytest.raises(thinkingdb.ParseError):
        thinkingdb.compile_source("a b c @2.")
