"""bench.py's section for inspect, fork --at and migrate --check (issue 7): each command run as the
CLI in a fresh process (stdout to /dev/null), timed, its peak RSS taken (parent + forked workers),
and compared with json.loads and with `continue` (load to context) measured in the same run; and the
time to the first row of the table and of --json, read through a pipe.

    python benchmarks/bench.py                 # the whole run, this section last
    python benchmarks/bench_inspect.py FILE    # this section alone, on FILE
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> (label, arguments after the file ({mid}: an entry in the middle), target, compared with, RSS limit MB)
COMMANDS: dict[str, tuple[str, list[str], float | None, str, int]] = {
    "inspect": ("inspect (the table)", [], 1.0, "json", 200),
    "inspect-json": ("inspect --json", ["--json"], 1.5, "json", 200),
    "inspect-stats": ("inspect --stats", ["--stats"], 1.5, "json", 600),
    "inspect-tree": ("inspect --tree", ["--tree"], 1.5, "json", 600),
    "inspect-context": ("inspect --context", ["--context"], 1 / 1.3, "continue", 600),
    "fork-at": ("fork --at (an entry in the middle)", ["--at", "{mid}"], 1 / 1.5, "continue", 600),
    "migrate-check": ("migrate --check (a v3 file)", [], None, "json", 600),
}


def middle_id(path: Path) -> str:
    """The id of the entry on the middle line (the generator's entries all have one)."""
    size = path.stat().st_size
    with path.open("rb") as fp:
        fp.seek(size // 2)
        fp.readline()
        return json.loads(fp.readline())["id"]


def argv_for(name: str, path: Path, out: Path) -> list[str]:
    extra = [a.replace("{mid}", middle_id(path)) for a in COMMANDS[name][1]]
    if name == "fork-at":
        return ["fork", str(path), *extra, "--session-dir", str(out)]
    if name == "migrate-check":
        return ["migrate", "--check", str(path)]
    return ["inspect", str(path), *extra, "--width", "120"]


def measure_cli(name: str, path: Path) -> dict:
    """In the child process: run one command as the CLI would, stdout to /dev/null."""
    import tempfile

    sys.path.insert(0, str(ROOT))
    from harnesskit.cli import main

    with tempfile.TemporaryDirectory() as out:
        argv = argv_for(name, path, Path(out))
        null = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1)
        os.dup2(null, 1)
        sys.argv = ["harnesskit", *argv]
        start = time.perf_counter()
        try:
            main()
        except SystemExit as done:
            if done.code not in (0, None):
                raise
        finally:
            sys.stdout.flush()
            seconds = time.perf_counter() - start
            os.dup2(saved, 1)
    return {"seconds": seconds}


def first_row(path: Path, mode: list[str]) -> float:
    """Seconds from starting `harnesskit inspect FILE` to reading its first entry row from a pipe."""
    rows_before = 1 if mode else 3  # --json: the header object; the table: header line, head, rule
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "inspect", str(path), *mode], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    for _ in range(rows_before + 1):
        proc.stdout.readline()
    seconds = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return seconds


def section(path: Path, base: float, cont: float | None, rounds: int, run_child) -> list[str]:  # noqa: ANN001
    """Measure every command (fastest of `rounds`, largest RSS) and print the table; returns verdicts."""
    size = path.stat().st_size
    best: dict[str, dict] = {}
    for _ in range(rounds):
        for name in COMMANDS:
            result = run_child(f"cli:{name}", path)
            old = best.get(name)
            if old is None or result["seconds"] < old["seconds"]:
                result["rss_mb"] = max(result["rss_mb"], old["rss_mb"]) if old else result["rss_mb"]
                best[name] = result
            else:
                old["rss_mb"] = max(old["rss_mb"], result["rss_mb"])
    print()
    print(f"inspect, fork --at, migrate --check ({size / 1e6:,.0f} MB; json.loads {base:.2f} s"
          + (f", continue {cont:.2f} s)" if cont else ")"))
    verdicts = []
    for name, (label, _, target, against, limit) in COMMANDS.items():
        r = best[name]
        reference = cont if against == "continue" else base
        ratio = (reference / r["seconds"]) if reference else float("nan")
        shown = f"{ratio:.2f}x {'continue' if against == 'continue' else 'json.loads'}"
        print(f"  {label:36s} {r['seconds']:7.2f} s  {shown:>20s}  peak RSS {r['rss_mb']:6,.0f} MB")
        if target is not None and reference:
            ok = ratio >= target
            goal = f">= {target:.2f}x" if against == "json" else f"<= {1 / target:.1f}x its time"
            verdicts.append(f"{label}: {shown} (target {goal}) {'MET' if ok else 'NOT MET'}; "
                            f"peak RSS {r['rss_mb']:.0f} MB (target <= {limit} MB) "
                            f"{'MET' if r['rss_mb'] <= limit else 'NOT MET'}")
    for mode in ([], ["--json"]):
        seconds = min(first_row(path, mode) for _ in range(rounds))
        label = "inspect " + " ".join(mode) if mode else "inspect"
        print(f"  first row of {label:23s} {seconds:7.2f} s")
        met = "MET" if seconds <= 0.5 else "NOT MET"
        verdicts.append(f"first row of {label}: {seconds:.2f} s (target <= 0.5 s) {met}")
    return verdicts


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench

    target = Path(sys.argv[1])
    base = bench.run_child("json", target)["seconds"]
    cont = bench.run_child("continue", target)["seconds"]
    for verdict in section(target, base, cont, int(os.environ.get("ROUNDS", "1")), bench.run_child):
        print(verdict)
