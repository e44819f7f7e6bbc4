"""Usage reports (ccusage's): tokens and cost grouped by day, week, month, session, model or project.

Pure functions over the catalog's usage rows. A message's cost is its own `usage.cost` when it says
one, else its tokens priced from `pricing`; a message with neither leaves its group's cost
incomplete, and the report says so rather than counting it as free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, timedelta

from .catalog import UsageRow
from .format import datetime_at
from .pricing import Price, price_of

REPORTS = ("daily", "weekly", "monthly", "session", "model", "project")


@dataclass
class Totals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    cost: float = 0.0
    unpriced: int = 0  # messages whose cost is unknown
    messages: int = 0

    def add(self, row: UsageRow, cost: float | None) -> None:
        self.input += row.input
        self.output += row.output
        self.cache_read += row.cache_read
        self.cache_write += row.cache_write
        self.total += row.total
        self.messages += 1
        if cost is None:
            self.unpriced += 1
        else:
            self.cost += cost

    def as_dict(self) -> dict:
        """JSON's values: a cost summed past a float's range (costs a file says are 1e400) is no number
        JSON has, so it is null, as an unknown cost is."""
        known = round(self.cost, 6) if math.isfinite(self.cost) else None
        return {"input": self.input, "output": self.output, "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write, "totalTokens": self.total,
                "cost": known if not self.unpriced else None,
                "knownCost": known, "unpricedMessages": self.unpriced, "messages": self.messages}


@dataclass
class Group:
    key: str
    totals: Totals = field(default_factory=Totals)
    models: dict[str, Totals] = field(default_factory=dict)  # the --breakdown


def message_cost(row: UsageRow, overrides: Mapping[str, Price] | None = None) -> float | None:
    if row.cost is not None:
        return row.cost
    if row.provider == "harnesskit":  # the offline demo and script models cost nothing
        return 0.0
    if not (row.input or row.output or row.cache_read or row.cache_write):
        return 0.0  # nothing used costs nothing, priced or not
    price = price_of(row.model, overrides)
    return None if price is None else price.cost(row.input, row.output, row.cache_read, row.cache_write)


def group_key(report: str, row: UsageRow) -> str:
    """The group a row belongs to in `report` (days in UTC; weeks start on Monday)."""
    if report in ("daily", "weekly", "monthly"):
        when = datetime_at(row.time_ms, UTC, ms=True)
        if when is None:  # none recorded, or none a date holds (microseconds): counted, under no date
            return "(no time)"
        if report == "daily":
            return when.strftime("%Y-%m-%d")
        if report == "weekly":
            return (when - timedelta(days=when.weekday())).strftime("%Y-%m-%d")
        return when.strftime("%Y-%m")
    if report == "session":
        return row.path
    if report == "model":
        return row.model or "(unknown model)"
    if report == "project":
        return row.cwd or "(unknown directory)"
    raise ValueError(f"unknown report {report!r} (one of {', '.join(REPORTS)})")


def report(rows: Iterable[UsageRow], kind: str, overrides: Mapping[str, Price] | None = None
           ) -> tuple[list[Group], Totals]:
    """Groups in key order (time reports oldest first), and the grand total."""
    groups: dict[str, Group] = {}
    grand = Totals()
    for row in rows:
        cost = message_cost(row, overrides)
        key = group_key(kind, row)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(key)
        group.totals.add(row, cost)
        group.models.setdefault(row.model or "(unknown model)", Totals()).add(row, cost)
        grand.add(row, cost)
    return [groups[k] for k in sorted(groups)], grand
