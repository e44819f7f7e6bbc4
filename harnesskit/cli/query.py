"""`harnesskit query`: SQL (DuckDB) over a Parquet dataset written by `export --parquet`."""

from __future__ import annotations

from pathlib import Path

import click

from . import render
from .errors import Fail
from .screen import echo


@click.command("query")
@click.argument("dataset", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("sql")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one row per line.")
def query(dataset: Path, sql: str, as_json: bool) -> None:
    """Run SQL over the tables of a dataset: sessions, entries, messages, tool_calls, usage.

    Each table is a view over every export's files in DATASET/TABLE/, so the answer covers all
    the machines that exported there.

    \\b
    Examples:
      harnesskit query /data/sessions "SELECT model, sum(total_tokens) FROM usage GROUP BY 1"
      harnesskit query /data/sessions "SELECT name, count(*) FROM tool_calls GROUP BY 1 ORDER BY 2 DESC"
      harnesskit query /data/sessions --json "SELECT * FROM sessions" | jq -r .cwd
    """
    try:
        import duckdb
    except ImportError:
        raise Fail("query needs duckdb: pip install 'harnesskit[fleet]'") from None
    from harnesskit.export.datasets import open_dataset

    try:
        conn = open_dataset(dataset)
        cursor = conn.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    except duckdb.Error as error:
        raise Fail(" ".join(str(error).split())) from None
    if as_json:
        for row in rows:
            echo(render.json_line(dict(zip(columns, row, strict=True))))
        return

    echo(render.tabulate([[render.one_line(str(v)) if isinstance(v, str) else v for v in row] for row in rows],
                        headers=columns, disable_numparse=True))
