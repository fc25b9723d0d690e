"""Entry point for ``spark-submit``: ``materialize`` with the master and settings spark-submit gives.

    spark-submit --master yarn .../thinkingdb/cli/spark_submit.py --in s3a://b/facts/ --out s3a://b/closure/

Arguments are those of ``thinkingdb materialize`` (``--engine spark`` is implied; ``--master`` is
spark-submit's own).
"""

import sys

from thinkingdb.cli import main

if __name__ == "__main__":
    sys.exit(main(["materialize", "--engine", "spark", "--master", "", *sys.argv[1:]]))
