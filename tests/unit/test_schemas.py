"""Tests for harnesskit.session.schemas and the JSON Schemas in schemas/."""

from __future__ import annotations

import copy
import importlib.resources
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import V1_LARGE, requires_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesskit.session import schemas as S

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pi"
V3_FILES = sorted((FIXTURES / "v3").glob("*.jsonl"))
SCHEMA_ID_BASE = "https://harnesskit.dev/schemas/"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _headers() -> list[dict[str, Any]]:
    return [_read(p)[0] for p in V3_FILES]


def _entries() -> list[dict[str, Any]]:
    return [e for p in V3_FILES for e in _read(p)[1:]]


HEADERS = _headers()
ENTRIES = _entries()


def _entry(type_: str, role: str | None = None, block: str | None = None) -> dict[str, Any]:
    """A deep copy of the first fixture entry of that type (and message role / content block type)."""
    for e in ENTRIES:
        if e["type"] != type_:
            continue
        if role is not None and e["message"]["role"] != role:
            continue
        if block is not None and not any(b.get("type") == block for b in e["message"]["content"]):
            continue
        return copy.deepcopy(e)
    raise LookupError((type_, role, block))


def _shape(value: Any) -> Any:
    """Structure of a value (keys and types, not contents): one fixture entry per shape is enough."""
    if isinstance(value, dict):
        return tuple(sorted((k, _shape(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(sorted({repr(_shape(v)) for v in value})))
    return type(value).__name__


def _one_per_shape(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[Any, dict[str, Any]] = {}
    for o in objs:
        seen.setdefault(_shape(o), o)
    return list(seen.values())


# --------------------------------------------------------------------------------------------------
# the fixtures: every real pi v3 header and entry is valid


def test_fixtures_present():
    assert len(V3_FILES) >= 10
    assert len(ENTRIES) > 100
    assert {e["type"] for e in ENTRIES} == S.KNOWN_ENTRY_TYPES  # the fixtures exercise every known type


@pytest.mark.parametrize("path", V3_FILES, ids=lambda p: p.name)
def test_every_v3_fixture_header_is_valid(path: Path):
    header = _read(path)[0]
    assert S.header_problems(header) == []
    assert S.header_is_valid(header)
    assert S.explain(header, "header") == []


@pytest.mark.parametrize("path", V3_FILES, ids=lambda p: p.name)
def test_every_v3_fixture_entry_is_valid(path: Path):
    for lineno, entry in enumerate(_read(path)[1:], start=2):
        assert S.entry_problems(entry) == [], f"{path.name}:{lineno}"
        assert S.entry_is_valid(entry), f"{path.name}:{lineno}"
        assert S.explain(entry) == [], f"{path.name}:{lineno}"


@requires_shared
def test_v1_fixture_message_objects_are_valid_messages():
    # v1 entries have no id/parentId (that is migration's business), but their message objects are what
    # pi writes today, with older quirks: usage without totalTokens, toolCall.partialJson, details null.
    messages = [e["message"] for e in _read(V1_LARGE) if e.get("type") == "message"]
    assert len(messages) == 914
    invalid = [(i, S.explain(m, "message")) for i, m in enumerate(messages) if not S.is_valid(m, "message")]
    assert invalid == []


# --------------------------------------------------------------------------------------------------
# hand-picked invalid entries: the path, the type/role the message names, and the rule


def _del(*keys: Any):
    def mutate(e: dict[str, Any]) -> None:
        target = e
        for k in keys[:-1]:
            target = target[k]
        del target[keys[-1]]

    return mutate


def _set(*keys: Any, value: Any):
    def mutate(e: dict[str, Any]) -> None:
        target = e
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return mutate


ASSISTANT = ("message", "assistant", None)
TOOLCALL = ("message", "assistant", "toolCall")
USER = ("message", "user", None)
TOOLRESULT = ("message", "toolResult", None)

# (id, source entry, mutation, expected path, expected message prefix, expected rule)
INVALID_CASES = [
    ("usage-missing", ASSISTANT, _del("message", "usage"),
     "$.message.usage", "message(assistant): 'usage' is a required property", "message.assistant/required"),
    ("usage-not-object", ASSISTANT, _set("message", "usage", value=None),
     "$.message.usage", "message(assistant): usage: None is not of type object", "usage/type"),
    ("usage-cost-string", ASSISTANT, _set("message", "usage", "cost", value="free"),
     "$.message.usage.cost", "message(assistant): usage.cost:", "usage.cost/type"),
    ("usage-input-string", ASSISTANT, _set("message", "usage", "input", value="582"),
     "$.message.usage.input", "message(assistant): usage:", "usage/properties/input/type"),
    ("bad-stopReason", ASSISTANT, _set("message", "stopReason", value="done"),
     "$.message.stopReason", "message(assistant): 'done' is not one of",
     "message.assistant/properties/stopReason/enum"),
    ("stopReason-missing", ASSISTANT, _del("message", "stopReason"),
     "$.message.stopReason", "message(assistant): 'stopReason' is a required property",
     "message.assistant/required"),
    ("api-missing", ASSISTANT, _del("message", "api"),
     "$.message.api", "message(assistant): 'api' is a required property", "message.assistant/required"),
    ("provider-missing", ASSISTANT, _del("message", "provider"),
     "$.message.provider", "message(assistant):", "message.assistant/required"),
    ("model-number", ASSISTANT, _set("message", "model", value=7),
     "$.message.model", "message(assistant): 7 is not of type string",
     "message.assistant/properties/model/type"),
    ("assistant-timestamp-missing", ASSISTANT, _del("message", "timestamp"),
     "$.message.timestamp", "message(assistant):", "message.assistant/required"),
    ("assistant-content-string", ASSISTANT, _set("message", "content", value="hi"),
     "$.message.content", "message(assistant): content.blocks: 'hi' is not of type array", "content.blocks/type"),
    ("assistant-content-missing", ASSISTANT, _del("message", "content"),
     "$.message.content", "message(assistant): 'content' is a required property", "message.assistant/required"),
    ("toolCall-name-missing", TOOLCALL, _del("message", "content", 0, "name"),
     "$.message.content[0].name", "message(assistant): content.toolCall: 'name' is a required property",
     "content.toolCall/required"),
    ("toolCall-arguments-string", TOOLCALL, _set("message", "content", 0, "arguments", value="{}"),
     "$.message.content[0].arguments", "message(assistant): content.toolCall:",
     "content.toolCall/properties/arguments/type"),
    ("text-block-no-text", ASSISTANT, _set("message", "content", 0, value={"type": "text"}),
     "$.message.content[0].text", "message(assistant): content.text: 'text' is a required property",
     "content.text/required"),
    ("block-not-object", USER, _set("message", "content", 0, value="hello"),
     "$.message.content[0]", "message(user): content: 'hello' is not of type object", "content/type"),
    ("block-without-type", USER, _set("message", "content", 0, value={"text": "x"}),
     "$.message.content[0].type", "message(user): content: 'type' is a required property", "content/required"),
    ("user-content-number", USER, _set("message", "content", value=3),
     "$.message.content", "message(user): content.stringOrBlocks: 3 is not of type string or array",
     "content.stringOrBlocks/type"),
    ("user-timestamp-string", USER, _set("message", "timestamp", value="now"),
     "$.message.timestamp", "message(user):", "message.user/properties/timestamp/type"),
    ("toolResult-toolCallId-missing", TOOLRESULT, _del("message", "toolCallId"),
     "$.message.toolCallId", "message(toolResult): 'toolCallId' is a required property",
     "message.toolResult/required"),
    ("toolResult-isError-string", TOOLRESULT, _set("message", "isError", value="false"),
     "$.message.isError", "message(toolResult):", "message.toolResult/properties/isError/type"),
    ("message-missing", ASSISTANT, _del("message"),
     "$.message", "message: 'message' is a required property", "entry.message/required"),
    ("message-null", ASSISTANT, _set("message", value=None),
     "$.message", "message: None is not of type object", "message/type"),
    ("role-missing", USER, _del("message", "role"),
     "$.message.role", "message: 'role' is a required property", "message/required"),
    ("id-number", ASSISTANT, _set("id", value=5),
     "$.id", "message(assistant): 5 is not of type string", "entry.base/properties/id/type"),
    ("id-empty", ("label", None, None), _set("id", value=""),
     "$.id", "label: '' is shorter than 1 characters", "entry.base/properties/id/minLength"),
    ("id-missing", ("model_change", None, None), _del("id"),
     "$.id", "model_change: 'id' is a required property", "entry.base/required"),
    ("parentId-5", ("thinking_level_change", None, None), _set("parentId", value=5),
     "$.parentId", "thinking_level_change: 5 is not of type string or null", "entry.base/properties/parentId/type"),
    ("parentId-missing", USER, _del("parentId"),
     "$.parentId", "message(user): 'parentId' is a required property", "entry.base/required"),
    ("timestamp-missing", ("session_info", None, None), _del("timestamp"),
     "$.timestamp", "session_info: 'timestamp' is a required property", "entry.base/required"),
    ("timestamp-number", ("custom", None, None), _set("timestamp", value=1796115214022),
     "$.timestamp", "custom: 1796115214022 is not of type string", "entry.base/properties/timestamp/type"),
    ("label-targetId-missing", ("label", None, None), _del("targetId"),
     "$.targetId", "label: 'targetId' is a required property", "entry.label/required"),
    ("label-number", ("label", None, None), _set("label", value=1),
     "$.label", "label: 1 is not of type string or null", "entry.label/properties/label/type"),
    ("model_change-modelId-missing", ("model_change", None, None), _del("modelId"),
     "$.modelId", "model_change: 'modelId' is a required property", "entry.model_change/required"),
    ("thinkingLevel-null", ("thinking_level_change", None, None), _set("thinkingLevel", value=None),
     "$.thinkingLevel", "thinking_level_change: None is not of type string",
     "entry.thinking_level_change/properties/thinkingLevel/type"),
    ("compaction-firstKeptEntryId-missing", ("compaction", None, None), _del("firstKeptEntryId"),
     "$.firstKeptEntryId", "compaction: 'firstKeptEntryId' is a required property", "entry.compaction/required"),
    ("compaction-tokensBefore-string", ("compaction", None, None), _set("tokensBefore", value="596"),
     "$.tokensBefore", "compaction:", "entry.compaction/properties/tokensBefore/type"),
    ("compaction-tokensBefore-nan", ("compaction", None, None), _set("tokensBefore", value=float("nan")),
     "$.tokensBefore", "compaction: nan is not of type number", "entry.compaction/properties/tokensBefore/type"),
    ("branch_summary-fromId-missing", ("branch_summary", None, None), _del("fromId"),
     "$.fromId", "branch_summary: 'fromId' is a required property", "entry.branch_summary/required"),
    ("branch_summary-fromHook-string", ("branch_summary", None, None), _set("fromHook", value="no"),
     "$.fromHook", "branch_summary:", "entry.branch_summary/properties/fromHook/type"),
    ("custom-customType-missing", ("custom", None, None), _del("customType"),
     "$.customType", "custom: 'customType' is a required property", "entry.custom/required"),
    ("custom_message-content-missing", ("custom_message", None, None), _del("content"),
     "$.content", "custom_message: 'content' is a required property", "entry.custom_message/required"),
    ("custom_message-display-string", ("custom_message", None, None), _set("display", value="yes"),
     "$.display", "custom_message:", "entry.custom_message/properties/display/type"),
    ("session_info-name-number", ("session_info", None, None), _set("name", value=3),
     "$.name", "session_info: 3 is not of type string", "entry.session_info/properties/name/type"),
    ("type-missing", USER, _del("type"),
     "$.type", "entry: 'type' is a required property", "entry/required"),
    ("type-number", USER, _set("type", value=3),
     "$.type", "entry: 3 is not of type string", "entry/properties/type/type"),
]


@pytest.mark.parametrize(
    ("source", "mutate", "path", "message", "rule"),
    [c[1:] for c in INVALID_CASES],
    ids=[c[0] for c in INVALID_CASES],
)
def test_invalid_entry_is_explained(source, mutate, path, message, rule):
    entry = _entry(*source)
    assert S.entry_is_valid(entry)
    mutate(entry)
    assert not S.entry_is_valid(entry)
    problems = S.entry_problems(entry)
    assert problems, "an invalid entry must have at least one problem"
    assert problems == S.explain(entry)
    first = problems[0]
    assert (first.path, first.rule) == (path, rule), problems
    assert first.message.startswith(message), first.message
    for p in problems:
        assert isinstance(p, S.SchemaProblem)
        assert p.path.startswith("$")
        assert "is not valid under any of the given schemas" not in p.message


def test_all_problems_are_reported_not_just_the_first():
    entry = _entry(*ASSISTANT)
    del entry["message"]["usage"]
    entry["message"]["stopReason"] = "done"
    entry["parentId"] = 5
    got = {(p.path, p.rule) for p in S.entry_problems(entry)}
    assert got == {
        ("$.message.usage", "message.assistant/required"),
        ("$.message.stopReason", "message.assistant/properties/stopReason/enum"),
        ("$.parentId", "entry.base/properties/parentId/type"),
    }


def test_non_object_entries_are_invalid():
    for value in (None, 42, "str", [1, 2], ["type"]):
        assert not S.entry_is_valid(value)  # type: ignore[arg-type]
        problems = S.entry_problems(value)  # type: ignore[arg-type]
        assert [(p.path, p.rule) for p in problems] == [("$", "entry/type")]


def test_long_values_are_shortened_in_messages():
    entry = _entry(*ASSISTANT)
    entry["message"]["content"] = "x" * 100_000
    (problem,) = S.entry_problems(entry)
    assert problem.path == "$.message.content"
    assert len(problem.message) < 200


def test_paths_quote_keys_that_are_not_identifiers():
    assert S._json_path(["message", "content", 2, "name"]) == "$.message.content[2].name"
    assert S._json_path(["a b", 0]) == '$["a b"][0]'


@pytest.mark.parametrize(
    ("header_mutation", "path", "rule"),
    [
        (_del("id"), "$.id", "header/required"),
        (_set("id", value=1), "$.id", "header/properties/id/type"),
        (_set("type", value="header"), "$.type", "header/properties/type/const"),
        (_del("version"), "$.version", "header/required"),
        (_set("version", value="3"), "$.version", "header/properties/version/type"),
        (_set("version", value=2.5), "$.version", "header/properties/version/type"),
        (_del("cwd"), "$.cwd", "header/required"),
        (_del("timestamp"), "$.timestamp", "header/required"),
        (_set("parentSession", value=None), "$.parentSession", "header/properties/parentSession/type"),
    ],
)
def test_invalid_header_is_explained(header_mutation, path, rule):
    header = copy.deepcopy(HEADERS[0])
    header_mutation(header)
    assert not S.header_is_valid(header)
    problems = S.header_problems(header)
    assert [(p.path, p.rule) for p in problems] == [(path, rule)]
    assert problems[0].message.startswith("header: ")


def test_header_keeps_unknown_keys_and_optional_parent():
    header = copy.deepcopy(HEADERS[0])
    header.update(provider="anthropic", modelId="claude", branchedFrom="/x.jsonl", parentSession="/p.jsonl")
    assert S.header_problems(header) == []


# --------------------------------------------------------------------------------------------------
# forward compatibility: what pi accepts, the schemas accept


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "future_entry_kind"},
        {"type": "misc", "id": 5, "parentId": 7, "anything": [1, {"x": None}]},
        {"type": ""},
    ],
)
def test_unknown_entry_types_are_accepted(entry):
    assert entry["type"] not in S.KNOWN_ENTRY_TYPES
    assert S.entry_is_valid(entry)
    assert S.entry_problems(entry) == []
    assert S.explain(entry) == []


def test_unknown_blocks_roles_and_extra_keys_are_accepted():
    entry = _entry(*ASSISTANT)
    entry["message"]["content"].append({"type": "future_block", "payload": 1})
    entry["message"]["content"].append({"type": "thinking", "thinking": "hm", "redacted": False, "x": 1})
    entry["message"]["diagnostics"] = {"anything": True}
    entry["message"]["usage"]["extraCounter"] = 3
    entry["extraTopLevel"] = {"kept": True}
    assert S.entry_problems(entry) == []
    user = _entry(*USER)
    user["message"]["content"] = "a plain string prompt"
    user["message"]["content2"] = None
    assert S.entry_problems(user) == []
    other = _entry(*USER)
    other["message"] = {"role": "someExtensionRole", "whatever": 1}
    assert S.entry_problems(other) == []


def test_pi_minimum_usage_and_label_clear_are_accepted():
    entry = _entry(*ASSISTANT)
    entry["message"]["usage"] = {}  # pi only needs an object (pi-reference §9)
    assert S.entry_problems(entry) == []
    label = _entry("label")
    del label["label"]  # an absent label clears it
    assert S.entry_problems(label) == []


def test_other_message_roles():
    base = {"type": "message", "id": "abcd1234", "parentId": None, "timestamp": "2026-12-01T08:53:34.008Z"}
    bash = {"role": "bashExecution", "command": "ls", "output": "a\n", "exitCode": 0, "cancelled": False,
            "truncated": False, "timestamp": 1}
    custom = {"role": "custom", "customType": "hook", "content": "note", "display": True, "timestamp": 1}
    assert S.entry_problems({**base, "message": bash}) == []
    assert S.entry_problems({**base, "message": custom}) == []
    (problem,) = S.entry_problems({**base, "message": {**bash, "exitCode": "0"}})
    assert (problem.path, problem.rule) == ("$.message.exitCode", "message.bashExecution/properties/exitCode/type")
    assert problem.message.startswith("message(bashExecution): ")
    no_output = {k: v for k, v in bash.items() if k != "output"}
    (problem,) = S.entry_problems({**base, "message": no_output})
    assert (problem.path, problem.message) == (
        "$.message.output", "message(bashExecution): 'output' is a required property")
    (problem,) = S.entry_problems({**base, "message": {**custom, "customType": None}})
    assert problem.rule == "message.custom/properties/customType/type"


# --------------------------------------------------------------------------------------------------
# jsonschema_rs (hot path) and python jsonschema (explanations) agree


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


WRONG_VALUES: list[Any] = [None, 0, -1, 1.5, "", "x", True, [], {}, [1], {"type": "text"}, 2**70, float("inf")]


def _mutations(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every key deleted in turn, and every value replaced by values of wrong types."""
    for path in _paths(obj):
        m = copy.deepcopy(obj)
        target = m
        for k in path[:-1]:
            target = target[k]
        del target[path[-1]]
        yield f"del {path}", m
        for value in WRONG_VALUES:
            m = copy.deepcopy(obj)
            target = m
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = value
            yield f"set {path}={value!r}", m


def _assert_agree(obj: Any, kind: str, what: str) -> bool:
    rs_full = S._rs_validator(kind).is_valid(obj)  # through entry.json's own if/then dispatch
    hot = S.entry_is_valid(obj) if kind == "entry" else S.header_is_valid(obj)
    explained = S.explain(obj, kind)
    py_full = not any(S._py_validator(kind).iter_errors(obj))
    assert rs_full == hot == py_full == (not explained), (what, rs_full, hot, py_full, explained)
    problems = S.entry_problems(obj) if kind == "entry" else S.header_problems(obj)
    assert problems == explained, what
    for p in problems:
        assert p.rule != "internal", (what, p)
        assert "is not valid under any of the given schemas" not in p.message, (what, p)
    return rs_full


def test_validators_agree_on_fixtures():
    for e in ENTRIES:
        assert _assert_agree(e, "entry", repr(e)[:80])
    for h in HEADERS:
        assert _assert_agree(h, "header", repr(h)[:80])


def test_validators_agree_on_systematic_entry_mutations():
    total = invalid = 0
    for entry in _one_per_shape(ENTRIES):
        for what, mutated in _mutations(entry):
            total += 1
            if not _assert_agree(mutated, "entry", f"{entry['type']} {what}"):
                invalid += 1
                problems = S.entry_problems(mutated)
                if isinstance(mutated.get("type"), str):  # the message names the entry's own type/role
                    prefix = S._prefix(mutated, "entry")
                    assert all(p.message.startswith(prefix + ": ") for p in problems), (what, problems)
    # the sweep really exercises both outcomes (wrong values in free-form fields stay valid)
    assert total > 1500
    assert 0.3 * total < invalid < total


def test_validators_agree_on_systematic_header_mutations():
    invalid = 0
    for header in _one_per_shape(HEADERS):
        for what, mutated in _mutations(header):
            invalid += not _assert_agree(mutated, "header", what)
    assert invalid > 50


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
SHAPES = _one_per_shape(ENTRIES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validators_agree_on_random_replacements(data):
    entry = copy.deepcopy(data.draw(st.sampled_from(SHAPES)))
    paths = list(_paths(entry))
    path = data.draw(st.sampled_from(paths))
    target = entry
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = data.draw(json_values)
    _assert_agree(entry, "entry", f"{path}")


def test_hot_path_survives_values_jsonschema_rs_cannot_convert():
    # jsonschema_rs raises (instead of answering) on lone surrogates, which JSON allows ("\ud800")
    entry = _entry("session_info")
    entry["name"] = "\ud800"
    assert S.entry_is_valid(entry)
    entry["id"] = "\ud800"
    entry["parentId"] = 5
    assert not S.entry_is_valid(entry)
    assert [p.path for p in S.entry_problems(entry)] == ["$.parentId"]


# --------------------------------------------------------------------------------------------------
# the schema files themselves


def _schema_files() -> list[tuple[str, dict[str, Any]]]:
    files = importlib.resources.files("harnesskit.schemas")
    return sorted(
        (f.name, json.loads(f.read_text(encoding="utf-8"))) for f in files.iterdir() if f.name.endswith(".json")
    )


def test_schema_files_are_shipped():
    names = {n for n, _ in _schema_files()}
    expected = {"header.json", "entry.json", "entry-base.json", "message.json", "content.json", "usage.json"}
    expected |= {f"entry-{t}.json" for t in S.KNOWN_ENTRY_TYPES}
    assert expected <= names
    assert S.schema_names() == sorted(n.removesuffix(".json") for n in names)


@pytest.mark.parametrize(("name", "doc"), _schema_files(), ids=lambda x: x if isinstance(x, str) else "")
def test_schema_is_draft_2020_12_with_id(name: str, doc: dict[str, Any]):
    assert doc["$schema"] == DRAFT_2020_12
    assert doc["$id"] == SCHEMA_ID_BASE + name
    assert isinstance(doc.get("title"), str)
    jsonschema.Draft202012Validator.check_schema(doc)
    S._rs_validator(name.removesuffix(".json"))  # compiles offline, every $ref resolved


def test_schemas_use_if_then_dispatch_not_oneof():
    def keywords(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for k, v in node.items():
                yield k
                yield from keywords(v)
        elif isinstance(node, list):
            for v in node:
                yield from keywords(v)

    for name, doc in _schema_files():
        used = set(keywords(doc))
        assert not used & {"oneOf", "anyOf"}, name
    entry = dict(_schema_files())["entry.json"]
    dispatched = {branch["if"]["properties"]["type"]["const"] for branch in entry["allOf"]}
    assert dispatched == S.KNOWN_ENTRY_TYPES
    message = dict(_schema_files())["message.json"]
    assert {b["if"]["properties"]["role"]["const"] for b in message["allOf"]} == S.KNOWN_ROLES
    content = dict(_schema_files())["content.json"]
    assert {b["if"]["properties"]["type"]["const"] for b in content["allOf"]} == S.KNOWN_CONTENT_TYPES


def test_validators_are_built_once():
    assert S._rs_validator("entry") is S._rs_validator("entry")
    assert S._py_validator("entry") is S._py_validator("entry")
    assert S._registry() is S._registry()


def test_unknown_kind_is_an_error():
    with pytest.raises(KeyError):
        S.explain({}, "no-such-schema")
