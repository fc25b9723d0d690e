"""Rule-set workloads for benchmarks/closure.py, and their translation to clingo and Nemo.

Each workload is asserted triples plus ThinkingDB rules; :func:`to_clingo` and :func:`to_nemo` write
the same rules for the peers (relation ``r`` becomes predicate ``p_r``; constants are strings in
clingo and IRIs in Nemo, matching how each imports the facts), so every engine derives the same facts.

* ``dag``: the layered DAG of benchmarks/closure.py (child -> parent edges);
* ``tc_rules``: its transitive closure written as two rules (linear recursion);
* ``same_generation``: ``sg`` over the DAG (non-linear: three premises, two recursive ends);
* ``odd_even``: paths of odd and even length (mutual recursion);
* ``lubm``: an LUBM-like university ontology — classes, property hierarchies, inverses, a
  transitive ``sub_organization_of``, domain/range rules and three-premise joins with constants —
  generated for a number of universities (fixed seed).
"""

from __future__ import annotations

import random

LEVELS, PARENTS, WINDOW = 5, 2, 8


def generated(kind: str, n_edges: int, seed: int = 7) -> list[tuple[int, int]]:
    """A layered DAG (child -> parent): ``LEVELS`` equal levels, each node below the top picks
    ``PARENTS`` distinct parents one level up. ``random``: uniformly within a window of ``WINDOW``
    positions around its own (locality keeps closures in memory); ``scale-free``: by preferential
    attachment (probability ∝ 1 + in-degree), giving a heavy-tailed in-degree."""
    rnd = random.Random(seed)
    n = n_edges * LEVELS // (PARENTS * (LEVELS - 1))
    per = n // LEVELS
    edges = []
    for level in range(1, LEVELS):
        base_up = (level - 1) * per
        pool = list(range(base_up, base_up + per))   # PA urn: each node once plus once per in-edge
        for i in range(per):
            child = level * per + i
            chosen: set[int] = set()
            while len(chosen) < PARENTS:
                if kind == "random":
                    chosen.add(base_up + (i + rnd.randint(-WINDOW, WINDOW)) % per)
                else:
                    chosen.add(rnd.choice(pool))
            for p in sorted(chosen):
                edges.append((child, p))
                if kind != "random":
                    pool.append(p)
    return edges[:n_edges]


def _rules(text: str):
    """Rules from ``name @w: a r b, ... => a r b`` lines; ``?v`` are variables."""
    from thinkingdb.model import Atom, Rule, Var

    def term(t):
        return Var(t[1:]) if t.startswith("?") else t

    def atom(s):
        a, r, b = s.split()
        return Atom(term(a), r, term(b))

    out = []
    for line in text.strip().splitlines():
        name, rest = line.split(":", 1)
        body, head = rest.split("=>")
        out.append(Rule(name.strip(), tuple(atom(p) for p in body.split(",")), atom(head)))
    return tuple(out)


def tc_rules(n_edges: int):
    rows = [(f"n{a}", "e", f"n{b}") for a, b in generated("random", n_edges)]
    return rows, _rules("base: ?x e ?y => ?x path ?y\nstep: ?x e ?y, ?y path ?z => ?x path ?z")


def same_generation(n_edges: int):
    rows = [(f"n{a}", "par", f"n{b}") for a, b in generated("random", n_edges, seed=3)]
    return rows, _rules("sg0: ?x par ?p, ?y par ?p => ?x sg ?y\n"
                        "sg1: ?x par ?xp, ?xp sg ?yp, ?y par ?yp => ?x sg ?y")


def odd_even(n_edges: int):
    rows = [(f"n{a}", "e", f"n{b}") for a, b in generated("random", n_edges, seed=5)]
    return rows, _rules("odd0: ?x e ?y => ?x odd ?y\nodd1: ?x even ?y, ?y e ?z => ?x odd ?z\n"
                        "even1: ?x odd ?y, ?y e ?z => ?x even ?z")


SUBCLASS = """full_professor professor; associate_professor professor; assistant_professor professor;
visiting_professor professor; chair professor; dean professor; professor faculty; lecturer faculty;
post_doc faculty; faculty employee; administrative_staff employee; clerical_staff administrative_staff;
systems_staff administrative_staff; employee person; undergraduate_student student; graduate_student person;
student person; teaching_assistant person; research_assistant person; university organization;
department organization; research_group organization; institute organization; graduate_course course;
journal_article article; conference_paper article; article publication; book publication;
technical_report article"""
SUBPROPERTY = """head_of works_for; works_for member_of; undergraduate_degree_from degree_from;
masters_degree_from degree_from; doctoral_degree_from degree_from"""
INVERSE = "member_of member; degree_from has_alumnus; teacher_of taught_by"
DOMAIN_RANGE = """teacher_of 0 faculty; teacher_of 1 course; takes_course 0 student; advisor 1 professor;
works_for 0 employee; works_for 1 organization; member_of 1 organization; publication_author 0 publication;
publication_author 1 person; teaching_assistant_of 0 teaching_assistant; teaching_assistant_of 1 course;
research_interest 0 person; head_of 1 department"""
JOINS = """chair_rule: ?x head_of ?d, ?d type department => ?x type chair
student_at: ?x type student, ?x member_of ?d, ?d sub_organization_of ?u => ?x student_at ?u
colleague: ?x works_for ?d, ?y works_for ?d, ?x type full_professor => ?x senior_colleague_of ?y
alumnus_teaches: ?x teacher_of ?c, ?x doctoral_degree_from ?u, ?u type university => ?c taught_by_alumnus_of ?u
advised_course: ?s advisor ?p, ?p teacher_of ?c, ?s takes_course ?c => ?s takes_advisor_course ?c"""


def lubm(universities: int, seed: int = 11):
    """An LUBM-like ontology: entities per university as in LUBM's generator (scaled down), 60 rules."""
    rnd = random.Random(seed)
    rows: list[tuple[str, str, str]] = []
    add = rows.append
    for u in range(universities):
        univ = f"u{u}"
        add((univ, "type", "university"))
        for d in range(rnd.randint(12, 18)):
            dept = f"{univ}d{d}"
            add((dept, "type", "department"))
            add((dept, "sub_organization_of", univ))
            profs = []
            for kind, lo, hi in (("full_professor", 6, 9), ("associate_professor", 8, 12),
                                 ("assistant_professor", 6, 9), ("lecturer", 4, 6)):
                for i in range(rnd.randint(lo, hi)):
                    p = f"{dept}{kind[:2]}{i}"
                    profs.append(p)
                    add((p, "type", kind))
                    add((p, "works_for", dept))
                    add((p, "doctoral_degree_from", f"u{rnd.randrange(universities)}"))
            add((profs[0], "head_of", dept))
            courses = [f"{dept}c{i}" for i in range(len(profs) * 2)]
            for i, c in enumerate(courses):
                add((c, "type", "graduate_course" if i % 3 == 0 else "course"))
                add((profs[i % len(profs)], "teacher_of", c))
            for g in range(rnd.randint(8, 12)):
                grp = f"{dept}g{g}"
                add((grp, "type", "research_group"))
                add((grp, "sub_organization_of", dept))
            for i in range(len(profs) * rnd.randint(8, 12)):
                s = f"{dept}s{i}"
                grad = i % 4 == 0
                add((s, "type", "graduate_student" if grad else "undergraduate_student"))
                add((s, "member_of", dept))
                for c in rnd.sample(courses, 2 if grad else 3):
                    add((s, "takes_course", c))
                if grad:
                    add((s, "advisor", rnd.choice(profs)))
                    add((s, "undergraduate_degree_from", f"u{rnd.randrange(universities)}"))
                    if i % 8 == 0:
                        add((s, "teaching_assistant_of", rnd.choice(courses)))
            for i in range(len(profs) * 3):
                pub = f"{dept}pub{i}"
                add((pub, "publication_author", rnd.choice(profs)))
    lines = []
    for pair in SUBCLASS.replace("\n", " ").split(";"):
        a, b = pair.split()
        lines.append(f"sub_{a}_{b}: ?x type {a} => ?x type {b}")
    for pair in SUBPROPERTY.replace("\n", " ").split(";"):
        a, b = pair.split()
        lines.append(f"subp_{a}_{b}: ?x {a} ?y => ?x {b} ?y")
    for pair in INVERSE.split(";"):
        a, b = pair.split()
        lines.append(f"inv_{a}_{b}: ?x {a} ?y => ?y {b} ?x")
    lines.append("trans_sub_org: ?x sub_organization_of ?y, ?y sub_organization_of ?z => ?x sub_organization_of ?z")
    for item in DOMAIN_RANGE.replace("\n", " ").split(";"):
        rel, end, cls = item.split()
        lines.append(f"dr_{rel}_{end}: ?x {rel} ?y => {'?x' if end == '0' else '?y'} type {cls}")
    lines.extend(JOINS.splitlines())
    return rows, _rules("\n".join(lines))


def _term(t, style: str) -> str:
    from thinkingdb.model import Var
    if isinstance(t, Var):
        return ("V" + t.name) if style == "clingo" else f"?{t.name}"
    return f'"{t}"' if style == "clingo" else f"<{t}>"


def _atom(a, style: str) -> str:
    return f"p_{a.relation}({_term(a.subject, style)},{_term(a.object, style)})"


def to_clingo(rows, rules) -> str:
    """Facts and rules as one clingo program; ``#show`` every head predicate."""
    facts = "".join(f'p_{r}("{s}","{o}").\n' for s, r, o in rows)
    body = "".join(f"{_atom(r.head, 'clingo')} :- {', '.join(_atom(p, 'clingo') for p in r.premises)}.\n"
                   for r in rules)
    shows = "".join(f"#show p_{h}/2.\n" for h in sorted({r.head.relation for r in rules}))
    return facts + body + shows


def to_nemo(rows, rules, folder) -> str:
    """Rules as a Nemo program importing one CSV per relation written into ``folder``."""
    by_rel: dict[str, list[str]] = {}
    for s, r, o in rows:
        by_rel.setdefault(r, []).append(f"{s},{o}\n")
    out = []
    for r, lines in sorted(by_rel.items()):
        path = folder / f"{r}.csv"
        path.write_text("".join(lines), encoding="utf-8")
        # imported into i_r then copied: nemo-python 0.10.1 panics (``left == right``) when a
        # predicate read from CSV is also derived by a rule whose body is another predicate
        out.append(f'@import i_{r} :- csv{{resource="{path}"}} .\np_{r}(?x,?y) :- i_{r}(?x,?y) .')
    out += [f"{_atom(r.head, 'nemo')} :- {', '.join(_atom(p, 'nemo') for p in r.premises)} ." for r in rules]
    return "\n".join(out) + "\n"


WORKLOADS = {"tc_rules": tc_rules, "same_generation": same_generation, "odd_even": odd_even, "lubm": lubm}
