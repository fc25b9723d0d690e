"""Rules as the JSON text of the store's ``rules`` table (terms, function terms, arithmetic, a
restricted unit's id), read only when a store holds rules.
"""

from __future__ import annotations

from ..arith import Arith, Constraint
from ..model import Atom, Node, Rule, Var
from ..normalize import orient_rules  # noqa: F401  (re-exported: read with the rules, api and ingest)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..model import Term


def _encode_term(t: Term) -> Any:
    if isinstance(t, Node):
        return {"node": t.relation, "args": [_encode_term(a) for a in t.args]}
    return {"var": t.name} if isinstance(t, Var) else t


def _decode_term(t: Any) -> Term:
    if isinstance(t, dict) and "node" in t:
        return Node(t["node"], tuple(_decode_term(a) for a in t["args"]))
    return Var(t["var"]) if isinstance(t, dict) else t


def _encode_expr(e: Any) -> Any:
    if isinstance(e, Arith):
        return {"op": e.op, "left": _encode_expr(e.left), "right": _encode_expr(e.right)}
    return _encode_term(e)


def _decode_expr(e: Any) -> Any:
    if isinstance(e, dict) and "op" in e:
        return Arith(e["op"], _decode_expr(e["left"]), _decode_expr(e["right"]))
    return _decode_term(e)


def rule_to_json(rule: Rule, unit: str | None = None) -> str:
    """A rule as the JSON text stored in the ``rules`` table (round-trips through :func:`rule_from_json`).

    >>> r = Rule("r", (Atom(Var("x"), "uses", Var("y")),), Atom(Var("y"), "used_by", Var("x")), 0.5)
    >>> rule_from_json("r", rule_to_json(r)) == r
    True
    >>> n = Rule("n", r.premises, Atom(Node("pair", (Var("x"), Var("y"))), "pair.1", Var("x")),
    ...          negated=(Atom(Var("x"), "banned", Var("_#1")),))
    >>> rule_from_json("n", rule_to_json(n)) == n
    True
    >>> c = Rule("c", r.premises, Atom(Var("x"), "next", Var("z")),
    ...          constraints=(Constraint(":=", Var("z"), Arith("+", Var("y"), "1")), Constraint("<", Var("z"), "9")))
    >>> rule_from_json("c", rule_to_json(c)) == c
    True
    """
    import json
    atoms = [[_encode_term(a.subject), a.relation, _encode_term(a.object)] for a in rule.premises]
    h = rule.head
    out = {"weight": rule.weight, "premises": atoms,
           "head": [_encode_term(h.subject), h.relation, _encode_term(h.object)]}
    if rule.negated:
        out["negated"] = [[_encode_term(a.subject), a.relation, _encode_term(a.object)] for a in rule.negated]
    if rule.constraints:
        out["constraints"] = [[c.op, _encode_expr(c.left), _encode_expr(c.right)] for c in rule.constraints]
    if unit is not None:   # a rule of a restricted unit: it applies only for callers who see the unit
        out["unit"] = unit
    return json.dumps(out)


def rule_from_json(name: str, body: str) -> Rule:
    """The inverse of :func:`rule_to_json`."""
    import json
    d = json.loads(body)
    atom = lambda a: Atom(_decode_term(a[0]), a[1], _decode_term(a[2]))  # noqa: E731
    return Rule(name, tuple(atom(a) for a in d["premises"]), atom(d["head"]), d["weight"],
                tuple(atom(a) for a in d.get("negated", ())),
                tuple(Constraint(op, _decode_expr(lt), _decode_expr(rt)) for op, lt, rt in d.get("constraints", ())))

