"""The inspect, fork --at and migrate --check figures of issue 7, with the time to the first row:
each command run as a real process in a fresh helper (its peak RSS is the process tree's), against
`json.loads` per line and `continue`'s load to context measured in the same run. bench.py measures
the same commands in its overall table; this adds the first row through a pipe and the ratios to
continue.

    python benchmarks/bench_inspect.py FILE    # ROUNDS=3 for the fastest of three
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# runs argv, prints its wall time and the peak RSS of its process tree (the helper's only children)
PROBE = ("import json, resource, subprocess, sys, time\n"
         "start = time.perf_counter()\n"
         "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
         "seconds = time.perf_counter() - start\n"
         "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
         "print(json.dumps({'seconds': seconds, 'rss_mb': peak}))")
BASELINES = {
    "json": "import json, sys\nfor line in open(sys.argv[1], 'rb'): json.loads(line)",
    "continue": ("import sys\nfrom harnesskit.session.index import load_for_continue\n"
                 "from harnesskit.session.tree import build_context\n"
                 "s = load_for_continue(sys.argv[1]); build_context(s.tree); s.tree.labels()"),
}


def run(argv: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv}: failed\n{done.stderr}")
    return json.loads(done.stdout)


def run_child(name: str, path: Path) -> dict:
    """One measurement: a baseline (json, continue) or `cli:NAME` of COMMANDS."""
    if name in BASELINES:
        return run([sys.executable, "-c", BASELINES[name], str(path)])
    with tempfile.TemporaryDirectory() as out:
        return run([sys.executable, "-m", "harnesskit", *argv_for(name[4:], path, Path(out))])


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
    target = Path(sys.argv[1])
    rounds = int(os.environ.get("ROUNDS", "1"))
    base = min(run_child("json", target)["seconds"] for _ in range(rounds))
    cont = min(run_child("continue", target)["seconds"] for _ in range(rounds))
    for verdict in section(target, base, cont, rounds, run_child):
        print(verdict)
