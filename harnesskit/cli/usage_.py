"""`harnesskit usage`: tokens and cost by day, week, month, session, model or project."""

from __future__ import annotations

import math

import click

from harnesskit.config import ConfigError, load_config
from harnesskit.session import catalog, pricing
from harnesskit.session.usage import REPORTS, Totals, report

from . import render
from .errors import Fail
from .indexing import answered, parse_day
from .screen import echo

COLUMNS = ["input", "output", "cache read", "cache write", "total tokens", "cost"]


def _cost(totals: Totals) -> str:
    if totals.unpriced == totals.messages and totals.messages:
        return "unpriced"
    # an infinite cost (a file's 1e400) shows as JavaScript reads it; 1e400 and -1e400 sum to no number
    text = "not a number" if math.isnan(totals.cost) else f"${totals.cost:,.2f}"
    return f"{text} + {totals.unpriced} unpriced" if totals.unpriced else text


def _cells(totals: Totals) -> list[str]:
    return [f"{totals.input:,}", f"{totals.output:,}", f"{totals.cache_read:,}", f"{totals.cache_write:,}",
            f"{totals.total:,}", _cost(totals)]


@click.command("usage")
@click.argument("kind", type=click.Choice(REPORTS, case_sensitive=False), default="daily", required=False)
@click.option("--since", metavar="DAY", help="From this day on (YYYY-MM-DD, YYYYMMDD or ISO).")
@click.option("--until", metavar="DAY", help="Up to the end of this day.")
@click.option("--harness", type=click.Choice(["pi", "claude", "codex"], case_sensitive=False),
              help="Only sessions of this harness.")
@click.option("--breakdown", is_flag=True, help="A row per model under each group.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: groups and totals.")
def usage(kind: str, since: str | None, until: str | None, harness: str | None, breakdown: bool,
          as_json: bool) -> None:
    """Token usage and cost of every session, grouped (days and weeks in UTC).

    A message's cost is the one it recorded; otherwise its tokens are priced from the table
    shipped with harnesskit (or `pricing:` in config.yaml). Messages of a model without a price
    are shown as unpriced, never as free.

    \b
    Examples:
      harnesskit usage
      harnesskit usage monthly --since 2026-01-01
      harnesskit usage model --breakdown
      harnesskit usage session --json | jq '.totals.cost'
    """
    try:
        overrides = pricing.parse_overrides(load_config().get("pricing"))
    except (ConfigError, ValueError) as error:
        raise Fail(str(error)) from None
    filters = catalog.Filters(harness=harness.lower() if harness else None,
                              since_ms=parse_day(since, "--since"), until_ms=parse_day(until, "--until", end=True))
    kind = kind.lower()
    groups, grand = answered(lambda conn: report(catalog.usage_rows(conn, filters), kind, overrides))
    if as_json:
        echo(render.json_line({
            "report": kind,
            "groups": [{"key": g.key, **g.totals.as_dict(),
                        **({"models": {m: t.as_dict() for m, t in g.models.items()}} if breakdown else {})}
                       for g in groups],
            "totals": grand.as_dict(),
            "pricing": {"taken": pricing.TAKEN, "source": pricing.SOURCE},
        }))
        return
    if not groups:
        echo("no usage recorded" + (" in that period" if since or until else ""), err=True)
        return
    rows = []
    for group in groups:
        rows.append([render.cut(render.one_line(group.key), 60), *_cells(group.totals)])
        if breakdown:
            rows += [[f"  └ {model}", *_cells(totals)] for model, totals in sorted(group.models.items())]
    rows.append(["total", *_cells(grand)])
    echo(render.tabulate(rows, headers=[kind, *COLUMNS], disable_numparse=True,
                        colalign=("left", *["right"] * len(COLUMNS))))
