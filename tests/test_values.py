"""The value classes (grammar.values.Value) behave exactly as the frozen dataclasses they replaced.

The oracle is the dataclass itself: ``SPEC`` is each class's dataclass declaration as it stood before
(read from the old source with ``dataclasses.fields``: field order, defaults, which fields are compared,
shown and keyword-only, ``order=True``), rebuilt here with ``dataclasses.make_dataclass``. On the same
generated arguments the class and its dataclass must agree on equality, hash, order, repr,
``dataclasses.replace`` / ``fields`` / ``asdict``, pickling, copying and freezing.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import pickle

import pytest
from hypothesis import given, strategies as st

# module, class, flags, fields: "~" not compared, "!" not in repr, "*" keyword-only, "=default"
SPEC = [
    ("grammar.ast", "Symbol", "", "text ~!line=0 ~!column=0 ~!quoted=False"),
    ("grammar.ast", "Variable", "", "name ~!line=0 ~!column=0"),
    ("grammar.ast", "Relation", "", "text phrase=False ~!line=0 ~!column=0"),
    ("grammar.ast", "Fact", "", "subject relation object confidence=None ~!line=0 ~!column=0"),
    ("grammar.ast", "RelationDecl", "", "relation kind other=None ~!line=0 ~!column=0"),
    ("grammar.ast", "Alias", "", "phrase relation ~!line=0 ~!column=0"),
    ("grammar.ast", "Atom", "", "subject relation object negated=False ~!line=0 ~!column=0"),
    ("grammar.ast", "NaryAtom", "", "relation args negated=False ~!line=0 ~!column=0"),
    ("grammar.ast", "NaryFact", "", "relation args confidence=None ~!line=0 ~!column=0"),
    ("grammar.ast", "Arith", "", "op left right ~!line=0 ~!column=0"),
    ("grammar.ast", "Comparison", "", "left op right ~!line=0 ~!column=0"),
    ("grammar.ast", "RuleDecl", "", "name premises head weight=None ~!line=0 ~!column=0"),
    ("grammar.ast", "Step", "", "relation"),
    ("grammar.ast", "Inverse", "", "path"),
    ("grammar.ast", "Sequence", "", "parts"),
    ("grammar.ast", "Alternative", "", "options"),
    ("grammar.ast", "Repeat", "", "path min max ~exact=False"),
    ("grammar.ast", "Pattern", "", "subject path object ~!line=0 ~!column=0"),
    ("grammar.ast", "Query", "", "patterns ~!line=0 ~!column=0"),
    ("grammar.ast", "Why", "", "subject relation object negated=False ~!line=0 ~!column=0"),
    ("grammar.ast", "Document", "", "statements ~source='<string>'"),
    ("grammar.errors", "Diagnostic", "", "source line column reason snippet='' caret=0 code=''"),
    ("thinkingdb.model", "Var", "order", "name"),
    ("thinkingdb.model", "Node", "order", "relation args"),
    ("thinkingdb.model", "Atom", "", "subject relation object"),
    ("thinkingdb.model", "Triple", "order", "subject relation object"),
    ("thinkingdb.model", "Fact", "order", "subject relation object confidence=1.0"),
    ("thinkingdb.model", "Rule", "", "name premises head weight=1.0 negated=() constraints=()"),
    ("thinkingdb.model", "Declaration", "order", "relation kind other=None"),
    ("thinkingdb.model", "Limits", "",
     "*max_depth=None *max_nodes=None *max_derived=None *timeout_ms=None *max_rows=None"),
    ("thinkingdb.model", "Provenance", "", "source line=0 unit_id=None ~note=''"),
    ("thinkingdb.model", "PathRel", "", "relation"),
    ("thinkingdb.model", "PathInv", "", "path"),
    ("thinkingdb.model", "PathSeq", "", "parts"),
    ("thinkingdb.model", "PathAlt", "", "options"),
    ("thinkingdb.model", "PathRepeat", "", "path min max"),
    ("thinkingdb.model", "QueryPattern", "", "subject path object"),
    ("thinkingdb.model", "Query", "", "patterns"),
    ("thinkingdb.model", "Evidence", "",
     "quality=0.0 freshness=0.0 authority=0.0 risk_penalty=0.0 coherence_penalty=0.0 m=1.0"),
    ("thinkingdb.arith", "Arith", "", "op left right"),
    ("thinkingdb.arith", "Constraint", "", "op left right"),
    ("thinkingdb.engine.proofs", "Proof", "",
     "conclusion score depth kind='asserted' rule=None weight=1.0 premises=() ~alternatives=()"),
    ("thinkingdb.store.sqlite", "Unit", "",
     "id role='' topic='' claim='' condition='' procedure='' utility_acts=() utility_note='' source='' chunk='' "
     "acl=() region='' effective_from='' effective_to='' extra='{}'"),
]


def parse_spec(spec: str) -> list[tuple[str, dict]]:
    out = []
    for word in spec.split():
        marks = word[:len(word) - len(word.lstrip("~!*"))]
        name, eq, default = word[len(marks):].partition("=")
        options = {"compare": "~" not in marks, "repr": "!" not in marks, "kw_only": "*" in marks}
        if eq:
            options["default"] = ast.literal_eval(default)
        out.append((name, options))
    return out


def reference(name: str, flags: str, spec: str) -> type:
    """The dataclass ``name`` was: same fields, defaults, flags; no validation."""
    fields = [(f, object, dataclasses.field(**options)) for f, options in parse_spec(spec)]
    return dataclasses.make_dataclass(name, fields, frozen=True, order="order" in flags)


# -- arguments: anything for most fields, valid values where __init__ validates ---------------------------
ANY = st.sampled_from(["a", "b", "", 0, 1, None, ("a",)])


def _valid_rules():
    from thinkingdb.arith import Constraint
    from thinkingdb.model import Atom, Var
    x, y, z = Var("x"), Var("y"), Var("z")
    return [("t", (Atom(x, "r", y), Atom(y, "r", z)), Atom(x, "r", z), 1.0, (), ()),
            ("t", (Atom(x, "r", y),), Atom(y, "s", x), 0.5, (), ()),
            ("u", (Atom(x, "r", y),), Atom(x, "s", y), 1.0, (Atom(y, "q", Var("_#1")),), ()),
            ("v", (Atom(x, "r", y),), Atom(x, "s", y), 1.0, (), (Constraint("<", x, y),))]


VALID = {
    ("thinkingdb.model", "Fact"): {"confidence": st.sampled_from([0.0, 0.5, 1.0, 1])},
    ("thinkingdb.model", "Declaration"): None,   # whole argument tuples, below
    ("thinkingdb.model", "Rule"): None,
    ("thinkingdb.model", "PathRepeat"): None,
    ("thinkingdb.model", "Limits"): {f: st.one_of(st.none(), st.integers(1, 3)) for f in
                                     ("max_depth", "max_nodes", "max_derived", "timeout_ms", "max_rows")},
    ("thinkingdb.model", "Evidence"): {f: st.sampled_from([0.0, 0.5, 1.0]) for f in
                                       ("quality", "freshness", "authority", "risk_penalty", "coherence_penalty", "m")},
    ("thinkingdb.arith", "Arith"): {"op": st.sampled_from(["+", "-", "*", "/", "%"])},
    ("thinkingdb.arith", "Constraint"): {"op": st.sampled_from(["<", "<=", ">", ">=", "=", "!="])},
}
WHOLE = {
    ("thinkingdb.model", "Declaration"): lambda: st.sampled_from(
        [("r", "transitive", None), ("r", "symmetric", None), ("r", "inverse", "s"), ("q", "subrelation_of", "r"),
         ("r", "inverse", "q")]),
    ("thinkingdb.model", "Rule"): lambda: st.sampled_from(_valid_rules()),
    ("thinkingdb.model", "PathRepeat"): lambda: st.sampled_from(
        [("p", 0, None), ("p", 1, None), ("p", 1, 1), ("q", 2, 3), ("p", 0, 0)]),
}


def arguments(module: str, name: str, spec: str):
    """A strategy of ``(args, kwargs)`` for the class, split as its dataclass' __init__ takes them."""
    fields = parse_spec(spec)
    if (module, name) in WHOLE:
        values = WHOLE[(module, name)]().map(lambda t: dict(zip([f for f, _ in fields], t)))
    else:
        valid = VALID.get((module, name)) or {}
        values = st.fixed_dictionaries({f: valid.get(f, ANY) for f, _ in fields})

    def split(v: dict, n_positional: int):
        names = [f for f, _ in fields]
        pos = [f for f, o in fields if not o["kw_only"]][:n_positional]
        return tuple(v[f] for f in pos), {f: v[f] for f in names if f not in pos}
    return st.tuples(values, st.integers(0, len(fields))).map(lambda t: split(*t))


def outcome(f):
    try:
        return ("value", f())
    except Exception as exc:   # the same exception class is the same behaviour
        return ("raises", type(exc))


CASES = [pytest.param(m, n, fl, sp, id=f"{m}.{n}") for m, n, fl, sp in SPEC]


@pytest.mark.parametrize("module, name, flags, spec", CASES)
def test_declaration_matches_the_dataclass(module, name, flags, spec):
    cls, ref = getattr(importlib.import_module(module), name), reference(name, flags, spec)
    got = [(f.name, f.compare, f.repr, f.kw_only, f.default) for f in dataclasses.fields(cls)]
    want = [(f.name, f.compare, f.repr, f.kw_only, f.default) for f in dataclasses.fields(ref)]
    assert got == want
    assert cls.__match_args__ == ref.__match_args__
    assert dataclasses.is_dataclass(cls)


@pytest.mark.parametrize("module, name, flags, spec", CASES)
@given(data=st.data())
def test_behaviour_matches_the_dataclass(module, name, flags, spec, data):
    cls, ref = getattr(importlib.import_module(module), name), reference(name, flags, spec)
    (a_args, a_kw), (b_args, b_kw) = data.draw(arguments(module, name, spec)), data.draw(arguments(module, name, spec))
    x, y, rx, ry = cls(*a_args, **a_kw), cls(*b_args, **b_kw), ref(*a_args, **a_kw), ref(*b_args, **b_kw)
    assert repr(x) == repr(rx)
    assert (x == y, x != y, x == x) == (rx == ry, rx != ry, True)
    assert outcome(lambda: hash(x)) == outcome(lambda: hash(rx))
    for op in ("__lt__", "__le__", "__gt__", "__ge__"):
        assert outcome(lambda: getattr(x, op)(y)) == outcome(lambda: getattr(rx, op)(ry))
        assert outcome(lambda: sorted([x, y]) == sorted([x, y])) == outcome(lambda: sorted([rx, ry]) == sorted([rx, ry]))
    assert dataclasses.asdict(x) == dataclasses.asdict(rx)
    # replace: one field of ``y``'s value given to ``x`` (valid, since ``y`` was built with it)
    field = data.draw(st.sampled_from([f.name for f in dataclasses.fields(ref)]))
    if (module, name) not in WHOLE:
        assert repr(dataclasses.replace(x, **{field: getattr(y, field)})) == repr(
            dataclasses.replace(rx, **{field: getattr(ry, field)}))
    for twin in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        assert type(twin) is cls and twin == x and repr(twin) == repr(x)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(x, field, getattr(y, field))
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(x, field)
    assert x != rx and x == cls(*a_args, **a_kw)   # another class never compares equal


def test_the_oracle_sees_a_wrong_declaration():
    """The checks above can fail: a class that compares its positions, or hides a field, is caught."""
    from grammar.values import Value

    class Symbol(Value):   # grammar.ast.Symbol with line and column compared and shown
        __slots__ = ("text", "line", "column", "quoted")
        _compare, _hidden = ("text", "line", "column"), ("quoted",)

        def __init__(self, text, line=0, column=0, quoted=False):
            for f, v in zip(self.__slots__, (text, line, column, quoted)):
                object.__setattr__(self, f, v)

    ref = reference("Symbol", "", SPEC[0][3])
    assert (Symbol("a", 1) == Symbol("a", 2)) != (ref("a", 1) == ref("a", 2))
    assert repr(Symbol("a", 1)) != repr(ref("a", 1))
    assert [f.compare for f in dataclasses.fields(Symbol)] != [f.compare for f in dataclasses.fields(ref)]


def test_records_behave_as_plain_dataclasses():
    """Vocabulary and Program (mutable): compared by their fields, shown like a dataclass, unhashable."""
    from thinkingdb.language import Program
    from thinkingdb.normalize import Vocabulary

    was = dataclasses.make_dataclass("Vocabulary", [("aliases", dict, dataclasses.field(default_factory=dict)),
                                                    ("inverses", dict, dataclasses.field(default_factory=dict)),
                                                    ("mode", str, dataclasses.field(default="iris"))])
    v, r = Vocabulary(), was()
    v.add_alias("requires", "depends_on")
    r.aliases["requires"] = "depends_on"
    assert repr(v) == repr(r) == "Vocabulary(aliases={'requires': 'depends_on'}, inverses={}, mode='iris')"
    assert v == Vocabulary({"requires": "depends_on"}) and v != Vocabulary()
    assert Vocabulary.__hash__ is None and Program.__hash__ is None
    v.mode = "folded"
    assert v.mode == "folded" and Vocabulary().aliases is not Vocabulary().aliases
    p = Program("s")
    p.facts.append(1)
    assert p == Program("s", facts=[1]) and p != Program("s") and Program("s").facts is not Program("s").facts
    assert dataclasses.replace(p, source="t") == Program("t", facts=[1])
