"""Counts over a whole session: what `inspect --stats` reports, counted entry by entry.

`StatsCounter` takes the entries one at a time (keeping none of them: only the id, parent and type
columns for the tree's shape), so `--stats` streams; `session_stats(tree)` counts a loaded tree.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter
from functools import reduce
from typing import NamedTuple

from .tree import Tree

TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _number(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value if isinstance(value, int) or math.isfinite(value) else 0


def _add(total: int | float, value: int | float) -> int | float:
    """`total + value` that never overflows: JSON integers have no size limit, floats do (an int
    beyond 1e308 meets a float, or two floats near the limit meet); past a float the fractions
    cannot matter, so the sum goes on in exact integers."""
    try:
        result = total + value
    except OverflowError:
        return int(total) + int(value)
    return result if isinstance(result, int) or math.isfinite(result) else int(total) + int(value)


def _fold(total: int | float, costs: list[int | float]) -> int | float:
    """`_add` of each cost in turn, in C where no sum meets the float limit (then every later sum is
    infinite or NaN, or an addition raised, and the costs are added again one by one)."""
    try:
        result = reduce(operator.add, costs, total)
    except OverflowError:
        result = math.inf
    if isinstance(result, int) or math.isfinite(result):
        return result
    for cost in costs:
        total = _add(total, cost)
    return total


class Shape(NamedTuple):
    """What --stats tells of the tree: as Tree.children() and Tree.path() would count them."""

    entries: int
    roots: int
    leaves: int
    branch_points: int
    depth: int


class StatsCounter:
    def __init__(self) -> None:
        self.types: Counter[str] = Counter()
        self.roles: Counter[str] = Counter()
        self.tools: Counter[str] = Counter()
        self.tokens: dict[str, int | float] = dict.fromkeys(TOKEN_KEYS, 0)
        self.cost: int | float = 0.0
        # costs in order, to be added to the sum by `settle` or a merge (a float sum depends on its order)
        self.cost_log: list[int | float] | None = None

    def add(self, entry: dict) -> None:
        kind = entry["type"]
        self.types[kind] += 1
        if kind != "message":
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role")
        self.roles[str(role)] += 1
        if role != "assistant":
            return
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                self.tools[str(block.get("name"))] += 1
        usage = message.get("usage")
        if isinstance(usage, dict):
            tokens = self.tokens
            for key in TOKEN_KEYS:
                value, total = usage.get(key), tokens[key]
                if value.__class__ is int and total.__class__ is int:  # the common case: exact, cannot overflow
                    tokens[key] = total + value
                elif value is not None:  # (absent adds nothing)
                    tokens[key] = _add(total, _number(value))
            if isinstance(usage.get("cost"), dict):
                cost = _number(usage["cost"].get("total"))
                if self.cost_log is None:
                    self.cost = _add(self.cost, cost)
                else:
                    self.cost_log.append(cost)

    def merge(self, later: StatsCounter) -> bool:
        """Add the counts of the entries after this counter's (counted with a `cost_log`), with the same
        result as counting them here; False (and nothing added) when that cannot be exact: a token
        count that is not an integer on either side."""
        if not all(v.__class__ is int for v in (*self.tokens.values(), *later.tokens.values())):
            return False
        for mine, theirs in ((self.types, later.types), (self.roles, later.roles), (self.tools, later.tools)):
            for key, count in theirs.items():  # in their order after ours: most_common's order of ties
                mine[key] += count
        for key in TOKEN_KEYS:
            self.tokens[key] += later.tokens[key]
        if self.cost_log is None:
            self.cost = _fold(self.cost, later.cost_log or [])
        else:
            self.cost_log += later.cost_log or []
        return True

    def settle(self) -> None:
        """Add the logged costs to the sum, in their order."""
        if self.cost_log:
            self.cost = _fold(self.cost, self.cost_log)
        self.cost_log = None

    def result(self, tree: Tree) -> dict:
        """The counts, with the shape of `tree` (built from the same entries' columns)."""
        get = tree.by_id.get  # each entry's parent position, looked up once for both walks
        up = [None if parent is None else get(parent) for parent in tree.parents]
        return self.shaped(Shape(len(tree), *_shape(up), _depth(tree, up)))

    def shaped(self, shape: Shape) -> dict:
        """The counts, with the tree's shape."""
        self.settle()
        return {
            "entries": shape.entries,
            "types": dict(self.types.most_common()),
            "roles": dict(self.roles.most_common()),
            "branch_points": shape.branch_points,
            "leaves": shape.leaves,
            "roots": shape.roots,
            "depth": shape.depth,
            "tool_calls": dict(self.tools.most_common()),
            "tokens": {k: int(self.tokens[k]) for k in TOKEN_KEYS},
            "cost": round(self.cost, 6),
        }


def session_stats(tree: Tree) -> dict:
    counter = StatsCounter()
    for pos in range(len(tree)):
        if tree.types[pos] == "message":
            counter.add(tree.entries[pos])
        else:
            counter.types[tree.types[pos]] += 1
    return counter.result(tree)


def _shape(up: list[int | None]) -> tuple[int, int, int]:
    """(roots, leaves, branch points) as Tree.children() counts them, in arrays, not a dict of lists."""
    kids = array("l", [0]) * len(up)
    roots = 0
    for parent in up:
        if parent is None:
            roots += 1
        else:
            kids[parent] += 1
    leaves = kids.count(0)
    return roots, leaves, len(kids) - leaves - kids.count(1)


def _depth(tree: Tree, up: list[int | None]) -> int:
    """The longest root -> entry path, computed in file order (parents usually come first)."""
    depth = array("l", [0]) * len(up)
    best = 0
    for pos, parent in enumerate(up):
        if parent is None:
            d = 1
        elif parent >= pos:
            d = len(tree.path(pos))
        else:
            d = depth[parent] + 1
        depth[pos] = d
        if d > best:
            best = d
    return best
