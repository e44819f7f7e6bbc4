"""`list`'s output cache (issue 7): a listing of exactly the state already listed, with the same
options, prints what was printed, byte for byte, without reading any session; any change to any
file (an append, a truncation, a rewrite of the same size with its mtime put back, a replacement
by rename, a deletion, a new file or directory), another terminal width, another time zone,
another index, and it is passed over. Each answer is held to a listing with no cache at all."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from writeside_helpers import Env, invoke, isolate

from harnesskit.session import listing, snapshot
from harnesskit.session.store import encode_cwd

T0 = 1_800_000_000_000  # ms
SETTLE = 0.05  # s: the margin the tests give a change to settle (the default is 2 s)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    monkeypatch.setenv("COLUMNS", "150")
    monkeypatch.setattr(snapshot, "_SETTLED_NS", int(SETTLE * 1e9))
    yield isolate(tmp_path, monkeypatch)
    time.tzset()  # monkeypatch has put TZ back: the C library's zone too


def session(directory: Path, index: int, prompt: str, turns: int = 1) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    sid = f"01a23000-0000-7000-8000-{index:012d}"
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2027-01-01T00:00:00.000Z", "cwd": "/w"}]
    for k in range(2 * turns):
        message: dict = {"role": "assistant" if k % 2 else "user", "timestamp": T0 + index * 60_000 + k,
                         "content": [{"type": "text", "text": prompt if k == 0 else f"reply {k}"}]}
        if k % 2:
            message.update(api="x", provider="p", model="m1", usage={}, stopReason="stop")
        lines.append({"type": "message", "id": f"{k:08x}", "parentId": f"{k - 1:08x}" if k else None,
                      "timestamp": "2027-01-15T08:00:00.000Z", "message": message})
    path = directory / f"2027-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return path


class Listing:
    """`list` with these options, counting the listings that were read rather than printed from the cache."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, home: Path, *args: str) -> None:
        self.args, self.home, self.read = args, home, 0
        real = listing._list_rows

        def counted(*a: object) -> object:
            self.read += 1
            return real(*a)  # type: ignore[arg-type]

        monkeypatch.setattr(listing, "_list_rows", counted)

    def __call__(self) -> bytes:
        result = invoke("list", *self.args)
        assert result.exit_code == 0, result.stderr
        return result.stdout_bytes

    def fresh(self) -> bytes:
        """What the listing prints with no cache of any kind (then the caches are made again)."""
        shutil.rmtree(self.home / "cache", ignore_errors=True)
        return self()

    def cached(self) -> bytes:
        """The listing, once the files have settled: made, kept, then printed from the cache."""
        time.sleep(SETTLE * 2)
        made = self()
        before = self.read
        again = self()
        assert self.read == before, "printed from the cache"
        assert again == made
        return made


def changes(d: Path, other: Path) -> Iterator[tuple[str, Callable[[], None]]]:
    """Each kind of change that must end a cached answer, as (what, do it)."""
    def append() -> None:
        with (d / name(d, 1)).open("a") as fp:
            fp.write(json.dumps({"type": "session_info", "id": "ffffffff", "parentId": "00000001",
                                 "timestamp": "2027-01-15T08:00:00.000Z", "name": "renamed"}) + "\n")

    def truncate() -> None:
        path = d / name(d, 2)
        data = path.read_bytes()
        path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])  # the last line gone

    def same_size() -> None:
        path = d / name(d, 3)
        st = path.stat()
        path.write_bytes(path.read_bytes().replace(b"prompt 3", b"PROMPT 3"))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back: only the ctime tells
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    def replaced() -> None:
        path = d / name(d, 4)
        st = path.stat()
        new = path.with_suffix(".tmp")
        new.write_bytes(path.read_bytes().replace(b"prompt 4", b"PROMPT 4"))
        os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(new, path)  # another inode, same name, size and mtime

    def deleted() -> None:
        (d / name(d, 5)).unlink()

    def new_file() -> None:
        session(d, 9, "prompt 9")

    def new_dir() -> None:
        session(other.parent / "--elsewhere--", 10, "prompt 10")

    def other_dir() -> None:
        with (other / name(other, 7)).open("a") as fp:
            fp.write("\n")

    yield from [("an append", append), ("a truncation", truncate), ("a same-size rewrite", same_size),
                ("a replacement by rename", replaced), ("a deletion", deleted), ("a new file", new_file),
                ("a new directory", new_dir), ("a change in another directory", other_dir)]


def name(d: Path, index: int) -> str:
    return next(p.name for p in d.iterdir() if p.name.endswith(f"{index:012d}.jsonl"))


@pytest.mark.parametrize("args", [("--all",), ("--all", "--json"), ("--all", "-n", "3"), (), ("-n", "2", "--json")])
@pytest.mark.parametrize("indexed", [False, True])
def test_a_cached_output_is_never_stale(env: Env, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                         indexed: bool) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    other = env.sessions / "--other--"
    for i in range(1, 7):
        session(here, i, f"prompt {i}", turns=2)
    session(other, 7, "prompt 7")
    if indexed:
        assert invoke("index", "-q").exit_code == 0
    run = Listing(monkeypatch, env.home, *args)
    shown = run.cached()
    assert shown == run.fresh()
    for what, change in changes(here, other):
        change()
        after = run()
        assert after == run.fresh(), what
        shown = run.cached()  # the new state, cached in turn for the next change
    assert b"renamed" in shown or "-n" in args
    assert list((env.home / "cache" / "list").glob("out-*.bin"))


def test_the_output_cache_is_exactly_what_was_printed(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    for i in range(30):
        session(here, i, f"prompt {i} " + "é文" * i)  # wide characters: cut and padded by display width
    session(here, 40, "a control \x1b[31m character")
    for args in [(), ("--json",), ("-n", "5"), ("--full-path",)]:
        run = Listing(monkeypatch, env.home, *args)
        made = run.fresh()
        assert run.cached() == made


def test_width_zone_and_index_are_part_of_the_answer(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    for i in range(5):
        session(here, i, f"prompt {i} " + "x" * 200)
    run = Listing(monkeypatch, env.home)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    wide = run.cached()
    monkeypatch.setenv("COLUMNS", "90")
    narrow = run()
    assert narrow == run.fresh() and narrow != wide
    monkeypatch.setenv("COLUMNS", "150")
    assert run.cached() == wide
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    tokyo = run()
    assert tokyo == run.fresh() and tokyo != wide  # 08:00 UTC is 17:00 there
    run.cached()
    before = run.read
    assert invoke("index", "-q").exit_code == 0
    assert run() == tokyo and run.read == before + 1  # the index answers now: read through it once


def test_a_damaged_or_foreign_output_cache_is_passed_over(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    for i in range(4):
        session(here, i, f"prompt {i}")
    run = Listing(monkeypatch, env.home, "--json")
    shown = run.cached()
    (out,) = (env.home / "cache" / "list").glob("out-*.bin")
    good = out.read_bytes()
    head = good[: len(good) - len(shown)]
    flipped = bytearray(good)
    flipped[-2] ^= 1  # a damaged output under an intact head
    for junk in [b"", good[:10], head, head[:-1] + bytes([head[-1] ^ 1]) + shown, b"x" + good[1:],
                 good.replace(b'"width":null', b'"width":150'), good[:-1], bytes(flipped), good + b"\x07"]:
        out.write_bytes(junk)
        before = run.read
        assert run() == shown
        assert run.read == before + 1, junk[:40]  # not taken: read again
    os.chmod(out, 0)  # unreadable (as a user; root reads it anyway): read again, or taken, never wrong
    assert run() == shown
    os.chmod(out, 0o644)


def test_a_recent_change_is_not_cached(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within the file system's timestamp granularity a later write could leave the key as it
    was: a listing of a file changed so recently is printed and not kept."""
    monkeypatch.setattr(snapshot, "_SETTLED_NS", 3_600 * 10**9)
    here = env.sessions / encode_cwd(os.getcwd())
    session(here, 1, "prompt 1")
    run = Listing(monkeypatch, env.home)
    shown = run()
    assert run() == shown and run.read == 2
    assert not list((env.home / "cache" / "list").glob("out-*.bin"))


def test_a_cached_output_is_printed_in_the_terminal_s_encoding(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept as UTF-8, printed as click prints text where stdout is not UTF-8 (not as the kept bytes)."""
    from click.testing import CliRunner

    from harnesskit.cli import cli

    here = env.sessions / encode_cwd(os.getcwd())
    session(here, 1, "un café")
    run = Listing(monkeypatch, env.home, "--full-path")  # no "…" (no latin-1) in a cut path

    def latin(*args: str) -> bytes:
        result = CliRunner(charset="latin-1").invoke(cli, ["list", "--full-path", *args])
        assert result.exit_code == 0, result.stderr
        return result.stdout_bytes

    utf8 = run.cached()
    assert "un café".encode() in utf8
    before = run.read
    shown = latin()
    assert run.read == before and "un café".encode("latin-1") in shown  # from the cache, as latin-1
    shutil.rmtree(env.home / "cache")
    assert latin() == shown and run.read == before + 1


def test_a_name_that_is_no_utf8_is_listed_and_nothing_kept(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    path = session(here, 1, "prompt 1")
    odd = os.fsdecode(os.fsencode(path)[: -len(".jsonl")] + b"\xff.jsonl")
    os.rename(path, odd)
    run = Listing(monkeypatch, env.home, "--json")
    time.sleep(SETTLE * 2)
    shown = run()
    assert run() == shown and run.read == 2
    assert not list((env.home / "cache" / "list").glob("out-*.bin"))


def test_each_directory_is_scanned_once_a_listing(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The output cache is checked against the scan the listing then reads from: no second stat."""
    for d in ("--a--", "--b--", "--c--"):
        session(env.sessions / d, len(d), f"prompt {d}")
    scanned: list[Path] = []
    real = snapshot._scan

    def counted(directory: Path) -> tuple:
        scanned.append(directory)
        return real(directory)

    monkeypatch.setattr(snapshot, "_scan", counted)
    run = Listing(monkeypatch, env.home, "--all")
    run()  # read, not kept yet (the files are new)
    assert sorted(scanned) == sorted((env.sessions / d) for d in ("--a--", "--b--", "--c--"))
    scanned.clear()
    run.cached()
    assert len(scanned) == 6  # read and kept, then printed from the cache: three directories each time
