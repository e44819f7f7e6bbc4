"""`list --harness claude|codex` with and without the index (issue 11), on generated stores: this
directory's Claude Code transcripts and Codex rollouts (half of them of another directory), made
from the repository's own fixtures. Each command is a real process; fastest of `--runs`, the two
ways back to back in one run.

    python benchmarks/bench_list_harness.py [--sessions 3000] [--pad KB] [--out benchmarks/out/list_harness]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / "fixtures" / "claude-code" / "streamed-tools-compaction.jsonl"
CODEX = ROOT / "fixtures" / "codex" / "rollout-2026-03-02T09-00-00-019d0000-1111-7222-8333-444455556666.jsonl"


def generate(out: Path, sessions: int, cwd: str, pad: int) -> None:
    """`pad` KB of bookkeeping lines at the end of each file (real transcripts run to megabytes)."""
    filler = "x" * 900
    claude = CLAUDE.read_text(encoding="utf-8").replace("/home/dev/proj", cwd) + "".join(
        json.dumps({"type": "progress", "data": {"note": filler}}) + "\n" for _ in range(pad))
    codex = CODEX.read_text(encoding="utf-8") + "".join(
        json.dumps({"timestamp": "2026-03-02T09:00:09.000Z", "type": "event_msg",
                    "payload": {"type": "token_count", "note": filler}}) + "\n" for _ in range(pad))
    project = out / "claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)
    project.mkdir(parents=True)
    for i in range(sessions):
        sid = f"{i:08x}-2222-4333-8444-555555555555"
        text = claude.replace("11111111-2222-4333-8444-555555555555", sid)
        text = text.replace("Add a greeting", f"Add greeting {i}")
        (project / f"{sid}.jsonl").write_text(text, encoding="utf-8")
        day = out / "codex" / "sessions" / "2026" / "03" / f"{1 + i % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        rid = f"019d0000-1111-7222-8333-{i:012x}"
        text = codex.replace("019d0000-1111-7222-8333-444455556666", rid)
        text = text.replace("/home/dev/proj", cwd if i % 2 else "/elsewhere")
        (day / f"rollout-2026-03-02T09-00-00-{rid}.jsonl").write_text(text, encoding="utf-8")


def timed(args: list[str], env: dict[str, str], cwd: str, runs: int) -> tuple[float, bytes]:
    best, output = float("inf"), b""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "harnesskit", *args], env=env, cwd=cwd, capture_output=True,
                              check=True)
        best = min(best, time.perf_counter() - start)
        output = done.stdout
    return best, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3000, help="transcripts of each harness")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pad", type=int, default=0, metavar="KB", help="bookkeeping lines added to each file")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "list_harness")
    options = parser.parse_args()
    shutil.rmtree(options.out, ignore_errors=True)
    cwd = str((options.out / "work").resolve())
    os.makedirs(cwd)
    generate(options.out, options.sessions, cwd, options.pad)
    home = options.out / "hkhome"
    env = {**os.environ, "HARNESSKIT_HOME": str(home), "CLAUDE_CONFIG_DIR": str(options.out / "claude"),
           "CODEX_HOME": str(options.out / "codex"), "PYTHONPATH": str(ROOT)}
    size = sum(p.stat().st_size for p in options.out.rglob("*.jsonl")) / 1e6
    print(f"{options.sessions} Claude Code transcripts and {options.sessions} Codex rollouts, {size:.0f} MB")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harnesskit", "index", "-q"], env=env, cwd=cwd, check=True)
    print(f"harnesskit index (from scratch): {time.perf_counter() - start:.2f} s")
    index = home / "index.sqlite"
    print("| command | without the index | from the index | ratio |\n|---|---|---|---|")
    for harness in ("claude", "codex"):
        args = ["list", "--harness", harness, "-n", "20"]
        indexed, shown = timed(args, env, cwd, options.runs)
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{index}{suffix}").exists():
                os.rename(f"{index}{suffix}", f"{index}{suffix}.aside")
        plain, expected = timed(args, env, cwd, options.runs)
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{index}{suffix}.aside").exists():
                os.rename(f"{index}{suffix}.aside", f"{index}{suffix}")
        assert shown == expected, f"{harness}: the two ways differ"
        print(f"| `list --harness {harness} -n 20` | {plain:.2f} s | {indexed:.2f} s | {plain / indexed:.1f}x |")
        inside = [sys.executable, "-c", IN_PROCESS, harness, str(options.runs)]
        plain, indexed = map(float, subprocess.run(inside, env=env, cwd=cwd, capture_output=True, text=True,
                                                   check=True).stdout.split())
        print(f"| its listing alone, in one process | {plain:.3f} s | {indexed:.3f} s | {plain / indexed:.1f}x |")


IN_PROCESS = """
import os, sys, time
from harnesskit.session.formats import stores
from harnesskit.session.store import home_dir
listing, runs = getattr(stores, sys.argv[1] + "_sessions"), int(sys.argv[2])
def best():
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        listing(os.getcwd())
        times.append(time.perf_counter() - start)
    return min(times)
indexed = best()
index = home_dir() / "index.sqlite"
index.rename(index.with_name("aside"))
try:
    print(best(), indexed)
finally:
    index.with_name("aside").rename(index)
"""


if __name__ == "__main__":
    main()
