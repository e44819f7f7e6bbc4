"""Two pieces under `inspect --tree`'s fast lane. Stream.blocks hands out the lines after the header a
block at a time: every line once, in order, with its number and offset, whatever the block size (lines
longer than a block, a block ending right after a newline, no newline at the end). Tree.parent_at
takes a chain's parent as the entry before it without a lookup: it must be the plain lookup's answer
for any ids and parentIds (a parentId equal to the id before but not the same object, ids twice,
None on both sides, dangling and forward parents)."""

from __future__ import annotations

import pickle
from array import array
from itertools import repeat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesskit.session.stream import open_stream
from harnesskit.session.tree import Tree, join_halves, links_of

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
LINE = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from([b"", b"\r", b"{}", b"x" * 300])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, max_size=30), final_newline=st.booleans(), size=st.integers(1, 400))
def test_blocks_are_the_lines(tmp_path: Path, lines: list[bytes], final_newline: bool, size: int) -> None:
    body = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER + body)
    stream = open_stream(path)
    got: list[tuple[int, int, bytes]] = []
    for number, offset, block, terminated in stream.blocks(size):
        assert block and (terminated or len(block) == 1)
        for line in block:
            assert line.endswith(b"\n") == terminated
            got.append((number, offset, line))
            number += 1
            offset += len(line)
    expected, offset = [], len(HEADER)
    for number, line in enumerate(_lines(body), 2):
        expected.append((number, offset, line))
        offset += len(line)
    assert got == expected
    assert stream.next_line == 2 + len(expected)


def _lines(data: bytes) -> list[bytes]:
    """Lines as the file has them: ended by b"\\n" only, each with its newline (the last maybe without)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


CHANGES = st.lists(st.tuples(st.integers(0, 59), st.sampled_from(
    ["copy", "none", "dangling", "forward", "far", "id twice", "no id", "cycle"]), st.integers(0, 59)), max_size=12)


def columns(n: int, changes: list[tuple[int, str, int]]) -> tuple[list[str | None], list[str | None]]:
    """A chain of n entries with `changes` made to it (see test_parent_at_is_the_lookup)."""
    ids: list[str | None] = [f"{i:08x}" for i in range(n)]
    parents: list[str | None] = [None, *ids[:-1]][:n]  # a chain: each parentId the very object of the id before
    for pos, how, other in changes:
        if pos >= n:
            continue
        before = ids[pos - 1] if pos else None
        if how == "copy":  # equal to the id before, another object
            parents[pos] = None if before is None else "".join(list(before))
        elif how == "none":
            parents[pos] = None
        elif how == "dangling":
            parents[pos] = "ffffffff"
        elif how in ("forward", "far"):
            parents[pos] = ids[other % n]
        elif how == "id twice":
            ids[pos] = ids[other % n]
        elif how == "cycle":  # an earlier entry's parent made this one: a loop through both
            parents[other % (pos + 1)] = ids[pos]
        else:
            ids[pos] = None
    return ids, parents


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 60), changes=CHANGES)
def test_parent_at_is_the_lookup(n: int, changes: list[tuple[int, str, int]]) -> None:
    ids, parents = columns(n, changes)
    tree = Tree.from_columns(ids, parents, ["message"] * n, list(range(1, n + 1)), [])
    assert tree.parent_at == array("q", map(tree.by_id.get, parents, repeat(-1)))


@settings(max_examples=500, deadline=None)
@given(n=st.integers(1, 60), changes=CHANGES, at=st.integers(0, 60))
def test_halves_join_as_from_columns(n: int, changes: list[tuple[int, str, int]], at: int) -> None:
    """`inspect --tree` in two processes links each half where it was read and joins them (join_halves):
    the same parent positions and the same diagnostics, in the same order, as from_columns of the whole;
    None (from_columns then) exactly when an id is there twice, in a half or across the cut."""
    ids, parents = columns(n, changes)
    cut = at % (n + 1)
    lines = list(range(2, n + 2))
    tree = Tree.from_columns(ids, parents, ["message"] * n, lines, [])
    by_id, first = links_of(ids[:cut], parents[:cut])
    # the worker's half arrives pickled: its chain parents stay the very objects of its ids, as sent
    second = pickle.loads(pickle.dumps(links_of(ids[cut:], parents[cut:])[1]))
    joined = join_halves(ids, parents, lines, cut, by_id, first, second)
    twice = len({i for i in ids if i is not None}) < n - ids.count(None)
    if twice:
        assert joined is None
        return
    assert joined is not None
    parent_at, diagnostics, starts = joined
    assert (parent_at, diagnostics) == (tree.parent_at, tree.diagnostics)
    assert starts == [pos for pos in range(n) if pos == 0 or parent_at[pos] != pos - 1]


@settings(max_examples=400, deadline=None)
@given(n=st.integers(1, 60), changes=CHANGES, stamps=st.lists(st.none() | st.integers(0, 5), min_size=60, max_size=60))
def test_runs_walk_as_the_drawing(n: int, changes: list[tuple[int, str, int]], stamps: list[int | None]) -> None:
    """`inspect --tree` walks chains as runs (tree_stream._runs, run ends found by bisection): entry by
    entry, with the lead of each line, that is render._walk's order, siblings sorted by time, cycles and
    entries no root reaches included."""
    from harnesskit.cli import render, tree_stream

    ids, parents = columns(n, changes)
    tree = Tree.from_columns(ids, parents, ["message"] * n, list(range(1, n + 1)), [])
    stamp = stamps.__getitem__
    walked = []
    for start, stop, lead, prefix in tree_stream._runs(tree.parent_at, stamp):
        walked += [(start, lead), *((pos, prefix) for pos in range(start + 1, stop))]
    assert walked == list(render._walk(tree, None, stamp))
