"""parse(format(x)) == x for generated syntax trees, and the SPEC §2 examples mean what they say."""

from hypothesis import given, strategies as st

from grammar import ast, format_document, parse

names = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=12)
bare = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,8}(:[0-9]{1,4})?", fullmatch=True)
symbols = st.one_of(bare, names).map(ast.Symbol)
relations = st.one_of(bare, names.filter(lambda s: s.strip())).map(ast.Relation)
variables = st.one_of(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), st.just("_")).map(ast.Variable)
numbers = st.one_of(st.integers(-10**6, 10**6).map(str),
                    st.from_regex(r"-?[0-9]{1,4}\.[0-9]{1,3}", fullmatch=True)).map(ast.Symbol)
confidences = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
weights = st.one_of(st.none(), st.floats(min_value=1e-6, max_value=1.0))

# a relation phrase: two to four bare words that are not keywords
words = bare.filter(lambda w: w not in ("relation", "alias", "rule", "why", "not"))
phrases = st.lists(words, min_size=2, max_size=4).map(lambda ws: ast.Relation(" ".join(ws), phrase=True))
relations_or_phrases = st.one_of(relations, phrases)
nary_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True).map(ast.Relation)
facts = st.one_of(st.builds(ast.Fact, st.one_of(symbols, numbers), relations_or_phrases, st.one_of(symbols, numbers),
                            confidences),
                  st.builds(ast.NaryFact, nary_names, st.lists(symbols, min_size=1, max_size=5).map(tuple),
                            confidences))
decls = st.one_of(
    st.builds(ast.RelationDecl, relations, st.sampled_from(["transitive", "symmetric"]), st.none()),
    st.builds(ast.RelationDecl, relations, st.sampled_from(["inverse", "subrelation_of"]), relations))
aliases = st.builds(ast.Alias, symbols, relations)
terms = st.one_of(symbols, variables)


def _vars(a) -> list:
    terms = a.args if isinstance(a, ast.NaryAtom) else (a.subject, a.object)
    return [t for t in terms if isinstance(t, ast.Variable) and t.name != "_"]


nary_atoms = st.builds(ast.NaryAtom, nary_names, st.lists(terms, min_size=1, max_size=4).map(tuple))
positive_atoms = st.one_of(st.builds(ast.Atom, terms, relations_or_phrases, terms), nary_atoms)




def expressions(operands):
    """Arithmetic over ``operands`` (variables bound above, numbers, symbols), nested up to 4 leaves."""
    return st.recursive(operands, lambda inner: st.builds(ast.Arith, st.sampled_from("+-*/%"), inner, inner),
                        max_leaves=4)


@st.composite
def rules(draw):
    premises = list(draw(st.lists(positive_atoms, min_size=1, max_size=4)))
    body_vars = [t for a in premises for t in _vars(a)]
    safe = st.one_of(symbols, st.sampled_from(body_vars), st.just(ast.Variable("_"))) if body_vars else symbols
    for _ in range(draw(st.integers(0, 2))):   # safe 'not' premises: variables bound above, or ?_
        if draw(st.booleans()):
            premises.append(ast.Atom(draw(safe), draw(relations_or_phrases), draw(safe), negated=True))
        else:
            args = tuple(draw(st.lists(safe, min_size=1, max_size=3)))
            premises.append(ast.NaryAtom(draw(nary_names), args, negated=True))
    if body_vars:   # comparisons over bound variables, and assignments of fresh ones the head may use
        operands = st.one_of(st.sampled_from(body_vars), numbers, symbols)
        for _ in range(draw(st.integers(0, 2))):
            premises.append(ast.Comparison(draw(expressions(operands)), draw(st.sampled_from(
                ["<", "<=", ">", ">=", "=", "!="])), draw(expressions(operands))))
        if draw(st.booleans()):
            fresh = ast.Variable(draw(st.from_regex(r"v[a-z0-9_]{0,4}", fullmatch=True)))
            if all(v.name != fresh.name for v in body_vars):
                premises.append(ast.Comparison(fresh, "=", draw(expressions(operands))))
                body_vars = body_vars + [fresh]
    head_terms = st.one_of(symbols, st.sampled_from(body_vars)) if body_vars else symbols
    if draw(st.booleans()):
        head = ast.Atom(draw(head_terms), draw(relations_or_phrases), draw(head_terms))
    else:
        head = ast.NaryAtom(draw(nary_names), tuple(draw(st.lists(head_terms, min_size=1, max_size=3))))
    name = draw(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
    return ast.RuleDecl(name, tuple(premises), head, draw(weights))


paths = st.recursive(
    st.builds(ast.Step, relations),
    lambda inner: st.one_of(
        st.builds(ast.Inverse, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.Sequence(tuple(xs))),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ast.Alternative(tuple(xs))),
        st.tuples(inner, st.integers(0, 4), st.one_of(st.none(), st.integers(0, 4))).map(
            lambda t: ast.Repeat(t[0], min(t[1], t[2] if t[2] is not None else t[1]), t[2]))),
    max_leaves=5)
patterns = st.one_of(st.builds(ast.Pattern, terms, paths, terms),
                     st.builds(ast.Pattern, terms, phrases.map(ast.Step), terms), nary_atoms)
queries = st.lists(patterns, min_size=1, max_size=3).map(lambda ps: ast.Query(tuple(ps)))
whys = st.builds(ast.Why, symbols, relations_or_phrases, symbols, st.booleans())
documents = st.lists(st.one_of(facts, decls, aliases, rules(), queries, whys), max_size=8).map(
    lambda ss: ast.Document(tuple(ss)))


@given(documents)
def test_parse_format_round_trip(doc):
    text = format_document(doc)
    assert parse(text) == doc


@given(documents)
def test_format_is_a_fixed_point(doc):
    once = format_document(doc)
    assert format_document(parse(once)) == once


def test_spec_examples_parse_as_documented():
    doc = parse('''
# facts: subject relation object, optional confidence in [0,1]
nginx depends_on openssl.
"AchillesIDE" uses Ploinky @0.9.
relation depends_on transitive.
relation neighbor_of symmetric.
relation part_of inverse has_part.
relation positively_regulates subrelation_of regulates.
alias "depends on" => depends_on.
alias dependsOn => depends_on.
rule tool_to_capability @0.95: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.
? nginx depends_on ?x.                         # triple pattern
? ?pkg depends_on+ openssl.                    # transitive path (also *, {m,n})
? nginx uses/provides ?c.                      # path sequence
? ?c located_in{1,3} europe, ?c neighbor_of ?n.   # conjunction
why AchillesIDE relevant_for secure_execution.     # proof of one fact
''')
    s = doc.statements
    S, R, V = ast.Symbol, ast.Relation, ast.Variable
    assert s[0] == ast.Fact(S("nginx"), R("depends_on"), S("openssl"), None)
    assert s[1] == ast.Fact(S("AchillesIDE"), R("uses"), S("Ploinky"), 0.9)
    assert s[2] == ast.RelationDecl(R("depends_on"), "transitive")
    assert s[4] == ast.RelationDecl(R("part_of"), "inverse", R("has_part"))
    assert s[5] == ast.RelationDecl(R("positively_regulates"), "subrelation_of", R("regulates"))
    assert s[6] == ast.Alias(S("depends on"), R("depends_on"))
    assert s[8] == ast.RuleDecl("tool_to_capability",
                                (ast.Atom(V("x"), R("uses"), V("y")), ast.Atom(V("y"), R("provides"), V("z"))),
                                ast.Atom(V("x"), R("has_capability"), V("z")), 0.95)
    assert s[10].patterns[0].path == ast.Repeat(ast.Step(R("depends_on")), 1, None)
    assert s[11].patterns[0].path == ast.Sequence((ast.Step(R("uses")), ast.Step(R("provides"))))
    assert s[12].patterns[0].path == ast.Repeat(ast.Step(R("located_in")), 1, 3)
    assert len(s[12].patterns) == 2
    assert s[13] == ast.Why(S("AchillesIDE"), R("relevant_for"), S("secure_execution"))
    assert (s[1].line, s[1].column) == (4, 1)
    assert (s[8].premises[1].line, s[8].premises[1].column) == (11, 44)  # "rule tool_to_capability @0.95: ?x uses ?y, " is 43 characters


def test_precedence_of_path_operators():
    R, St = ast.Relation, ast.Step
    (q,) = parse("? ?x a/b|^c+ ?y.").statements
    assert q.patterns[0].path == ast.Alternative((
        ast.Sequence((St(R("a")), St(R("b")))),
        ast.Inverse(ast.Repeat(St(R("c")), 1, None))))
