"""JSON Schema validation of pi v3 session headers and entries.

The schemas live in ``schemas/`` (shipped as the package ``harnesskit.schemas``) and reference one another
by ``$id`` (``https://harnesskit.dev/schemas/<name>.json``). They are loaded once with
the installed package directory into a ``referencing.Registry`` (for python ``jsonschema``) and a
``jsonschema_rs.Registry`` (for the hot path), so every ``$ref`` resolves offline.

Two validators, one answer:

* ``jsonschema_rs`` decides validity (``entry_is_valid``, and the first step of ``entry_problems`` and
  ``header_problems``). It is compiled once per entry type, so the hot path is one dict lookup plus one
  Rust call.
* python ``jsonschema`` (Draft 2020-12) runs only for invalid objects and explains them: every error
  gets a JSON path (``$.message.content[2].name``), a message prefixed with the entry's own type and
  role (``message(assistant): 'usage' is a required property``) and the rule it broke
  (``message.assistant/required``: the ``title`` of the nearest titled schema node, then the JSON
  pointer from that node to the failing keyword).

The schemas dispatch on ``type``/``role`` with ``if``/``then`` and contain no ``anyOf``/``oneOf``, so an
error always belongs to the rule of the object's own kind, never "is not valid under any of the given
schemas".

No Click, no printing, no network.
"""

from __future__ import annotations

import functools
import json
import math
import reprlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .format import ENTRY_TYPES
from .shapes import proven_header, proven_valid

if TYPE_CHECKING:  # python jsonschema only explains failures: imported when one is explained (start-up)
    import jsonschema_rs  # imported when an entry is not proven valid by shapes.py (a clean small file: never)
    import referencing
    from jsonschema.exceptions import ValidationError

__all__ = [
    "KNOWN_CONTENT_TYPES",
    "KNOWN_ENTRY_TYPES",
    "KNOWN_ROLES",
    "SCHEMA_BASE_URI",
    "SchemaProblem",
    "entry_is_valid",
    "entry_problems",
    "explain",
    "header_is_valid",
    "header_problems",
    "is_valid",
    "schema",
    "schema_names",
]

SCHEMA_BASE_URI = "https://harnesskit.dev/schemas/"

#: Entry types pi 0.73.1 writes (pi-reference §2.3). Other types are valid (forward compatibility).
KNOWN_ENTRY_TYPES: frozenset[str] = frozenset(ENTRY_TYPES)
#: Message roles with a schema of their own (pi-reference §2.4). Other roles are accepted.
KNOWN_ROLES: frozenset[str] = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom"})
#: Content block types with a schema of their own. Other block types are accepted, as pi accepts them.
KNOWN_CONTENT_TYPES: frozenset[str] = frozenset({"text", "thinking", "image", "toolCall"})

_MAX_VALUE_REPR = 60


@dataclass(frozen=True)
class SchemaProblem:
    """One schema violation of a header or entry."""

    path: str  # JSON path of the failing field, e.g. "$.message.usage.cost"
    message: str  # readable, prefixed with the entry's own type/role, e.g. "message(assistant): ..."
    rule: str  # schema location and keyword, e.g. "message.assistant/required"

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.rule}]"


# --------------------------------------------------------------------------------------------------
# loading


def _uri(name: str) -> str:
    return f"{SCHEMA_BASE_URI}{name}.json"


def _schema_dir() -> Any:
    """The installed schemas: a plain directory when there is one (importlib.resources costs ~30 ms of
    start-up for its zip support), else whatever importlib.resources finds."""
    import harnesskit.schemas as package

    if package.__file__:
        return Path(package.__file__).parent
    import importlib.resources

    return importlib.resources.files(package)


@functools.cache
def _raw_schemas() -> dict[str, dict[str, Any]]:
    """name -> schema document, read once from the installed package."""
    out: dict[str, dict[str, Any]] = {}
    for item in _schema_dir().iterdir():
        if item.name.endswith(".json"):
            doc = json.loads(item.read_text(encoding="utf-8"))
            name = item.name[: -len(".json")]
            if doc.get("$id") != _uri(name):
                raise RuntimeError(f"schema {item.name}: $id {doc.get('$id')!r} is not {_uri(name)!r}")
            out[name] = doc
    if not out:
        raise RuntimeError("no JSON schemas found in package harnesskit.schemas")
    return out


def schema_names() -> list[str]:
    """Names of the bundled schemas (file names without ``.json``)."""
    return sorted(_raw_schemas())


def schema(name: str) -> dict[str, Any]:
    """The schema document ``name`` (e.g. ``"entry"``, ``"message"``). Do not mutate it."""
    try:
        return _raw_schemas()[name]
    except KeyError:
        raise KeyError(f"no schema named {name!r}; known: {', '.join(schema_names())}") from None


@functools.cache
def _py_schemas() -> dict[str, dict[str, Any]]:
    """The documents python ``jsonschema`` sees: shallow copies without ``$schema``.

    When python ``jsonschema`` follows a ``$ref`` into a document that declares ``$schema``, it switches
    to the stock validator class registered for that meta-schema and so drops our type checker (see
    ``_validator_class``). Without ``$schema`` it keeps the class it started with; the draft is given to
    ``referencing`` explicitly instead.
    """
    return {name: {k: v for k, v in doc.items() if k != "$schema"} for name, doc in _raw_schemas().items()}


@functools.cache
def _registry() -> referencing.Registry:
    import referencing
    import referencing.jsonschema

    resources = [
        (doc["$id"], referencing.Resource(contents=doc, specification=referencing.jsonschema.DRAFT202012))
        for doc in _py_schemas().values()
    ]
    return referencing.Registry().with_resources(resources).crawl()


def _is_json_number(checker: Any, instance: Any) -> bool:
    # JSON has no NaN/Infinity (pi's JSON.parse rejects them, python's json.loads lets them through);
    # jsonschema_rs does not count them as numbers, so neither does the explanation.
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


@functools.cache
def _validator_class() -> Any:
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("number", _is_json_number),
    )


@functools.cache
def _py_validator(name: str) -> Any:
    schema(name)  # a KeyError naming the known schemas
    return _validator_class()(_py_schemas()[name], registry=_registry())


@functools.cache
def _rs_registry() -> jsonschema_rs.Registry:
    import jsonschema_rs

    return jsonschema_rs.Registry([(doc["$id"], doc) for doc in _raw_schemas().values()])


@functools.cache
def _rs_validator(name: str) -> Any:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(schema(name), registry=_rs_registry(), offline=True)


@functools.cache
def _rs_is_valid_by_type() -> dict[str, Any]:
    """entry type -> bound ``is_valid`` of that type's own schema (skips entry.json's dispatch)."""
    return {t: _rs_validator(f"entry-{t}").is_valid for t in KNOWN_ENTRY_TYPES}


@functools.cache
def _titles() -> dict[int, tuple[str, str]]:
    """id(schema node) -> (title of the nearest titled ancestor-or-self, JSON pointer from it).

    python ``jsonschema`` hands the very dicts of its registry to its errors (``error.schema``), so an
    error can be mapped back to the rule it broke without parsing ``$ref`` chains.
    """
    table: dict[int, tuple[str, str]] = {}

    def walk(node: Any, title: str, pointer: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("title"), str):
                title, pointer = node["title"], ""
            table[id(node)] = (title, pointer)
            for key, value in node.items():
                walk(value, title, f"{pointer}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, title, f"{pointer}/{i}")

    for name, doc in _py_schemas().items():
        walk(doc, name, "")
    return table


# --------------------------------------------------------------------------------------------------
# hot path


_RS_BY_TYPE: dict[str, Any] = {}  # filled on first use by _load_rs_by_type()


def _load_rs_by_type() -> dict[str, Any]:
    _RS_BY_TYPE.update(_rs_is_valid_by_type())
    return _RS_BY_TYPE


def entry_is_valid(obj: dict) -> bool:
    """True when ``obj`` is a valid v3 entry; an unknown but string ``type`` is valid."""
    if proven_valid(obj):  # the common shapes, proven in Python faster than a call into jsonschema_rs
        return True
    try:
        is_valid = (_RS_BY_TYPE or _load_rs_by_type())[obj["type"]]
    except KeyError:  # no type, or a type without a schema (unknown types are accepted)
        return isinstance(obj, dict) and isinstance(obj.get("type"), str)
    except TypeError:  # obj is no dict, or its type is unhashable
        return False
    try:
        return is_valid(obj)
    except Exception:  # a value jsonschema_rs cannot convert (a lone surrogate "\ud800", a non-str key)
        return not any(_py_validator("entry").iter_errors(obj))


def header_is_valid(obj: dict) -> bool:
    """True when ``obj`` is a valid (v3) session header."""
    return proven_header(obj) or is_valid(obj, "header")


def is_valid(obj: Any, kind: str = "entry") -> bool:
    """Validity of ``obj`` against any bundled schema (``"entry"``, ``"header"``, ``"message"``...)."""
    if kind == "entry":
        return entry_is_valid(obj)
    try:
        return _rs_validator(kind).is_valid(obj)
    except Exception:
        if kind not in _raw_schemas():
            raise
        return not any(_py_validator(kind).iter_errors(obj))


def entry_problems(obj: dict) -> list[SchemaProblem]:
    """Schema problems of one (v3) entry; ``[]`` when valid. An unknown ``type`` gives ``[]``."""
    if entry_is_valid(obj):
        return []
    return explain(obj, "entry") or [_disagreement(obj, "entry")]


def header_problems(obj: dict) -> list[SchemaProblem]:
    """Schema problems of a session header; ``[]`` when valid."""
    if header_is_valid(obj):
        return []
    return explain(obj, "header") or [_disagreement(obj, "header")]


def _disagreement(obj: Any, kind: str) -> SchemaProblem:
    # jsonschema_rs said invalid but python jsonschema found nothing to say: should never happen (the
    # tests prove agreement on the fixtures and on systematic mutations); report rather than hide it.
    return SchemaProblem("$", f"{_prefix(obj, kind)}: rejected by jsonschema_rs without explanation", "internal")


# --------------------------------------------------------------------------------------------------
# explanation


def explain(obj: dict, kind: str = "entry") -> list[SchemaProblem]:
    """All schema problems of ``obj`` as precise explanations (slow: python ``jsonschema``).

    ``kind`` is ``"entry"`` (dispatches on the entry's ``type``), ``"header"``, or the name of any bundled
    schema (``"message"``, ``"content"``, ``"usage"``, ``"entry-label"``...). The most relevant problem
    (``best_match``) comes first, the others follow in document order.
    """
    entry_type = obj.get("type") if kind == "entry" and isinstance(obj, dict) else None
    if isinstance(entry_type, str) and entry_type in KNOWN_ENTRY_TYPES:
        # entry.json would dispatch here through its if/then; going straight to the entry's own schema
        # gives the same errors without evaluating eight needless `if`s (~1.6x faster).
        kind = f"entry-{entry_type}"
    from jsonschema.exceptions import best_match

    validator = _py_validator(kind)
    errors = list(_leaf_errors(validator.iter_errors(obj)))
    if not errors:
        return []
    best = best_match(errors)
    ordered = [best] + sorted((e for e in errors if e is not best), key=lambda e: _path_key(e.absolute_path))
    problems: list[SchemaProblem] = []
    seen: set[SchemaProblem] = set()
    for error in ordered:
        for problem in _problems_of(error, obj, kind):
            if problem not in seen:
                seen.add(problem)
                problems.append(problem)
    return problems


def _leaf_errors(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    # The schemas use no anyOf/oneOf, but a caller's schema might: descend into the context of such
    # errors so the explanation names the failing field rather than the combinator.
    from jsonschema.exceptions import best_match

    for error in errors:
        if error.context and error.validator in ("anyOf", "oneOf"):
            yield best_match(error.context)
        else:
            yield error


def _path_key(path: Iterable[Any]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


def _problems_of(error: ValidationError, root: Any, kind: str) -> Iterator[SchemaProblem]:
    title, pointer = _titles().get(id(error.schema), (kind, ""))
    rule = f"{title}{pointer}/{error.validator}" if pointer else f"{title}/{error.validator}"
    prefix = _prefix(root, kind)
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        for name in error.validator_value:
            if name not in error.instance and error.message.startswith(repr(name)):
                yield SchemaProblem(_json_path([*path, name]), f"{prefix}: {_where(title)}{error.message}", rule)
                return
    yield SchemaProblem(_json_path(path), f"{prefix}: {_message(error, title)}", rule)


def _prefix(root: Any, kind: str) -> str:
    """``message(assistant)``, ``label``, ``header``... : the rule set of the object's own kind."""
    if kind == "header":
        return "header"
    if not isinstance(root, dict):
        return kind
    if kind == "message" or (kind.startswith("entry") and root.get("type") == "message"):
        message = root if kind == "message" else root.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        return f"message({role})" if isinstance(role, str) else "message"
    entry_type = root.get("type")
    if kind.startswith("entry") and isinstance(entry_type, str):
        return entry_type
    return kind


_short = reprlib.Repr()
_short.maxstring = _MAX_VALUE_REPR
_short.maxother = _MAX_VALUE_REPR
_short.maxlist = _short.maxdict = 4
_short.maxlevel = 2


def _where(title: str) -> str:
    """Names a nested rule (``content.toolCall: ``, ``usage: ``); empty for the entry's own rules."""
    return "" if title.startswith(("entry", "message", "header")) else f"{title}: "


def _message(error: ValidationError, title: str) -> str:
    value = _short.repr(error.instance)
    where = _where(title)
    v = error.validator
    if v == "type":
        if isinstance(error.instance, float) and math.isinf(error.instance):  # 1e400, or 5,000 nines
            return f"{where}a number too large for a double (pi reads it as Infinity)"
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{where}{value} is not of type {expected}"
    if v == "enum":
        return f"{where}{value} is not one of {', '.join(map(repr, error.validator_value))}"
    if v == "const":
        return f"{where}{value} is not {error.validator_value!r}"
    if v == "minLength":
        return f"{where}{value} is shorter than {error.validator_value} characters"
    if v == "minimum":
        return f"{where}{value} is less than the minimum {error.validator_value}"
    text = error.message
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{where}{text}"


def _json_path(parts: Iterable[Any]) -> str:
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif isinstance(part, str) and part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)
