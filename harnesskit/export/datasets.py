"""Reading a Parquet dataset of sessions back: DuckDB views over every export's files, and the
usage report as SQL (the same figures `harnesskit usage` gives from the session files)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from .parquet import SCHEMA

# The daily usage report over the `usage` table (tokens, and the cost of priced messages), in UTC.
USAGE_DAILY_SQL = """
SELECT strftime(to_timestamp(time_ms / 1000) AT TIME ZONE 'UTC', '%Y-%m-%d') AS day,
       sum(input) AS input, sum(output) AS output, sum(cache_read) AS cache_read,
       sum(cache_write) AS cache_write, sum(total_tokens) AS total_tokens,
       round(sum(coalesce(cost, 0)), 6) AS known_cost, count(*) - count(cost) AS unpriced, count(*) AS messages
FROM usage GROUP BY day ORDER BY day
"""


def open_dataset(directory: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per table over DIRECTORY/TABLE/*.parquet (tables with no
    files yet are empty views of the documented schema)."""
    conn = duckdb.connect(":memory:")
    for table, schema in SCHEMA.items():
        files = sorted(str(p) for p in (directory / table).glob("part-*.parquet"))
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            conn.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)")
        else:
            columns = ", ".join(f"CAST(NULL AS {_sql_type(f.type)}) AS {f.name}" for f in schema)
            conn.execute(f"CREATE VIEW {table} AS SELECT {columns} WHERE false")
    return conn


def _sql_type(kind: object) -> str:
    return {"string": "VARCHAR", "int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN"}[str(kind)]
