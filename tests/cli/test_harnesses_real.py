"""Every real Claude Code transcript and Codex rollout in ../shared/fixtures, through the CLI: read in
every inspect mode, validated (only the defects really in each file, named here), its context holding
each prompt and reply of the source in order, its token totals the source's own counted once per
response, and imported into a pi session that passes what pi needs.

Every expectation is computed here from the raw JSON, independently of harnesskit's readers.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared
from writeside_helpers import Env, assert_pi_shape, assert_strict_valid, invoke, isolate

CLAUDE_DIR = SHARED_FIXTURES / "claude-code"
CODEX_DIR = SHARED_FIXTURES / "codex"
CLAUDE = sorted(CLAUDE_DIR.rglob("*.jsonl")) if CLAUDE_DIR.is_dir() else [CLAUDE_DIR / "absent.jsonl"]
CODEX = sorted(CODEX_DIR.rglob("*.jsonl")) if CODEX_DIR.is_dir() else [CODEX_DIR / "absent.jsonl"]
ALL = CLAUDE + CODEX
pytestmark = requires_shared

# The defects really in each file (line, code, severity), found by reading them; every other file is clean.
_SUMMARY_LINES = [3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
DEFECTS: dict[str, set[tuple[int, str, str]]] = {
    # 16 `summary` lines titling transcripts that are not in the fixture set (their leafUuid is nowhere)
    "codemie_session-9eda1058.jsonl": {(n, "dangling-summary", "warning") for n in _SUMMARY_LINES},
    "gitai_claude-code-with-thinking_v2.0.69.jsonl": {(1, "dangling-summary", "warning")},
    # a compaction subagent's first three lines hang off lines of its parent transcript, which is absent
    "spotter_4d5611e5_agent-acompact-e1f845.jsonl": {(n, "dangling-parent", "warning") for n in (1, 2, 3)},
    # lines 748-762 cut out of a transcript: their parents (and the tool_use of line 6's result) are before 748
    "spotter_4d5611e5_lines748-762_compaction.jsonl": {
        (1, "dangling-parent", "error"), (6, "dangling-parent", "error"), (6, "orphan-tool-result", "error"),
        (7, "dangling-parent", "error"),  # the compact_boundary's logicalParentUuid
    },
    # the rollout ends while an exec_command ran: a function_call with no function_call_output
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": {
        (18, "unanswered-tool-call", "warning")},
    "localpush_rollout-2026-02-23T12-54-34_lines1782-1796_compaction.jsonl": {
        (15, "unanswered-tool-call", "warning")},
}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _id(path: Path) -> str:
    return path.name


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


# -- what the source says, computed from the raw JSON ----------------------------------------------------

_REDACTED = re.compile(r"^\[REDACTED_[A-Z_]+ (len=\d+ sha=[0-9a-f]+)\]$")


def _norm(text: str) -> str:
    """The localpush files redact text per place ("REDACTED_TEXT" / "REDACTED_MESSAGE"): same len+sha."""
    match = _REDACTED.match(text)
    return match.group(1) if match else text


def claude_chain(objects: list[dict]) -> set[str]:
    """The uuids Claude Code's resume walks: parentUuid (logicalParentUuid across a compaction) back
    from the last message line."""
    by_uuid = {o["uuid"]: o for o in objects if "uuid" in o}
    last = next(o for o in reversed(objects) if o.get("type") in ("user", "assistant"))
    chain: set[str] = set()
    node = last
    while node is not None and node["uuid"] not in chain:
        chain.add(node["uuid"])
        node = by_uuid.get(node.get("parentUuid") or node.get("logicalParentUuid") or "")
    return chain


def claude_expected(path: Path) -> list[tuple[str, str]]:
    """Each prompt and each assistant text block on the resumed chain, in file order, from the last
    compaction on."""
    out: list[tuple[str, str]] = []
    objects = _lines(path)
    chain = claude_chain(objects)
    for obj in objects:
        if obj.get("uuid") not in chain:
            continue
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            out = []
        message = obj.get("message")
        if not isinstance(message, dict) or obj.get("isCompactSummary"):
            continue
        content = message.get("content")
        if obj["type"] == "user":
            if isinstance(content, str):
                out.append(("user", content))
            elif isinstance(content, list):
                texts = [b["text"] for b in content if b.get("type") == "text"]
                if texts:
                    out.append(("user", "\n".join(texts)))
        elif obj["type"] == "assistant":
            out += [("assistant", b["text"]) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return out


def _codex_text(block: dict) -> str:
    """A block's text; an image the file does not carry (a redacted URL) reads "[image]"."""
    return block["text"] if "text" in block else "[image]"


def codex_expected(path: Path) -> list[tuple[str, str]]:
    """Each prompt the user typed (user_message events) and each assistant output_text, in file order,
    from the last compaction on (its replacement history first)."""
    out: list[tuple[str, str]] = []
    for obj in _lines(path):
        payload = obj.get("payload") or {}
        if obj["type"] == "compacted":  # what the model sees from here on: the replacement history
            out = []
            for item in payload.get("replacement_history", []):
                texts = [_codex_text(b) for b in item.get("content", []) if "text" in b or "image_url" in b]
                if item.get("role") == "user":
                    out.append(("user", "\n".join(texts)))
                elif item.get("role") == "assistant":
                    out += [("assistant", t) for t in texts]
        elif obj["type"] == "event_msg" and payload.get("type") == "user_message":
            out.append(("user", payload["message"]))
        elif obj["type"] == "response_item" and payload.get("type") == "message" and payload.get("role") == "assistant":
            out += [("assistant", b["text"]) for b in payload["content"] if b.get("type") == "output_text"]
    return out


def codex_all(path: Path) -> list[tuple[str, str]]:
    """Every user and assistant text of the rollout's response items (what its model saw)."""
    out = codex_expected(path)
    for obj in _lines(path):
        payload = obj.get("payload") or {}
        items = payload.get("replacement_history", []) if obj["type"] == "compacted" else [payload]
        for item in items:
            if item.get("type") == "message" and item.get("role") in ("user", "assistant"):
                out.append((item["role"], "\n".join(b["text"] for b in item["content"] if "text" in b)))
    return out


def context_pairs(messages: list[dict]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for m in messages:
        content = m.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if m.get("role") == "user":
            out.append(("user", content if isinstance(content, str) else
                        "\n".join(b["text"] for b in blocks if b.get("type") == "text")))
        elif m.get("role") == "assistant":
            out += [("assistant", b["text"]) for b in blocks if b.get("type") == "text"]
    return out


def is_subsequence(expected: list[tuple[str, str]], actual: list[tuple[str, str]]) -> bool:
    it = iter([(r, _norm(t)) for r, t in actual])
    return all(any(pair == got for got in it) for pair in [(r, _norm(t)) for r, t in expected])


def claude_usage(path: Path) -> dict[str, int]:
    """Each response counted once: the usage of the last line carrying its message id."""
    last: dict[str, dict] = {}
    for obj in _lines(path):
        message = obj.get("message")
        if obj.get("type") == "assistant" and isinstance(message, dict) and message.get("id"):
            last[message["id"]] = message.get("usage") or {}
    total = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    for usage in last.values():
        total["input"] += usage.get("input_tokens", 0)
        total["output"] += usage.get("output_tokens", 0)
        total["cacheRead"] += usage.get("cache_read_input_tokens", 0)
        total["cacheWrite"] += usage.get("cache_creation_input_tokens", 0)
    total["totalTokens"] = sum(total.values())
    return total


def codex_usage(path: Path) -> dict[str, int]:
    """The sum of last_token_usage over token_count events whose cumulative total moved (a repeat of
    the same total is the same response reported again). Cached tokens are inside input."""
    total = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    previous = None
    for obj in _lines(path):
        payload = obj.get("payload") or {}
        if obj["type"] != "event_msg" or payload.get("type") != "token_count" or not payload.get("info"):
            continue
        info = payload["info"]
        if info["total_token_usage"] == previous:
            continue
        previous = info["total_token_usage"]
        last = info["last_token_usage"]
        total["input"] += last["input_tokens"] - last["cached_input_tokens"]
        total["cacheRead"] += last["cached_input_tokens"]
        total["output"] += last["output_tokens"]
        total["totalTokens"] += last["total_tokens"]
    return total


# -- the tests ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL, ids=_id)
@pytest.mark.parametrize("mode", [[], ["--tree"], ["--context"], ["--stats"], ["--json"], ["--tree", "--json"],
                                  ["--context", "--json"], ["--stats", "--json"]])
def test_every_inspect_mode_reads_it(path: Path, mode: list[str]) -> None:
    result = invoke("inspect", path, *mode, "--width", "120")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert "Traceback" not in result.output
    if "--json" in mode:
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert rows
    else:
        dialect = "claude-code" if path in CLAUDE else "codex"
        assert result.stdout.startswith(f"session {dialect}"), result.stdout[:200]


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_validate_reports_only_the_defects_really_in_it(path: Path) -> None:
    result = invoke("validate", path, "--format", "json")
    report = json.loads(result.stdout)
    found = {(p["line"], p["code"], p["severity"]) for p in report["errors"] + report["warnings"]}
    expected = DEFECTS.get(path.name, set())
    assert found == expected, [p["message"] for p in report["errors"] + report["warnings"]]
    assert result.exit_code == (1 if any(s == "error" for _, _, s in expected) else 0)
    assert report["files"][0]["dialect"] == ("claude-code" if path in CLAUDE else "codex")


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_context_holds_each_prompt_and_reply_in_order(path: Path) -> None:
    result = invoke("inspect", path, "--context", "--json")
    assert result.exit_code == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    expected = claude_expected(path) if path in CLAUDE else codex_expected(path)
    assert expected, "the source has a conversation"
    assert is_subsequence(expected, context_pairs(messages)), (expected, context_pairs(messages))
    # and nothing the source did not say: every user/assistant text comes from it
    sources = {(r, _norm(t)) for r, t in (claude_expected(path) if path in CLAUDE else codex_all(path))}
    extra = [(r, t) for r, t in context_pairs(messages) if (r, _norm(t)) not in sources]
    assert extra == [], extra


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_stats_totals_are_the_sources_own_usage_counted_once(path: Path) -> None:
    result = invoke("inspect", path, "--stats", "--json")
    assert result.exit_code == 0, result.stderr
    tokens = json.loads(result.stdout)["tokens"]
    expected = claude_usage(path) if path in CLAUDE else codex_usage(path)
    assert tokens == expected
    if path in CODEX and "excerpts" not in path.parts:  # a whole rollout: its final cumulative total
        finals = [o["payload"]["info"]["total_token_usage"] for o in _lines(path)
                  if o["type"] == "event_msg" and o["payload"].get("type") == "token_count" and o["payload"]["info"]]
        if finals:
            assert tokens["totalTokens"] == finals[-1]["total_tokens"]
            assert tokens["input"] + tokens["cacheRead"] == finals[-1]["input_tokens"]


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_import_writes_a_session_pi_opens_with_the_same_messages(path: Path, env: Env) -> None:
    out = env.cwd / "imported.jsonl"
    result = invoke("import", path, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(out)
    raw = out.read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.splitlines()]
    assert_pi_shape(lines)  # contract §4: header, entry base keys, assistant api/provider/model/usage/...
    assert_strict_valid(out)  # every parent resolves, tool results pair, schemas hold
    header, entries = lines[0], lines[1:]
    assert os.path.isdir(header["cwd"])  # pi-reference §9: a cwd that is present must exist
    assert all(re.fullmatch(r"[0-9a-f]{8}", e["id"]) for e in entries)
    assert entries[0]["customType"] == "harnesskit/import" and entries[0]["parentId"] is None
    assert entries[0]["data"]["source"] == str(path.resolve())
    assert all(e["parentId"] is not None for e in entries[1:])  # one root: the entry naming the source
    assert any(e["type"] == "message" and e["message"]["role"] == "assistant" for e in entries)  # §4
    for entry in entries:
        message = entry.get("message") or {}
        if message.get("role") == "assistant":
            assert isinstance(message["usage"], dict) and isinstance(message["usage"]["totalTokens"], int)
    # the same messages as the source's context (plus an error result for a call it left open at its end)
    source = [json.loads(x) for x in invoke("inspect", path, "--context", "--json").stdout.splitlines()]
    imported = [json.loads(x) for x in invoke("inspect", out, "--context", "--json").stdout.splitlines()]
    added = imported[len(source):]
    assert [_strip(m) for m in imported[:len(source)]] == [_strip(m) for m in source]
    assert all(m["role"] == "toolResult" and m["isError"] for m in added)
    # importing again gives the same file (deterministic ids), and never overwrites
    again = env.cwd / "again.jsonl"
    assert invoke("import", path, "-o", again).exit_code == 0
    assert again.read_bytes() == raw
    assert invoke("import", path, "-o", out).exit_code == 2


def _strip(message: dict) -> dict:
    return {k: v for k, v in message.items() if k != "timestamp"}


def test_import_then_continue_goes_on_with_another_model(env: Env) -> None:
    """`harnesskit continue` picks the imported session (the newest of this directory) and appends."""
    for source in (CLAUDE_DIR / "spotter_tool_heavy.jsonl", CODEX_DIR / "rollout-2026-05-11T13-28-45-"
                   "019e1695-0522-7c83-8b39-0dd379793f80.jsonl"):
        result = invoke("import", source)
        assert result.exit_code == 0, result.stderr
        path = Path(result.stdout.splitlines()[0])
        assert path.parent == env.sessions / ("--" + str(env.cwd).lstrip("/").replace("/", "-") + "--")
        before = path.read_bytes()
        result = invoke("continue", "-p", "what is 2*21", "--model", "demo")
        assert result.exit_code == 0, result.stderr
        assert path.read_bytes().startswith(before)
        new = [json.loads(x) for x in path.read_bytes()[len(before):].splitlines()]
        roles = [e["message"]["role"] for e in new if e["type"] == "message"]
        assert roles[0] == "user" and roles[-1] == "assistant", roles  # the demo model may use its calc tool
        assert "42" in json.dumps(new[-1])
        assert_strict_valid(path)
