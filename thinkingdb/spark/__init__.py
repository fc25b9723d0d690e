"""The closure past one machine: the rules' semi-naive rounds run as Spark DataFrame joins
(optional extra ``thinkingdb[spark]``; docs/distributed.md).

Nothing here partitions, shuffles, spills or retries by itself: Spark does. The module adds the plan
(:mod:`thinkingdb.engine.plan`, shared with the in-process columnar engine) and the exact scoring and tie-breaking of the
in-process engine, whose answers are the reference.
"""

from .executor import RoundStats, SparkClosure, spark_closure

__all__ = ["RoundStats", "SparkClosure", "spark_closure"]
