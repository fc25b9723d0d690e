"""Semi-naive closure on Spark DataFrames: the same rounds, scores, depths and tie-breaks as the
in-process engine (:mod:`thinkingdb.engine.closure`), with partitioning, shuffles, spilling and
retries left to Spark.

The state is one DataFrame of known facts ``(s, r, o, score, depth, asserted, rule, prem)``, with
canonical keys as strings. Each round runs the plan of :mod:`thinkingdb.engine.plan`, the same plan the
in-process columnar engine runs: round 1 fires every rule over the asserted facts; round *d* > 1 fires,
for every rule and every premise whose relation changed in round *d - 1*, the rule with that premise
drawn from the round's delta and the others from the known facts, joined in the planner's order. Per head the
best candidate wins: highest score, then lowest depth, then the canonical order (rule name, then the
premise keys compared as strings), exactly as the in-process engine breaks ties. A candidate enters
when its fact is new, or improves a derived fact's score strictly; an asserted fact is never
replaced. Scores multiply in the engine's order, ``weight × score(premise 1) × score(premise 2) ...``,
in IEEE doubles on both sides, so they agree to the bit.

Every round's admitted facts are checkpointed locally; the known facts are the union of those
checkpoints (re-checkpointed after a round that improved a derived fact, whose old row an anti-join
drops), so the lineage Spark keeps stays one round long and a round that only adds facts shuffles or
copies none of the known ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import ValidationError
from ..engine.plan import Pipeline, Program, plan_round
from ..model import Atom, Rule, Var

__all__ = ["RoundStats", "SparkClosure", "spark_closure"]


@dataclass(frozen=True, slots=True)
class RoundStats:
    """One round: facts new or improved in it, seconds taken, and the plan it ran (one line per pipeline)."""

    round: int
    new: int
    improved: int
    seconds: float
    plan: str = ""


class _Sizes:
    """What the planner asks about the known facts, from counts the rounds collect anyway (no extra
    Spark job): facts per relation; fanout is not counted (taken as 1), so joins on a bound variable
    are ordered by relation size only."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def size(self, relation: str) -> int:
        return self.sizes.get(relation, 0)

    def fanout(self, relation: str, end: int) -> float:
        return 1.0

    def matches(self, atom: Atom) -> int:
        return self.size(atom.relation)


def _check_rules(rules: tuple[Rule, ...]) -> None:
    for rule in rules:
        if getattr(rule, "negated", ()):   # stratified negation is evaluated in process only
            raise ValidationError(f"rule {rule.name!r}: negated premises are not supported by the Spark engine")
        if getattr(rule, "constraints", ()):   # so are comparisons and arithmetic
            raise ValidationError(f"rule {rule.name!r}: comparisons are not supported by the Spark engine")


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
                            F.lit(None).cast("string").alias("rule"), F.lit(None).cast("double").alias("weight"),
                            F.lit(None).cast("array<struct<s:string,r:string,o:string>>").alias("prem")))
        self.known = asserted.localCheckpoint()
        self.program = Program.of(self.rules)
        self.sizes = {row["r"]: row["n"] for row in self.known.groupBy("r").agg(F.count("*").alias("n")).collect()}
        self.rounds: list[RoundStats] = []
        self.truncated: str | None = None

    # -- one premise, one rule --------------------------------------------------------------------
    def _atom(self, df, atom: Atom, idx: int):
        """The facts matching ``atom`` as columns: one per variable (``v_{name}``), plus this premise's
        score and depth (``p{idx}_sc``, ``p{idx}_d``). Its keys are not copied: they are the variables'
        columns or the atom's constants (:meth:`_key`), so a shuffle carries each key once."""
        F = self.F
        d = df.where(F.col("r") == atom.relation)
        for pos, t in (("s", atom.subject), ("o", atom.object)):
            if not isinstance(t, Var):
                d = d.where(F.col(pos) == t)
        if isinstance(atom.subject, Var) and atom.subject == atom.object:
            d = d.where(F.col("s") == F.col("o"))
        cols = [F.col("score").alias(f"p{idx}_sc"), F.col("depth").alias(f"p{idx}_d")]
        seen = set()
        for pos, t in (("s", atom.subject), ("o", atom.object)):
            if isinstance(t, Var) and t not in seen:
                seen.add(t)
                cols.append(F.col(pos).alias(f"v_{t.name}"))
        return d.select(*cols)

    def _key(self, t):
        """A premise's or the head's key at one position: its variable's column, or the constant."""
        return self.F.col(f"v_{t.name}") if isinstance(t, Var) else self.F.lit(t)

    def _fire(self, pipeline: Pipeline, start_df):
        F = self.F
        rule = self.program.rules[pipeline.rule].rule
        acc = self._atom(start_df, pipeline.start.atom, pipeline.start.premise)
        bound = set(pipeline.start.atom.variables())
        for step in pipeline.steps:   # check / by_subject / by_object: a join on the shared variables
            atom, i = step.atom, step.premise
            right = self._atom(self.known, atom, i)
            shared = sorted({v.name for v in atom.variables()} & {v.name for v in bound})
            acc = acc.join(right, on=[f"v_{n}" for n in shared], how="inner") if shared else acc.crossJoin(right)
            bound |= set(atom.variables())
        head, term = rule.head, self._key
        n = len(rule.premises)
        score = F.lit(float(rule.weight))
        for i in range(n):                      # the engine's order: weight, then premises in rule order
            score = score * F.col(f"p{i}_sc")
        depth = F.col("p0_d") if n == 1 else F.greatest(*[F.col(f"p{i}_d") for i in range(n)])
        prem = F.array(*[F.struct(term(p.subject).alias("s"), F.lit(p.relation).alias("r"), term(p.object).alias("o"))
                         for p in rule.premises])
        return acc.select(term(head.subject).alias("s"), F.lit(head.relation).alias("r"),
                          term(head.object).alias("o"), score.alias("score"), (depth + 1).alias("depth"),
                          F.lit(rule.name).alias("rule"), F.lit(float(rule.weight)).alias("weight"),
                          prem.alias("prem"))

    def _candidates(self, rnd: int, delta, delta_rels: dict[str, int] | None, best: bool = True):
        """Every derivation of round ``rnd`` (``delta`` None: round 1 over the asserted facts), best per
        head unless ``best`` is false, and the round's plan."""
        from pyspark.sql import Window

        F = self.F
        plan = plan_round(self.program, rnd, _Sizes(self.sizes), delta_rels)
        parts = [self._fire(pl, self.known if delta is None else delta) for pl in plan.pipelines]
        if not parts:
            return None, plan
        cands = parts[0]
        for p in parts[1:]:
            cands = cands.unionByName(p)
        if not best:
            return cands, plan
        w = Window.partitionBy("s", "r", "o").orderBy(F.col("score").desc(), F.col("depth").asc(),
                                                      F.col("rule").asc(), F.col("prem").asc())
        return cands.withColumn("_k", F.row_number().over(w)).where(F.col("_k") == 1).drop("_k"), plan

    def _admit(self, best):
        """The candidates that enter: new facts, and strict improvements of derived ones."""
        F = self.F
        old = self.known.select("s", "r", "o", F.col("score").alias("old_score"), F.col("asserted").alias("old_asserted"))
        j = best.join(old, on=["s", "r", "o"], how="left")
        keep = F.col("old_score").isNull() | (~F.col("old_asserted") & (F.col("score") > F.col("old_score")))
        return j.where(keep).select("s", "r", "o", "score", "depth", F.lit(False).alias("asserted"), "rule", "weight", "prem",
                                    F.col("old_score").isNotNull().alias("_improved"))

    def run(self):
        """Run to fixpoint (or ``max_depth``); returns the known facts (asserted and derived)."""
        F = self.F
        delta, delta_rels, rnd = None, None, 0
        while True:
            if self.max_depth is not None and rnd >= self.max_depth:
                # one more round would admit a fact iff some derivation of it would (a head's best
                # derivation scores at least as high as any other): no per-head reduce, keys only
                probe, _ = self._candidates(rnd + 1, delta, delta_rels, best=False)
                if probe is not None and self._admit(probe).select("s", "r", "o").limit(1).collect():
                    self.truncated = "depth"
                break
            t0 = time.perf_counter()
            best, plan = self._candidates(rnd + 1, delta, delta_rels)
            if best is None:
                break
            admitted = self._admit(best).localCheckpoint()
            counts = admitted.groupBy("r", "_improved").agg(F.count("*").alias("n")).collect()
            rnd += 1
            if not counts:
                break
            admitted = admitted.drop("_improved")
            if any(row["_improved"] for row in counts):   # replace the improved facts' old rows
                keys = admitted.select("s", "r", "o")
                self.known = (self.known.join(keys, on=["s", "r", "o"], how="left_anti").unionByName(admitted)
                              .localCheckpoint())
            else:   # only new facts: both sides are checkpointed already, nothing to shuffle or copy
                self.known = self.known.unionByName(admitted)
            delta, delta_rels = admitted, {}
            for row in counts:
                delta_rels[row["r"]] = delta_rels.get(row["r"], 0) + row["n"]
                if not row["_improved"]:
                    self.sizes[row["r"]] = self.sizes.get(row["r"], 0) + row["n"]
            new = sum(row["n"] for row in counts if not row["_improved"])
            stats = RoundStats(rnd, new, sum(row["n"] for row in counts) - new, time.perf_counter() - t0,
                               plan.describe())
            self.rounds.append(stats)
            if self.on_round is not None:
                self.on_round(stats)
        return self.known

    def derived(self):
        """The derived facts only: ``s, r, o, score, depth, rule, weight, prem``."""
        return self.known.where(~self.F.col("asserted")).drop("asserted")


def spark_closure(spark, facts, rules: Iterable[Rule], *, max_depth: int | None = None,
                  on_round: Callable[[RoundStats], None] | None = None) -> SparkClosure:
    """Build and run a :class:`SparkClosure`; returns it (``.derived()``, ``.rounds``, ``.truncated``)."""
    run = SparkClosure(spark, facts, rules, max_depth=max_depth, on_round=on_round)
    run.run()
    return run
