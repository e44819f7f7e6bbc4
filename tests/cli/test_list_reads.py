"""`list` reads only what it shows, its cache never shows a stale answer, counts are right whatever
the JSON spacing, and the table fits 80 columns (issues 6, 7, 8)."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import Env, invoke, isolate

from harnesskit.session import listing, store
from harnesskit.session.store import encode_cwd

T0 = 1_800_000_000_000  # ms


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def entry(kind: str, n: int, **fields: object) -> dict:
    return {"type": kind, "id": f"{n:08x}", "parentId": f"{n - 1:08x}" if n else None,
            "timestamp": "2027-01-15T08:00:00.000Z", **fields}


def user(n: int, text: str, ms: int) -> dict:
    return entry("message", n, message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms})


def assistant(n: int, text: str, ms: int, model: str = "m1") -> dict:
    return entry("message", n, message={
        "role": "assistant", "content": [{"type": "text", "text": text}], "api": "x", "provider": "p",
        "model": model, "usage": {}, "stopReason": "stop", "timestamp": ms})


def write_session(directory: Path, index: int, entries: list[dict], separators: tuple[str, str] = (",", ":"),
                  cwd: str = "/w") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    sid = f"01a23000-0000-7000-8000-{index:012d}"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2027-01-01T00:00:00.000Z", "cwd": cwd}
    path = directory / f"2027-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_text("".join(json.dumps(o, separators=separators, ensure_ascii=False) + "\n"
                            for o in [header, *entries]), encoding="utf-8")
    return path


def here(env: Env) -> Path:
    return env.sessions / encode_cwd(os.getcwd())


def rows(*args: object) -> list[dict]:
    result = invoke("list", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def read_bytes() -> int:
    """Bytes this process has read through read(2) so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_spaces_in_the_json_count_the_same(env: Env) -> None:
    entries = [user(0, "first question", T0), assistant(1, "an answer", T0 + 1),
               entry("session_info", 2, name="spaced out"), user(3, "again", T0 + 2)]
    spaced = write_session(here(env), 1, entries, separators=(", ", ": "))
    tight = write_session(here(env), 2, entries)
    assert b'"type": "message"' in spaced.read_bytes()
    by_path = {r["path"]: r for r in rows()}
    for path in (spaced, tight):
        r = by_path[str(path)]
        assert (r["messages"], r["name"], r["firstMessage"], r["model"]) == (3, "spaced out", "first question", "m1")
        assert r["modified"] == (T0 + 2) / 1000


def test_escaped_type_still_counts(env: Env) -> None:
    path = write_session(here(env), 1, [user(0, "q", T0)])
    with path.open("a") as fp:  # "\u006dessage" is "message" in JSON: pi counts it, so must we
        fp.write('{"type":"\\u006dessage","id":"00000009","parentId":null,"timestamp":"2027-01-15T08:00:00.000Z",'
                 f'"\\u006dessage":{{"role":"user","content":"escaped","timestamp":{T0 + 5}}}}}\n')
    assert b"message" not in path.read_bytes().splitlines()[-1]
    (r,) = rows()
    assert r["messages"] == 2 and r["modified"] == (T0 + 5) / 1000


def test_order_is_the_last_message_time_then_header_then_mtime(env: Env) -> None:
    d = here(env)
    old = write_session(d, 1, [user(0, "old", T0)])
    new = write_session(d, 2, [user(0, "new", T0 + 10_000), entry("label", 1, targetId="00000000", label="x")])
    none = write_session(d, 3, [entry("custom", 0, customType="c")])  # no message: the header's time
    tool_only = write_session(d, 4, [user(0, "mid", T0 + 5_000), entry("message", 1, message={
        "role": "toolResult", "toolCallId": "c", "toolName": "t", "content": [], "timestamp": T0 + 99_000})])
    for i, path in enumerate((none, old, tool_only, new)):  # mtimes the other way round
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    # a tool result's time does not count; the header's time (2027-01-01) is before T0 (2027-01-15)
    got = [(r["path"], r["modified"]) for r in rows()]
    assert got == [(str(new), (T0 + 10_000) / 1000), (str(tool_only), (T0 + 5_000) / 1000), (str(old), T0 / 1000),
                   (str(none), 1798761600.0)]


def test_list_n_reads_only_the_files_it_shows(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    d = here(env)
    big = "x" * 200_000
    paths = []
    for i in range(30):
        entries = [user(0, f"prompt {i}", T0 + i)]
        entries += [assistant(n, big, T0 + i) for n in range(1, 6)]  # ~1 MB each
        entries.append(assistant(6, "done", T0 + i))  # a short last line, as a turn ends
        paths.append(write_session(d, i, entries))
    whole: list[Path] = []
    real = listing._summary

    def counting(path: Path, mtime: float, report: object = None) -> list | None:
        whole.append(path)
        return real(path, mtime, report)

    monkeypatch.setattr(listing, "_summary", counting)
    warm_up = env.tmp / "elsewhere"  # list's modules imported first: rchar counts the .pyc files read too
    write_session(env.sessions / encode_cwd(str(warm_up)), 99, [user(0, "warm", T0)])
    monkeypatch.chdir(warm_up if warm_up.mkdir() is None else warm_up)
    rows("-n", "3")
    monkeypatch.chdir(env.cwd)
    whole.clear()
    before = read_bytes()
    shown = rows("-n", "3")
    cold = read_bytes() - before
    assert [r["firstMessage"] for r in shown] == ["prompt 29", "prompt 28", "prompt 27"]
    assert sorted(whole) == sorted(paths[27:])  # read whole: only the three shown
    size = paths[0].stat().st_size
    # the three shown, plus the header and the last 64 KiB block of each of the others
    assert cold < 3 * size + 30 * (70_000 + 300), cold
    assert cold < 0.3 * 30 * size

    whole.clear()
    before = read_bytes()
    assert rows("-n", "3") == shown  # the cache answers: no session file is read at all
    assert whole == []
    assert read_bytes() - before < 50_000


def test_the_cache_is_never_stale(env: Env) -> None:
    d = here(env)
    path = write_session(d, 1, [user(0, "hello", T0)])
    assert rows()[0]["messages"] == 1
    cache = listing.cache_path(d)
    assert cache.is_file() and cache.is_relative_to(env.home)  # ours, under HARNESSKIT_HOME
    assert not any(p.suffix == ".json" for p in d.iterdir())  # never inside the session directory

    with path.open("a") as fp:  # appended between two lists: a new count
        fp.write(json.dumps(assistant(1, "hi", T0 + 1)) + "\n")
    assert rows()[0]["messages"] == 2

    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"hello", b"HELLO"))  # same size, other content
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == st.st_size
    assert rows()[0]["firstMessage"] == "HELLO"

    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"HELLO", b"howdy"))  # same size, mtime put back
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size
    assert rows()[0]["firstMessage"] == "howdy"  # the ctime moved: no cached answer for it

    good = json.loads(cache.read_bytes())
    key = good["keys"][good["names"].index(path.name)]
    for junk in (b"not json", b'{"version": 1, "dir": "elsewhere", "files": {}}', b"",
                 json.dumps({"version": 1, "dir": os.path.abspath(d), "files": {path.name: [[1], "x", 3]}}).encode(),
                 json.dumps({**good, "dir": "elsewhere"}).encode(),  # another directory's
                 json.dumps({**good, "summaries": [["a name", "cached", "3", None]]}).encode(),  # a wrong type
                 json.dumps({**good, "summaries": []}).encode(),  # lists that do not line up
                 json.dumps({**good, "choices": [[1.0, "x", None], None]}).encode(),
                 json.dumps({**good, "keys": [key[:4]]}).encode(),
                 json.dumps({**good, "version": 1}).encode(),
                 json.dumps({**good, "source": "index 1 2"}).encode()):  # the index's, and there is none
        cache.write_bytes(junk)  # damaged, foreign or truncated: rebuilt
        assert rows()[0]["firstMessage"] == "howdy"
        rebuilt = json.loads(cache.read_bytes())
        assert rebuilt["names"] == [path.name] and rebuilt["source"] == "files"
        assert rebuilt["summaries"][0][0] is None  # no name: a fresh summary

    path.unlink()
    assert rows() == []
    assert json.loads(cache.read_bytes())["names"] == []


def test_an_unwritable_cache_is_skipped(env: Env) -> None:
    write_session(here(env), 1, [user(0, "hello", T0)])
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "cache").write_text("a file where the cache directory would be")
    assert rows()[0]["firstMessage"] == "hello"
    assert rows()[0]["firstMessage"] == "hello"


def display_width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_rows_fit_80_columns(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    d = here(env)
    write_session(d, 1, [user(0, "你好" * 60, T0), entry("session_info", 1, name="名前がとても長いセッション" * 3),
                         assistant(2, "ok", T0 + 1, model="a-very-long-model-name-from-some-provider-v2")])
    write_session(d, 2, [user(0, "plain words " * 30 + "\x1b]0;owned\x07", T0 + 2),
                         entry("session_info", 1, name="evil\x1b[2J name")])
    write_session(d, 3, [user(0, "short", T0 + 3)])
    result = invoke("list")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    assert all(display_width(line) <= 80 for line in lines), [display_width(x) for x in lines]
    assert "\x1b" not in result.stdout and "evil\\x1" in result.stdout  # shown, never sent
    assert "…" in result.stdout
    assert [line.split()[-1][-10:] for line in lines[1:]] == ["0003.jsonl", "0002.jsonl", "0001.jsonl"]

    whole = invoke("list", "--full-path")
    assert str(d / "2027-01-01T00-00-00-000Z_01a23000-0000-7000-8000-000000000001.jsonl") in whole.stdout


line_kinds = st.sampled_from(["user", "assistant", "tool", "garbage", "blank", "label", "huge", "no-time", "escaped"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(line_kinds, max_size=12), stamps=st.lists(st.integers(-5, 10**13), min_size=12, max_size=12),
       newline=st.booleans())
def test_the_tail_read_chooses_what_the_whole_read_finds(tmp_path: Path, kinds: list[str], stamps: list[int],
                                                          newline: bool) -> None:
    """The time `list` sorts by, read backwards from the end, is the one a read of the whole file gives."""
    lines = []
    for i, (kind, ms) in enumerate(zip(kinds, stamps, strict=False)):
        if kind == "user":
            lines.append(json.dumps(user(i, "q", ms)))
        elif kind == "assistant":
            lines.append(json.dumps(assistant(i, "a", ms)))
        elif kind == "tool":
            lines.append(json.dumps(entry("message", i, message={"role": "toolResult", "content": [],
                                                                  "timestamp": ms})))
        elif kind == "garbage":
            lines.append('{"type":"message","message":{"role":"user","content":"x","timestamp":5')
        elif kind == "blank":
            lines.append("")
        elif kind == "label":
            lines.append(json.dumps(entry("label", i, targetId="x")))
        elif kind == "huge":  # longer than the 64 KiB blocks read backwards
            lines.append(json.dumps(user(i, "h" * 150_000, ms)))
        elif kind == "no-time":
            lines.append(json.dumps(entry("message", i, timestamp="not a time",
                                          message={"role": "user", "content": "x"})))
        else:
            lines.append('{"type":"\\u006dessage","timestamp":"2027-01-15T08:00:00.000Z",'
                         f'"\\u006dessage":{{"role":"user","content":"e","timestamp":{ms}}}}}')
    header = json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2027-01-01T00:00:00.000Z",
                         "cwd": "/w"})
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([header, *lines]) + ("\n" if newline else ""))
    mtime = path.stat().st_mtime
    chosen = listing._choose(path, mtime)
    whole = store.summarize(path)
    assert chosen is not None and whole is not None
    assert chosen[0] == whole.modified
