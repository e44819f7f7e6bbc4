"""shapes.proven_valid: the hot path's cheap proof never says valid where the schema says invalid.

A differential test against jsonschema_rs (through entry.json's own dispatch) and python jsonschema:
on every fixture and generated entry, on every systematic mutation of one entry per shape, and on
random replacements. It also checks the proof covers the shapes pi writes, or it would save nothing.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schemas import ENTRIES, HEADERS, WRONG_VALUES, _mutations, _one_per_shape, _paths, json_values

from harnesskit.session import schemas as S
from harnesskit.session.shapes import proven_header, proven_message, proven_valid

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_shapes", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def _schema_valid(obj: Any) -> bool:
    rs = S._rs_validator("entry")
    try:
        verdict = rs.is_valid(obj)
    except Exception:  # noqa: BLE001 - a value jsonschema_rs cannot convert: python jsonschema decides
        verdict = None
    py = not any(S._py_validator("entry").iter_errors(obj))
    assert verdict in (None, py), obj
    return py


def _agree(obj: Any, what: str) -> bool:
    proven = proven_valid(obj)
    if proven:
        assert _schema_valid(obj), f"proven valid but the schema rejects it: {what}"
    return proven


def _generated(tmp_path: Path) -> list[dict]:
    path = generate.generate(tmp_path / "g.jsonl", 3000, seed=3)
    return [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]


def test_the_proof_covers_what_pi_writes(tmp_path: Path) -> None:
    entries = ENTRIES + _generated(tmp_path)
    unproven = [e for e in entries if not _agree(e, repr(e)[:80])]
    # only the roles the proof leaves to the schema (bashExecution, custom messages) are not proven
    assert {e["message"]["role"] for e in unproven} <= {"bashExecution", "custom"}, unproven[:3]
    assert len(unproven) < 0.02 * len(entries)


def test_systematic_mutations_never_prove_an_invalid_entry() -> None:
    proven = rejected = 0
    for entry in _one_per_shape(ENTRIES):
        for what, mutated in _mutations(entry):
            if _agree(mutated, f"{entry['type']} {what}"):
                proven += 1
            elif not _schema_valid(mutated):
                rejected += 1
    assert proven > 300 and rejected > 500  # both outcomes really happen


def test_values_that_are_almost_right() -> None:
    base = next(e for e in ENTRIES if e["type"] == "message" and e["message"]["role"] == "assistant")
    cases: list[tuple[str, Any]] = []
    for key in ("input", "output", "totalTokens"):
        for value in (-1, -0.5, -0.0, 0, 2**70, -(2**70), float("inf"), float("nan"), True, 1e308):
            cases.append((key, value))
    for key, value in cases:
        e = copy.deepcopy(base)
        e["message"]["usage"][key] = value
        _agree(e, f"usage.{key}={value!r}")
    for stop in ("stop", "STOP", "", None, 1, ["stop"]):
        e = copy.deepcopy(base)
        e["message"]["stopReason"] = stop
        _agree(e, f"stopReason={stop!r}")
    for entry_id in ("", "x", "\ud800", None, 0):
        e = copy.deepcopy(base)
        e["id"] = entry_id
        _agree(e, f"id={entry_id!r}")

    class Text(str):
        pass

    e = copy.deepcopy(base)
    e["message"]["model"] = Text("m")  # not exactly a str: left to the schema
    assert not proven_valid(e)
    assert not proven_valid([base]) and not proven_valid({**base, "type": ["message"]})


SHAPES = _one_per_shape(ENTRIES)
odd_values = json_values | st.sampled_from(WRONG_VALUES) | st.sampled_from(["text", "toolCall", "user", "stop"])


def replaced(data: st.DataObject) -> dict:
    """One of SHAPES with one to three of its values deleted or replaced by odd ones."""
    entry = copy.deepcopy(data.draw(st.sampled_from(SHAPES)))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(entry))
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        target = entry
        for k in path[:-1]:
            target = target[k]
        if data.draw(st.booleans()) and isinstance(target, dict):
            del target[path[-1]]
        else:
            target[path[-1]] = copy.deepcopy(data.draw(odd_values))  # WRONG_VALUES holds shared lists
    return entry


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_replacements_never_prove_an_invalid_entry(data: st.DataObject) -> None:
    entry = replaced(data)
    _agree(entry, repr(entry)[:120])


def test_the_header_proof_never_proves_an_invalid_header() -> None:
    header_valid = S._py_validator("header")
    proven = rejected = 0
    assert all(proven_header(h) for h in HEADERS)
    for header in _one_per_shape(HEADERS):
        cases = [*_mutations(header), ("version 3.0", {**header, "version": 3.0}),
                 ("version True", {**header, "version": True}), ("version 0", {**header, "version": 0}),
                 ("type header", {**header, "type": "header"}), ("id ''", {**header, "id": ""})]
        for what, mutated in cases:
            valid = not any(header_valid.iter_errors(mutated))
            if proven_header(mutated):
                proven += 1
                assert valid, f"proven valid but the schema rejects it: {what}"
            rejected += not valid
    assert proven > 5 and rejected > 20  # both outcomes really happen


def _calls_by_hand(entry: dict) -> tuple:
    """What validate's structural check reads of a message: its assistant's toolCall ids, in order."""
    message = entry["message"]
    if message.get("role") != "assistant":
        return ()
    return tuple(b["id"] for b in message["content"] if b.get("type") == "toolCall")


def test_proven_message_gives_the_verdict_and_the_tool_calls(tmp_path: Path) -> None:
    """proven_message is proven_valid for message entries, and its calls are the entry's toolCall ids."""
    messages = [e for e in ENTRIES + _generated(tmp_path) if e["type"] == "message"]
    assert sum(bool(_calls_by_hand(e)) for e in messages) > 100  # assistants with calls really occur
    for entry in messages:
        calls = proven_message(entry)
        assert (calls is not None) == proven_valid(entry)
        if calls is not None:
            assert calls == _calls_by_hand(entry), entry
    for entry in _one_per_shape([e for e in ENTRIES if e["type"] == "message"]):
        for what, mutated in _mutations(entry):
            if mutated.get("type") == "message" and mutated.__class__ is dict:
                assert (proven_message(mutated) is not None) == _agree(mutated, what)


def test_usage_as_pi_writes_it_and_every_other_way() -> None:
    """The unrolled usage proof (every key, integer counts) and the key-by-key one agree with the schema."""
    base = next(e for e in ENTRIES if e["type"] == "message" and e["message"]["role"] == "assistant")
    full = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
            "cost": {"input": 0.5, "output": 1, "cacheRead": 0.0, "cacheWrite": 0, "total": 1.5}}
    odd = (-1, -0.0, 0.5, 2**70, -(2**70), float("inf"), float("-inf"), float("nan"), True, None, "1", [1], {})
    seen = set()
    for key in [*full, *(f"cost.{k}" for k in full["cost"])]:
        for value in odd:
            usage = copy.deepcopy(full)
            target, name = (usage["cost"], key[5:]) if key.startswith("cost.") else (usage, key)
            target[name] = value
            e = copy.deepcopy(base)
            e["message"]["usage"] = usage
            seen.add(_agree(e, f"usage.{key}={value!r}"))
            del target[name]  # absent: valid
            seen.add(_agree(e, f"usage.{key} absent"))
    assert seen == {True, False}
