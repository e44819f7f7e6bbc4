"""Generated corpora of small pi v3 sessions for the cross-session tests (index, search, usage),
with what each holds computed here, independently of harnesskit's reader."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]
MODELS = [("anthropic", "claude-sonnet-4-5-20250929"), ("openai", "gpt-4o"), ("local", "llama-unpriced")]
DAY_MS = 86_400_000
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass
class Made:
    """One generated session: its file, and what a correct index must say of it."""

    path: Path
    session_id: str
    cwd: str
    lines: list[dict] = field(default_factory=list)

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in self.lines), encoding="utf-8")

    def append(self, objects: list[dict]) -> None:
        with self.path.open("a", encoding="utf-8") as fp:
            fp.write("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))
        self.lines += objects


def turn(rng: random.Random, n: int, parent: str | None, ms: int, marker: str | None = None,
         cost: bool = False) -> list[dict]:
    """user -> assistant(toolCall) -> toolResult -> assistant: four entries, ids from n."""
    provider, model = rng.choice(MODELS)
    words = " ".join(rng.sample(WORDS, 3)) + (f" {marker}" if marker else "")
    ids = [f"{n:08x}", f"{n + 1:08x}", f"{n + 2:08x}", f"{n + 3:08x}"]

    def usage() -> dict:
        counts = {"input": rng.randint(10, 5000), "output": rng.randint(1, 900), "cacheRead": rng.randint(0, 3000),
                  "cacheWrite": rng.randint(0, 200)}
        total = sum(counts.values())
        price = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        if cost:
            price = {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}
        return {**counts, "totalTokens": total, "cost": price}

    def assistant(content: list, stop: str, t: int) -> dict:
        return {"role": "assistant", "content": content, "api": "openai-completions", "provider": provider,
                "model": model, "usage": usage(), "stopReason": stop, "timestamp": t}

    return [
        {"type": "message", "id": ids[0], "parentId": parent, "timestamp": iso(ms),
         "message": {"role": "user", "content": [{"type": "text", "text": f"please {words}"}], "timestamp": ms}},
        {"type": "message", "id": ids[1], "parentId": ids[0], "timestamp": iso(ms + 1),
         "message": assistant([{"type": "toolCall", "id": f"call{n}", "name": "calc",
                                "arguments": {"expression": "6*7"}}], "toolUse", ms + 1)},
        {"type": "message", "id": ids[2], "parentId": ids[1], "timestamp": iso(ms + 2),
         "message": {"role": "toolResult", "toolCallId": f"call{n}", "toolName": "calc",
                     "content": [{"type": "text", "text": "42"}], "isError": False, "timestamp": ms + 2}},
        {"type": "message", "id": ids[3], "parentId": ids[2], "timestamp": iso(ms + 3),
         "message": assistant([{"type": "text", "text": f"done with {words}"}], "stop", ms + 3)},
    ]


def make_session(root: Path, rng: random.Random, index: int, cwd: str, turns: int = 2,
                 marker: str | None = None) -> Made:
    session_id = f"00000000-0000-7000-8000-{index:012x}"
    start = START_MS + rng.randint(0, 60) * DAY_MS + index
    directory = root / ("--" + cwd.strip("/").replace("/", "-") + "--")
    made = Made(directory / f"{iso(start).replace(':', '-').replace('.', '-')}_{session_id}.jsonl", session_id, cwd)
    made.lines.append({"type": "session", "version": 3, "id": session_id, "timestamp": iso(start), "cwd": cwd})
    parent = None
    for t in range(turns):
        entries = turn(rng, 16 * t + 1, parent, start + t * 1000, marker if t == 0 else None, cost=index % 5 == 0)
        made.lines += entries
        parent = entries[-1]["id"]
    made.write()
    return made


def corpus(root: Path, count: int, seed: int = 7, cwds: tuple[str, ...] = ("/work/a", "/work/b")) -> list[Made]:
    rng = random.Random(seed)
    return [make_session(root, rng, i, cwds[i % len(cwds)], marker=f"zz{i:05d}marker") for i in range(count)]


def assistant_usages(made: list[Made]) -> list[dict]:
    """Every assistant message's usage and model, straight from the files' JSON."""
    out = []
    for m in made:
        for line in m.lines:
            message = line.get("message") if line.get("type") == "message" else None
            if message and message.get("role") == "assistant":
                out.append({"model": message["model"], "provider": message["provider"], **message["usage"],
                            "time": message["timestamp"], "cwd": m.cwd, "path": str(m.path)})
    return out
