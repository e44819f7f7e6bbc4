"""Counts over a whole session: what `inspect --stats` reports."""

from __future__ import annotations

import math
from collections import Counter

from .tree import Tree


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


TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def session_stats(tree: Tree) -> dict:
    types: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    tokens: dict[str, int | float] = dict.fromkeys(TOKEN_KEYS, 0)
    cost: int | float = 0.0
    for pos, kind in enumerate(tree.types):
        types[kind] += 1
        if kind != "message":
            continue
        message = tree.entries[pos].get("message")
        if not isinstance(message, dict):
            continue
        roles[str(message.get("role"))] += 1
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                tools[str(block.get("name"))] += 1
        usage = message.get("usage")
        if isinstance(usage, dict):
            for key in TOKEN_KEYS:
                tokens[key] = _add(tokens[key], _number(usage.get(key)))
            if isinstance(usage.get("cost"), dict):
                cost = _add(cost, _number(usage["cost"].get("total")))
    kids = tree.children()
    leaves = [pos for pos in range(len(tree)) if pos not in kids]
    branch_points = sum(1 for parent, children in kids.items() if parent is not None and len(children) > 1)
    return {
        "entries": len(tree),
        "types": dict(types.most_common()),
        "roles": dict(roles.most_common()),
        "branch_points": branch_points,
        "leaves": len(leaves),
        "roots": len(kids.get(None, [])),
        "depth": _depth(tree),
        "tool_calls": dict(tools.most_common()),
        "tokens": {k: int(tokens[k]) for k in TOKEN_KEYS},
        "cost": round(cost, 6),
    }


def _depth(tree: Tree) -> int:
    """The longest root -> entry path, computed in file order (parents usually come first)."""
    depth: dict[int, int] = {}
    best = 0
    for pos in range(len(tree)):
        parent = tree.parent_pos(pos)
        if parent is None or parent >= pos:
            d = 1 if parent is None else len(tree.path(pos))
        else:
            d = depth.get(parent, 0) + 1
        depth[pos] = d
        best = max(best, d)
    return best
