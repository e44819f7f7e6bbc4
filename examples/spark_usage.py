"""The daily usage report over a harnesskit Parquet dataset, on Spark.

The same question `harnesskit usage daily` answers from session files and
`harnesskit query DIR "<USAGE_DAILY_SQL>"` answers with DuckDB, as a job a cluster runs unchanged
on a bucket of sessions (s3a://…, gs://…, abfss://… instead of a local directory):

    spark-submit examples/spark_usage.py /data/sessions            # or: python examples/spark_usage.py DIR

Prints one JSON object per day: day, input, output, cache_read, cache_write, total_tokens,
known_cost (the cost of priced messages), unpriced (messages without a price), messages.
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def daily_usage(spark: SparkSession, dataset: str) -> list[dict]:
    usage = spark.read.option("mergeSchema", "true").parquet(f"{dataset.rstrip('/')}/usage/part-*.parquet")
    day = F.date_format(F.from_utc_timestamp(F.timestamp_millis("time_ms"), "UTC"), "yyyy-MM-dd")
    rows = (usage.groupBy(day.alias("day"))
            .agg(F.sum("input").alias("input"), F.sum("output").alias("output"),
                 F.sum("cache_read").alias("cache_read"), F.sum("cache_write").alias("cache_write"),
                 F.sum("total_tokens").alias("total_tokens"),
                 F.round(F.sum(F.coalesce("cost", F.lit(0.0))), 6).alias("known_cost"),
                 (F.count(F.lit(1)) - F.count("cost")).alias("unpriced"), F.count(F.lit(1)).alias("messages"))
            .orderBy("day").collect())
    return [row.asDict() for row in rows]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: spark_usage.py DATASET_DIR")
    builder = SparkSession.builder.appName("harnesskit-usage").config("spark.sql.session.timeZone", "UTC")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # run by python, not spark-submit: a local two-core "cluster"
        builder = builder.master("local[2]").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for row in daily_usage(spark, sys.argv[1]):
            print(json.dumps(row))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
