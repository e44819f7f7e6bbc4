"""Every read command of issue 7 on a big session file, against same-run baselines, in one table.

    python benchmarks/bench.py                          # 1,000,000 entries (~1 GB), generated once
    python benchmarks/bench.py --file /work/bench/big.jsonl   # an existing file instead
    python benchmarks/bench.py --quick                  # 20,000 entries, a smoke run
    python benchmarks/bench.py --only validate,list --rounds 3
    python benchmarks/bench.py --listing        # only list among 10,000 and 100,000 sessions

The session file is generated (benchmarks/generate.py) under benchmarks/out/ unless it is already
there (or `--file` names one). Each command runs as a real `harnesskit` process (stdout to
/dev/null, stdin empty); its time is the wall time of the whole process, start-up included, and its
peak RSS is the largest sum of the resident sets of the process and its children (validate forks a
worker), polled every 10 ms, and never less than the process's own kernel high-water mark. The
baselines (iterate the lines, json.loads each line) run in a fresh interpreter before and after the
commands of every round; a ratio is baseline time / command time, so > 1 is faster than the
baseline. `validate, one process` runs check_file with the second process off in a fresh
interpreter (no start-up in its time). The first-row rows time `inspect` (and `--json`) until its
first entry row arrives through a pipe. The fastest run of each is reported over `--rounds` rounds.
Then `list` among many small sessions and the start-up of a few commands on a tiny file. Nothing
here is a test: it only prints.

To add a command, add a row to `commands()`: (name, argv, target, peak RSS limit in MB or None),
where a target is ("json", x) for >= x times the json.loads rate, ("continue", x) for at most x
times `continue`'s time, ("seconds", x) for at most x seconds, or None. FILE and MIDDLE in argv
stand for the big file and the id of its middle entry.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
TINY = ROOT / "fixtures" / "pi" / "v3" / "s01_new.jsonl"
HARNESSKIT = [sys.executable, "-m", "harnesskit"]

Target = tuple[str, float] | None
Command = tuple[str, list[str], Target, float | None]


def commands() -> list[Command]:
    """(name, argv, target, peak RSS limit MB): the read commands of issue 7."""
    return [
        ("continue FILE (load to context, no turn)", ["continue", "FILE", "--no-session"], None, 600),
        ("validate (two processes)", ["validate", "FILE"], ("json", 2.5), 600),
        ("inspect (table)", ["inspect", "FILE"], ("json", 1.0), 200),
        ("inspect --json", ["inspect", "FILE", "--json"], ("json", 1.5), 200),
        ("inspect --stats", ["inspect", "FILE", "--stats"], ("json", 1.5), 600),
        ("inspect --tree", ["inspect", "FILE", "--tree"], ("json", 1.5), 600),
        ("inspect --context", ["inspect", "FILE", "--context"], ("continue", 1.3), 600),
        ("fork --at MIDDLE", ["fork", "FILE", "--at", "MIDDLE", "--session-dir", "SCRATCH"], ("continue", 1.5), 600),
        # it reads the header only: about a start-up's time whatever the file's size
        ("migrate --check (a v3 file)", ["migrate", "--check", "FILE"], ("seconds", 1.0), 600),
        ("list (the big file's directory, no cache)", ["list", "--session-dir", "BIGDIR"], None, 600),
    ]


#: the first entry row of `inspect` through a pipe: (name, extra arguments, lines before the first row)
FIRST_ROWS = [("first row of inspect (through a pipe)", [], 3),  # header line, head, rule
              ("first row of inspect --json (through a pipe)", ["--json"], 1)]  # the header object


# ------------------------------------------------------------------ in a child: baselines, one-process validate


def child(name: str, path: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    if name == "validate-1":
        from harnesskit.session.check import check_file  # imported before the clock starts

        start = time.perf_counter()
        report = check_file(path, workers=1)
        seconds = time.perf_counter() - start
        if report.count("error"):
            raise SystemExit(f"{path}: {report.count('error')} errors; the benchmark file must be clean")
        return {"seconds": seconds}
    loads = {"json": json.loads, "lines": len}[name]
    start = time.perf_counter()
    with open(path, "rb") as fp:
        for line in fp:
            loads(line)
    return {"seconds": time.perf_counter() - start}


def run_child(name: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", name, str(path)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


# ------------------------------------------------------------------ a command as a process: time and peak RSS


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fp:
            return [int(p) for p in fp.read().split()]
    except OSError:
        return []


def _rss_kb(pid: int) -> int:
    """The process's own peak (VmHWM starts afresh at exec; ru_maxrss would carry this benchmark's own)."""
    try:
        with open(f"/proc/{pid}/status") as fp:
            for line in fp:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(pid: int) -> int:
    todo, total = [pid], 0
    while todo:
        p = todo.pop()
        total += _rss_kb(p)
        todo.extend(_children(p))
    return total


def run_command(argv: list[str], env: dict[str, str]) -> dict:
    """Wall time, peak RSS (the sum of each process's own peak in the tree, MB) and exit code of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    peak = 0
    while True:
        pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)  # its ru_maxrss carries this process's: unused
        if pid:
            break
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {"seconds": seconds, "rss_mb": peak / 1024, "code": proc.returncode,
            "stderr": stderr.strip().splitlines()[-1:] if stderr.strip() else []}


def middle_id(path: Path) -> str:
    """The id of the entry nearest the middle of the file."""
    with path.open("rb") as fp:
        fp.seek(path.stat().st_size // 2)
        fp.readline()
        return json.loads(fp.readline())["id"]


def first_row(argv: list[str], before: int, env: dict[str, str]) -> float:
    """Seconds from starting `argv` to reading line `before` + 1 of its stdout from a pipe."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env)
    assert proc.stdout is not None
    for _ in range(before + 1):
        proc.stdout.readline()
    seconds = time.perf_counter() - start
    proc.kill()
    proc.wait()
    return seconds


def verdict(target: Target, ratio: float, seconds: float, continue_s: float | None) -> str:
    if target is None:
        return ""
    kind, x = target
    if kind == "json":
        return f">= {x}x json.loads {'MET' if ratio >= x else 'NOT MET'}"
    if kind == "continue":
        if continue_s is None:
            return f"<= {x}x continue: not measured (add continue to --only)"
        return f"{seconds / continue_s:.2f}x continue, <= {x}x {'MET' if seconds <= x * continue_s else 'NOT MET'}"
    return f"<= {x} s {'MET' if seconds <= x else 'NOT MET'}"


# ------------------------------------------------------------------ list among many sessions


def make_listing(root: Path, directories: int, per_directory: int) -> Path:
    """HARNESSKIT_HOME with `directories` × `per_directory` small sessions (made once, kept)."""
    home = root / f"list-{directories}x{per_directory}"
    done = home / ".complete"
    if done.exists():
        return home
    t0 = 1_800_000_000_000
    for d in range(directories):
        folder = home / "sessions" / f"--bench-project-{d}--"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_directory):
            n = d * per_directory + i
            sid = f"01a23000-0000-7000-8000-{n:012d}"
            lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2027-01-01T00:00:00.000Z",
                      "cwd": f"/bench/project-{d}"}]
            for k in range(4):
                message: dict = {"role": "user" if k % 2 == 0 else "assistant",
                                 "content": [{"type": "text", "text": f"message {k} of session {n}"}],
                                 "timestamp": t0 + n * 10 + k}
                if k % 2:
                    message.update(api="bench", provider="bench", model="bench-model", usage={}, stopReason="stop")
                lines.append({"type": "message", "id": f"{k:08x}", "parentId": f"{k - 1:08x}" if k else None,
                              "timestamp": "2027-01-15T08:00:00.000Z", "message": message})
            (folder / f"2027-01-01T00-00-00-000Z_{sid}.jsonl").write_text(
                "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    done.touch()
    return home


def bench_listing(rounds: int, out: Path = OUT) -> list[list[str]]:
    """Issue 7's two list figures, each answered two ways: from list's own cache (no index), and from
    the index (built once by `harnesskit index`, then brought up to date by list itself). "Warm" is
    the fastest of the runs after the first, which built the cache (or found the index built)."""
    rows = []
    cases = [("list -n 20 among 10,000 sessions", 1, 10_000, ["list", "-n", "20"], 0.2),
             ("list --all, 100,000 sessions in 100 directories", 100, 1000, ["list", "--all"], 1.0)]
    for label, directories, per, args, target in cases:
        home = make_listing(out, directories, per)
        env = {**os.environ, "HARNESSKIT_HOME": str(home), "COLUMNS": "120"}
        env.pop("HARNESSKIT_SESSION_DIR", None)
        cwd_dir = home / "sessions" / "--bench-project-0--"
        argv = [*HARNESSKIT, *args] if "--all" in args else [*HARNESSKIT, *args, "--session-dir", str(cwd_dir)]
        index = home / "index.sqlite"
        for way in ("list cache, no index", "index"):
            shutil.rmtree(home / "cache", ignore_errors=True)
            if way == "index":
                if not index.exists():
                    subprocess.run([*HARNESSKIT, "index", "-q"], env=env, check=True)
            else:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{index}{suffix}").unlink(missing_ok=True)
            cold = run_command(argv, env)
            runs = [run_command(argv, env) for _ in range(max(rounds, 3))]
            best = min(runs, key=lambda r: r["seconds"])
            rows.append([f"{label} ({way})", f"{cold['seconds']:.2f}", f"{best['seconds']:.2f}",
                         f"{best['rss_mb']:,.0f}", f"<= {target} s warm",
                         "MET" if best["seconds"] <= target else "NOT MET"])
    return rows


# ------------------------------------------------------------------ start-up


def bench_startup(runs: int, scratch: Path) -> list[list[str]]:
    # as pip installs a package: compiled (click is; an editable checkout under PYTHONDONTWRITEBYTECODE is not)
    compileall.compile_dir(ROOT / "harnesskit", quiet=1)
    home = scratch / "startup-home"
    env = {**os.environ, "HARNESSKIT_HOME": str(home)}
    cases = {
        "python -c 'import click'": [sys.executable, "-c", "import click"],
        "validate (a tiny file)": [*HARNESSKIT, "validate", str(TINY)],
        "continue FILE, no turn": [*HARNESSKIT, "continue", str(TINY), "--no-session"],
        "chat -p (demo model)": [*HARNESSKIT, "chat", "-p", "what is 2+3", "--no-session"],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for key, argv in cases.items():
            times[key].append(run_command(argv, env)["seconds"])
    median = {k: statistics.median(v) for k, v in times.items()}
    base = median["python -c 'import click'"]
    targets = {"validate (a tiny file)": 2.0, "chat -p (demo model)": 2.5}
    rows = []
    for key, seconds in median.items():
        target = targets.get(key)
        verdict = "" if target is None else ("MET" if seconds / base <= target else "NOT MET")
        rows.append([key, f"{seconds * 1000:.0f}", f"{seconds / base:.2f}", f"<= {target}x" if target else "",
                     verdict])
    return rows


# ------------------------------------------------------------------ the run


def bench_file(entries: int, seed: int) -> Path:
    path = OUT / f"session-{entries}-s{seed}.jsonl"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        from generate import generate

        OUT.mkdir(parents=True, exist_ok=True)
        print(f"generating {path.name} ...", file=sys.stderr)
        generate(path, entries, seed)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="20,000 entries")
    parser.add_argument("--file", help="an existing session file to measure instead of a generated one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each command (the fastest is shown)")
    parser.add_argument("--startup-runs", type=int, default=7)
    parser.add_argument("--only", help="comma-separated words: run only the commands whose name has one")
    parser.add_argument("--listing", action="store_true", help="only the list figures (no big file)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the generated sessions are kept")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return 0

    if args.listing:
        _table(["list among many sessions", "cold s", "warm s", "peak RSS MB", "target", "verdict"],
               bench_listing(args.rounds, args.out))
        return 0
    if args.file:
        path = Path(args.file)
        with path.open("rb") as fp:
            entries = sum(1 for _ in fp) - 1
    else:
        entries = 20_000 if args.quick else args.entries
        path = bench_file(entries, args.seed)
    size = path.stat().st_size
    with path.open("rb") as fp:  # into the page cache before anything is timed
        while fp.read(1 << 24):
            pass
    load = os.getloadavg()[0]
    print(f"file: {path}  {entries:,} entries  {size / 1e6:,.1f} MB  python {sys.version.split()[0]}  "
          f"{os.cpu_count()} cores  load average {load:.1f}  rounds: {args.rounds}")

    scratch = Path(tempfile.mkdtemp(prefix="hk-bench-"))
    bigdir = scratch / "bigdir"
    bigdir.mkdir()
    try:
        os.link(path, bigdir / path.name)  # the same bytes, no copy
    except OSError:
        os.symlink(path.resolve(), bigdir / path.name)  # another file system, or a file we may not link
    home = scratch / "home"
    env = {**os.environ, "HARNESSKIT_HOME": str(home), "COLUMNS": "120"}
    env.pop("HARNESSKIT_SESSION_DIR", None)
    words = args.only.split(",") if args.only else None

    def wanted(name: str) -> bool:
        return words is None or any(w in name for w in words)

    chosen = [c for c in commands() if wanted(c[0])]
    firsts = [f for f in FIRST_ROWS if wanted(f[0])]
    one_process = wanted("validate, one process")
    substitute = {"FILE": str(path), "MIDDLE": middle_id(path), "SCRATCH": str(scratch / "forks"),
                  "BIGDIR": str(bigdir)}

    base: dict[str, list[float]] = {"json": [], "lines": [], "validate-1": []}
    best: dict[str, dict] = {}
    first: dict[str, float] = {}
    try:
        for _ in range(args.rounds):
            for name in ("lines", "json"):
                base[name].append(run_child(name, path)["seconds"])
            if one_process:
                base["validate-1"].append(run_child("validate-1", path)["seconds"])
            for name, argv_, _target, _limit in chosen:
                shutil.rmtree(home / "cache", ignore_errors=True)  # list: no cache
                result = run_command([*HARNESSKIT, *(substitute.get(a, a) for a in argv_)], env)
                old = best.get(name)
                if old is None or result["seconds"] < old["seconds"]:
                    result["rss_mb"] = max(result["rss_mb"], old["rss_mb"]) if old else result["rss_mb"]
                    best[name] = result
                else:
                    old["rss_mb"] = max(old["rss_mb"], result["rss_mb"])
            for name, extra, before in firsts:
                seconds = first_row([*HARNESSKIT, "inspect", str(path), *extra], before, env)
                first[name] = min(first.get(name, seconds), seconds)
            for name in ("lines", "json"):
                base[name].append(run_child(name, path)["seconds"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    json_s, lines_s = min(base["json"]), min(base["lines"])
    continue_s = next((r["seconds"] for n, r in best.items() if n.startswith("continue")), None)
    rows = [["iterate lines (baseline)", f"{lines_s:.2f}", f"{json_s / lines_s:.2f}x", "1.00x", "", ""],
            ["json.loads per line (baseline)", f"{json_s:.2f}", "1.00x", f"{lines_s / json_s:.2f}x", "", ""]]
    if one_process:
        v1 = min(base["validate-1"])
        rows.append(["validate, one process (second process off; no start-up)", f"{v1:.2f}", f"{json_s / v1:.2f}x",
                     f"{lines_s / v1:.2f}x", "", verdict(("json", 1.5), json_s / v1, v1, continue_s)])
    for name, _argv, target, limit in chosen:
        r = best[name]
        ratio = json_s / r["seconds"]
        verdicts = [verdict(target, ratio, r["seconds"], continue_s)] if target else []
        if limit is not None:
            verdicts.append(f"<= {limit:.0f} MB {'MET' if r['rss_mb'] <= limit else 'NOT MET'}")
        status = "" if r["code"] in (0, 1) else f" (exit {r['code']}: {' '.join(r['stderr'])})"
        rows.append([name + status, f"{r['seconds']:.2f}", f"{ratio:.2f}x", f"{lines_s / r['seconds']:.2f}x",
                     f"{r['rss_mb']:,.0f}", "; ".join(verdicts)])
    for name, seconds in first.items():
        rows.append([name, f"{seconds:.2f}", "", "", "", verdict(("seconds", 0.5), 0, seconds, continue_s)])
    print()
    _table(["command", "s", "× json.loads", "× lines", "peak RSS MB", "target: verdict"], rows)

    print()
    _table(["list among many sessions", "cold s", "warm s", "peak RSS MB", "target", "verdict"],
           bench_listing(args.rounds, args.out))
    print()
    scratch = Path(tempfile.mkdtemp(prefix="hk-bench-"))
    try:
        _table([f"start-up (median of {args.startup_runs})", "ms", "× import click", "target", "verdict"],
               bench_startup(args.startup_runs, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths,
                                                                                      strict=True))).rstrip())
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for row in rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())


if __name__ == "__main__":
    sys.exit(main())
