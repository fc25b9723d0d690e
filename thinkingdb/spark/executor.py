"""Semi-naive closure on Spark DataFrames: the same rounds, scores, depths and tie-breaks as the
in-process engine (:mod:`thinkingdb.engine.closure`), with partitioning, shuffles, spilling and
retries left to Spark.

The state is one DataFrame of known facts ``(s, r, o, score, depth, asserted, rule, prem)``, with
canonical keys as strings. Round 1 fires every rule over the asserted facts; round *d* > 1 fires, for
every rule and every premise whose relation changed in round *d - 1*, the rule with that premise
drawn from the round's delta and the others from the known facts (:func:`rule_plans`). Per head the
best candidate wins: highest score, then lowest depth, then the canonical order (rule name, then the
premise keys compared as strings), exactly as the in-process engine breaks ties. A candidate enters
when its fact is new, or improves a derived fact's score strictly; an asserted fact is never
replaced. Scores multiply in the engine's order, ``weight × score(premise 1) × score(premise 2) ...``,
in IEEE doubles on both sides, so they agree to the bit.

Every round's state is checkpointed locally, so the lineage Spark keeps stays one round long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import ValidationError
from ..model import Atom, Rule, Var

__all__ = ["JoinPlan", "RoundStats", "SparkClosure", "rule_plans", "spark_closure"]


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """One way to evaluate a rule in a round: premise ``start`` from the delta (or, in round 1, the
    asserted facts), then the other premises joined in ``order``, each on the variables it shares with
    what is bound already (a cross join where it shares none)."""

    rule: Rule
    start: int
    order: tuple[int, ...]


def rule_plans(rule: Rule) -> tuple[JoinPlan, ...]:
    """One plan per choice of the delta premise; the others follow, those sharing the most bound
    variables first (then rule order), so a cross join is the last resort.

    >>> from thinkingdb.model import Atom, Rule, Var
    >>> x, y, z = Var("x"), Var("y"), Var("z")
    >>> r = Rule("t", (Atom(x, "p", y), Atom(y, "p", z)), Atom(x, "p", z))
    >>> [(p.start, p.order) for p in rule_plans(r)]
    [(0, (1,)), (1, (0,))]
    """
    plans = []
    for start in range(len(rule.premises)):
        bound = set(rule.premises[start].variables())
        rest = [i for i in range(len(rule.premises)) if i != start]
        order = []
        while rest:
            best = max(rest, key=lambda i: (len(bound & set(rule.premises[i].variables())), -i))
            rest.remove(best)
            order.append(best)
            bound |= set(rule.premises[best].variables())
        plans.append(JoinPlan(rule, start, tuple(order)))
    return tuple(plans)


@dataclass(frozen=True, slots=True)
class RoundStats:
    """One round: facts new or improved in it, candidates considered, seconds taken."""

    round: int
    new: int
    improved: int
    seconds: float


def _check_rules(rules: tuple[Rule, ...]) -> None:
    for rule in rules:
        if getattr(rule, "negated", ()):   # stratified negation is evaluated in process only
            raise ValidationError(f"rule {rule.name!r}: negated premises are not supported by the Spark engine")


class SparkClosure:
    """Run ``rules`` to fixpoint (or ``max_depth`` rounds) over an asserted-facts DataFrame with
    columns ``s, r, o, c`` (canonical keys, confidence in [0, 1]; duplicates keep the maximum)."""

    def __init__(self, spark, facts, rules: Iterable[Rule], *, max_depth: int | None = None,
                 on_round: Callable[[RoundStats], None] | None = None) -> None:
        from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)

        self.spark, self.F = spark, F
        self.rules = tuple(rules)
        _check_rules(self.rules)
        if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
            raise ValidationError(f"max_depth must be a non-negative integer, got {max_depth!r}")
        self.max_depth = max_depth
        self.on_round = on_round
        asserted = (facts.groupBy("s", "r", "o").agg(F.max(F.col("c").cast("double")).alias("score"))
                    .select("s", "r", "o", "score", F.lit(0).alias("depth"), F.lit(True).alias("asserted"),
                            F.lit(None).cast("string").alias("rule"),
                            F.lit(None).cast("array<struct<s:string,r:string,o:string>>").alias("prem")))
        self.known = asserted.localCheckpoint()
        self.plans = [p for rule in self.rules for p in rule_plans(rule)]
        self.rounds: list[RoundStats] = []
        self.truncated: str | None = None

    # -- one premise, one rule --------------------------------------------------------------------
    def _atom(self, df, atom: Atom, idx: int):
        """The facts matching ``atom`` as columns: one per variable, plus this premise's key, score and
        depth (``p{idx}_s``, ``p{idx}_o``, ``p{idx}_sc``, ``p{idx}_d``)."""
        F = self.F
        d = df.where(F.col("r") == atom.relation)
        for pos, t in (("s", atom.subject), ("o", atom.object)):
            if not isinstance(t, Var):
                d = d.where(F.col(pos) == t)
        if isinstance(atom.subject, Var) and atom.subject == atom.object:
            d = d.where(F.col("s") == F.col("o"))
        cols = [F.col("s").alias(f"p{idx}_s"), F.col("o").alias(f"p{idx}_o"),
                F.col("score").alias(f"p{idx}_sc"), F.col("depth").alias(f"p{idx}_d")]
        seen = set()
        for pos, t in (("s", atom.subject), ("o", atom.object)):
            if isinstance(t, Var) and t not in seen:
                seen.add(t)
                cols.append(F.col(pos).alias(f"v_{t.name}"))
        return d.select(*cols)

    def _fire(self, plan: JoinPlan, start_df):
        F = self.F
        rule = plan.rule
        acc = self._atom(start_df, rule.premises[plan.start], plan.start)
        bound = set(rule.premises[plan.start].variables())
        for i in plan.order:
            atom = rule.premises[i]
            right = self._atom(self.known, atom, i)
            shared = sorted({v.name for v in atom.variables()} & {v.name for v in bound})
            acc = acc.join(right, on=[f"v_{n}" for n in shared], how="inner") if shared else acc.crossJoin(right)
            bound |= set(atom.variables())
        head = rule.head

        def term(t):
            return F.col(f"v_{t.name}") if isinstance(t, Var) else F.lit(t)

        n = len(rule.premises)
        score = F.lit(float(rule.weight))
        for i in range(n):                      # the engine's order: weight, then premises in rule order
            score = score * F.col(f"p{i}_sc")
        depth = F.col("p0_d") if n == 1 else F.greatest(*[F.col(f"p{i}_d") for i in range(n)])
        prem = F.array(*[F.struct(F.col(f"p{i}_s").alias("s"), F.lit(rule.premises[i].relation).alias("r"),
                                  F.col(f"p{i}_o").alias("o")) for i in range(n)])
        return acc.select(term(head.subject).alias("s"), F.lit(head.relation).alias("r"),
                          term(head.object).alias("o"), score.alias("score"), (depth + 1).alias("depth"),
                          F.lit(rule.name).alias("rule"), prem.alias("prem"))

    def _candidates(self, delta, delta_rels: set[str] | None):
        """Every derivation of the round (``delta`` None: round 1 over the asserted facts), best per head."""
        from pyspark.sql import Window

        F = self.F
        parts = []
        for plan in self.plans:
            if delta is None:
                if plan.start == 0:
                    parts.append(self._fire(plan, self.known))
            elif plan.rule.premises[plan.start].relation in delta_rels:
                parts.append(self._fire(plan, delta))
        if not parts:
            return None
        cands = parts[0]
        for p in parts[1:]:
            cands = cands.unionByName(p)
        w = Window.partitionBy("s", "r", "o").orderBy(F.col("score").desc(), F.col("depth").asc(),
                                                      F.col("rule").asc(), F.col("prem").asc())
        return cands.withColumn("_k", F.row_number().over(w)).where(F.col("_k") == 1).drop("_k")

    def _admit(self, best):
        """The candidates that enter: new facts, and strict improvements of derived ones."""
        F = self.F
        old = self.known.select("s", "r", "o", F.col("score").alias("old_score"), F.col("asserted").alias("old_asserted"))
        j = best.join(old, on=["s", "r", "o"], how="left")
        keep = F.col("old_score").isNull() | (~F.col("old_asserted") & (F.col("score") > F.col("old_score")))
        return j.where(keep).select("s", "r", "o", "score", "depth", F.lit(False).alias("asserted"), "rule", "prem",
                                    F.col("old_score").isNotNull().alias("_improved"))

    def run(self):
        """Run to fixpoint (or ``max_depth``); returns the known facts (asserted and derived)."""
        F = self.F
        delta, delta_rels, rnd = None, None, 0
        while True:
            if self.max_depth is not None and rnd >= self.max_depth:
                probe = self._candidates(delta, delta_rels)
                if probe is not None and not self._admit(probe).limit(1).rdd.isEmpty():
                    self.truncated = "depth"
                break
            t0 = time.perf_counter()
            best = self._candidates(delta, delta_rels)
            if best is None:
                break
            admitted = self._admit(best).localCheckpoint()
            counts = {row["_improved"]: row["n"] for row in admitted.groupBy("_improved").agg(F.count("*").alias("n")).collect()}
            rnd += 1
            if not counts:
                break
            admitted = admitted.drop("_improved")
            keys = admitted.select("s", "r", "o")
            self.known = self.known.join(keys, on=["s", "r", "o"], how="left_anti").unionByName(admitted).localCheckpoint()
            delta = admitted
            delta_rels = {row["r"] for row in admitted.select("r").distinct().collect()}
            stats = RoundStats(rnd, counts.get(False, 0), counts.get(True, 0), time.perf_counter() - t0)
            self.rounds.append(stats)
            if self.on_round is not None:
                self.on_round(stats)
        return self.known

    def derived(self):
        """The derived facts only: ``s, r, o, score, depth, rule, prem``."""
        return self.known.where(~self.F.col("asserted")).drop("asserted")


def spark_closure(spark, facts, rules: Iterable[Rule], *, max_depth: int | None = None,
                  on_round: Callable[[RoundStats], None] | None = None) -> SparkClosure:
    """Build and run a :class:`SparkClosure`; returns it (``.derived()``, ``.rounds``, ``.truncated``)."""
    run = SparkClosure(spark, facts, rules, max_depth=max_depth, on_round=on_round)
    run.run()
    return run
