"""Rule evaluation for the semi-naive closure: join plans over indexed facts and one round of firings.

A rule is compiled once per closure run into *plans*, one per premise: "start from the facts of
this premise, then join the others in this order". The order is greedy by selectivity — next the
premise with the most bound positions, then the smallest relation. Each later premise is looked up
through the index of a bound position (subject → objects, object → subjects), never scanned
unless it shares no variable with what is already bound.

Facts are int triples ``(s, r, o)``. :class:`FactStore` answers the lookups over the asserted facts
in scope plus the derived facts known at the start of the round.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..model import Node, Rule, Var

# term kinds inside a compiled premise; NODE (a statement node made from bound terms) and ANY (an
# anonymous variable of a 'not' premise) occur only in heads and 'not' premises
CONST, BOUND, FREE, SAME, NODE, ANY = 0, 1, 2, 3, 4, 5


class FactStore:
    """Asserted facts of a :class:`~thinkingdb.engine.graph.FactGraph` (restricted to the symbols flagged in
    ``in_scope`` when given) plus derived facts (``d_out``/``d_in`` sets, scores in ``rec``)."""

    __slots__ = ("a_out", "a_in", "_a_in_src", "scope", "d_out", "d_in", "rec", "a_sizes")

    def __init__(self, a_out, a_in, scope: bytearray | None, a_sizes: list[int] | None = None) -> None:
        self.a_out, self.scope = a_out, scope
        # by-object indexes in a plain list, each taken from the graph on first use (a graph builds
        # them when first read; indexing the graph's list per lookup would cost a Python call)
        self._a_in_src, self.a_in = a_in, [None] * len(a_in)
        self.a_sizes = a_sizes  # asserted facts per relation, kept by the graph (no recount per closure)
        self.d_out: dict[int, dict[int, set[int]]] = {}
        self.d_in: dict[int, dict[int, set[int]]] = {}
        self.rec: dict[tuple[int, int, int], tuple] = {}   # key -> (score, depth, rule_idx, premise keys)

    def asserted_conf(self, s: int, r: int, o: int) -> float | None:
        if r >= len(self.a_out):
            return None
        sc = self.scope
        if sc is not None and not (sc[s] and sc[o]):
            return None
        row = self.a_out[r].get(s)
        return None if row is None else row.get(o)

    def score_depth(self, key: tuple[int, int, int]) -> tuple[float, int] | None:
        c = self.asserted_conf(*key)
        if c is not None:
            return c, 0
        v = self.rec.get(key)
        return None if v is None else (v[0], v[1])

    def add_derived(self, key: tuple[int, int, int]) -> None:
        s, r, o = key
        by_s = self.d_out.get(r)
        if by_s is None:
            by_s = self.d_out[r] = {}
            self.d_in[r] = {}
        row = by_s.get(s)
        if row is None:
            row = by_s[s] = set()
        row.add(o)
        col = self.d_in[r].get(o)
        if col is None:
            col = self.d_in[r][o] = set()
        col.add(s)

    def out(self, r: int, s: int) -> Iterator[int]:
        sc = self.scope
        if r < len(self.a_out) and (sc is None or (s < len(sc) and sc[s])):
            row = self.a_out[r].get(s)
            if row:
                yield from (row if sc is None else (o for o in row if sc[o]))
        d = self.d_out.get(r)
        if d:
            yield from d.get(s, ())

    def inn(self, r: int, o: int) -> Iterator[int]:
        sc = self.scope
        if r < len(self.a_in) and (sc is None or (o < len(sc) and sc[o])):
            ix = self.a_in[r]
            if ix is None:
                ix = self.a_in[r] = self._a_in_src[r]
            col = ix.get(o)
            if col:
                yield from (col if sc is None else (s for s in col if sc[s]))
        d = self.d_in.get(r)
        if d:
            yield from d.get(o, ())

    def asserted_pairs(self, r: int, scope_list: list[int] | None) -> Iterator[tuple[int, int]]:
        """Asserted ``(s, o)`` of relation ``r`` in scope (iterating the smaller of scope and index)."""
        if r >= len(self.a_out):
            return
        by_s, sc = self.a_out[r], self.scope
        if sc is None:
            for s, row in by_s.items():
                for o in row:
                    yield s, o
        elif scope_list is not None and len(scope_list) < len(by_s):
            for s in scope_list:
                row = by_s.get(s)
                if row:
                    for o in row:
                        if sc[o]:
                            yield s, o
        else:
            for s, row in by_s.items():
                if s < len(sc) and sc[s]:
                    for o in row:
                        if sc[o]:
                            yield s, o

    def pairs(self, r: int, scope_list: list[int] | None) -> Iterator[tuple[int, int]]:
        yield from self.asserted_pairs(r, scope_list)
        for s, row in self.d_out.get(r, {}).items():
            for o in row:
                yield s, o

    def size(self, r: int) -> int:
        if r >= len(self.a_out):
            n = 0
        elif self.a_sizes is not None:
            n = self.a_sizes[r]
        else:
            n = sum(len(row) for row in self.a_out[r].values())
        return n + sum(len(row) for row in self.d_out.get(r, {}).values())


class Plan:
    """One way to evaluate a rule: start at premise ``start``, then join ``steps`` in order.

    A step is ``(premise index, relation, s_kind, s_val, o_kind, o_val)`` where kinds are CONST
    (val = symbol id), BOUND / FREE (val = variable slot), SAME (object is the subject's variable).
    """

    __slots__ = ("rule_idx", "start", "first", "steps", "head", "weight", "n_prem", "negs", "special", "slots")

    def __init__(self, rule_idx, start, first, steps, head, weight, n_prem, negs=(), slots=None):
        self.rule_idx, self.start, self.first, self.steps = rule_idx, start, first, steps
        self.head, self.weight, self.n_prem = head, weight, n_prem
        # 'not' premises as (subject spec, relation id, object spec); ``special(env)`` -- set by the
        # stratified engine when a rule has them or a statement-node head -- gives the head key, or
        # None when a 'not' premise matches
        self.negs, self.special = negs, None
        self.slots = slots   # variable -> env slot (premise variables, then the assigned ones)


def compile_rule(rule_idx: int, rule: Rule, start: int, rel_id: Callable[[str], int],
                 sym_id: Callable[[str], int], size: Callable[[int], int]) -> Plan:
    """Plan ``rule`` starting from premise ``start``; the others ordered by selectivity."""
    slots: dict[Var, int] = {}
    for p in rule.premises:
        for t in (p.subject, p.object):
            if isinstance(t, Var):
                slots.setdefault(t, len(slots))
    for c in rule.constraints:   # an assigned variable gets the next slot; the stratified engine fills it
        if c.assigns:
            slots.setdefault(c.left, len(slots))
    bound: set[Var] = set()

    def step(i: int) -> tuple:
        p = rule.premises[i]
        out = [i, rel_id(p.relation)]
        for pos, t in enumerate((p.subject, p.object)):
            if not isinstance(t, Var):
                out += [CONST, sym_id(t)]
            elif t in bound:
                out += [BOUND, slots[t]]
            elif pos == 1 and t == p.subject:
                out += [SAME, slots[t]]
            else:
                out += [FREE, slots[t]]
        bound.update(p.variables())
        return tuple(out)

    first = step(start)
    rest = [i for i in range(len(rule.premises)) if i != start]
    steps = []
    while rest:
        def cost(i: int) -> tuple:
            p = rule.premises[i]
            free = sum(1 for t in (p.subject, p.object) if isinstance(t, Var) and t not in bound)
            return free, size(rel_id(p.relation)), i
        best = min(rest, key=cost)
        rest.remove(best)
        steps.append(step(best))
    def spec(t) -> tuple:
        if isinstance(t, Node):
            return NODE, (t.relation, tuple(spec(a) for a in t.args))
        if isinstance(t, Var):
            return (ANY, None) if t not in slots else (BOUND, slots[t])
        return CONST, sym_id(t)

    h = rule.head
    head = (spec(h.subject), spec(h.object))
    negs = tuple((spec(a.subject), rel_id(a.relation), spec(a.object)) for a in rule.negated)
    return Plan(rule_idx, start, first, tuple(steps), (head[0], rel_id(h.relation), head[1]), rule.weight,
                len(rule.premises), negs, slots)


def _bind_first(first: tuple, s: int, o: int, env: list) -> bool:
    _, _, sk, sv, ok, ov = first
    if sk == CONST:
        if sv != s:
            return False
    else:
        env[sv] = s
    if ok == CONST:
        return ov == o
    if ok == SAME:
        return o == s
    env[ov] = o
    return True


def fire(plan: Plan, facts: Iterable[tuple[int, int]], store: FactStore,
         emit: Callable[[tuple, tuple], None], tick: Callable[[], None], n_vars: int) -> int:
    """Evaluate ``plan`` for every start fact ``(s, o)`` of its first premise's relation; call
    ``emit(head_key, premise_keys)`` per complete match (premise keys in rule order). Returns firings."""
    r0 = plan.first[1]
    steps = plan.steps
    n = len(steps)
    prem: list = [None] * plan.n_prem
    env: list = [None] * n_vars
    (hsk, hsv), hr, (hok, hov) = plan.head
    start = plan.start
    count = 0

    special = plan.special

    def join(k: int) -> None:
        nonlocal count
        if k == n:
            if special is not None:
                head = special(env)
                if head is not None:
                    count += 1
                    emit(head, tuple(prem))
                return
            count += 1
            emit((hsv if hsk == CONST else env[hsv], hr, hov if hok == CONST else env[hov]), tuple(prem))
            return
        idx, r, sk, sv, ok, ov = steps[k]
        s = sv if sk == CONST else (env[sv] if sk == BOUND else None)
        o = ov if ok == CONST else (env[ov] if ok == BOUND else None)
        if s is not None and o is not None:
            if store.score_depth((s, r, o)) is not None:
                prem[idx] = (s, r, o)
                join(k + 1)
        elif s is not None:
            for o2 in store.out(r, s):
                if ok == SAME and o2 != s:
                    continue
                if ok == FREE:
                    env[ov] = o2
                prem[idx] = (s, r, o2)
                join(k + 1)
        elif o is not None:
            for s2 in store.inn(r, o):
                env[sv] = s2
                prem[idx] = (s2, r, o)
                join(k + 1)
        else:
            for s2, o2 in store.pairs(r, None):
                if ok == SAME and o2 != s2:
                    continue
                env[sv] = s2
                if ok == FREE:
                    env[ov] = o2
                prem[idx] = (s2, r, o2)
                join(k + 1)

    for i, (s, o) in enumerate(facts):
        if not i & 255:
            tick()
        if _bind_first(plan.first, s, o, env):
            prem[start] = (s, r0, o)
            join(0)
    return count
