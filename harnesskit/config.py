"""Configuration: ~/.harnesskit/config.yaml and a project .harnesskit.yaml (project wins).

Read and written with ruamel.yaml's round-trip mode, so `config set` keeps a file's comments and
key order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesskit.agent.models import DEFAULT_MAX_REPLY_BYTES, DEFAULT_REQUEST_TIMEOUT, Provider, parse_spec
from harnesskit.session.format import FSYNC_POLICIES, home_dir

if TYPE_CHECKING:  # ruamel.yaml is imported only when there is a config file to read (start-up)
    from ruamel.yaml import YAML

KEYS = {
    "model": "default model: demo, script:FILE.yaml, openai:MODEL or PROVIDER:MODEL",
    "base_url": "base URL of an OpenAI-compatible server",
    "session_dir": "directory for sessions (used flat)",
    "fsync": "durability: always, turn or never",
    "tools": "tools offered to the model, comma-separated (calc,read,ls)",
    "pricing": "prices per million tokens for `usage`: {MODEL: {input, output, cache_read, cache_write}}",
    "request_timeout": "seconds a model request may take in all before its turn ends as an error",
    "max_reply_bytes": "bytes a model reply may send before its turn ends as an error",
    "context_window": "the model's context window in tokens (default: known per model)",
    "reasoning_effort": "send /thinking's level to openai: models as reasoning_effort: auto, always or never",
    "compaction.enabled": "compact the context automatically when it nears the window (true/false)",
    "compaction.reserve_tokens": "tokens kept free below the window (pi: 16384, at most 30% of the window)",
    "compaction.keep_recent_tokens": "tokens of the newest messages a compaction keeps verbatim (pi: 20000)",
    "providers": "named OpenAI-compatible servers: providers.NAME.base_url, providers.NAME.api_key_env",
}
PROVIDER_KEYS = {"base_url": "the server's base URL (http or https)",
                 "api_key_env": "the environment variable holding its API key"}
DEFAULTS: dict[str, Any] = {"model": "demo", "base_url": None, "session_dir": None, "fsync": "turn",
                            "tools": "calc,read,ls", "request_timeout": f"{DEFAULT_REQUEST_TIMEOUT:g}",
                            "max_reply_bytes": str(DEFAULT_MAX_REPLY_BYTES), "context_window": None,
                            "reasoning_effort": "auto", "compaction.enabled": True,
                            "compaction.reserve_tokens": 16384, "compaction.keep_recent_tokens": 20000,
                            "providers": {}}
BOOL_KEYS = ("compaction.enabled",)
INT_KEYS = ("context_window", "compaction.reserve_tokens", "compaction.keep_recent_tokens")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PROJECT_FILE = ".harnesskit.yaml"


class ConfigError(Exception):
    pass


def user_config_path() -> Path:
    return home_dir() / "config.yaml"


def project_config_path(cwd: Path | None = None) -> Path | None:
    """The nearest .harnesskit.yaml from cwd upwards, or None."""
    here = (cwd or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def _yaml() -> YAML:
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip: comments and order survive a rewrite
    yaml.preserve_quotes = True
    return yaml


def _load(path: Path) -> Any:
    if not path.exists():  # the usual case: no file, so no YAML parser to import
        return None
    from ruamel.yaml.error import YAMLError

    try:
        with path.open(encoding="utf-8") as fp:
            data = _yaml().load(fp)
    except FileNotFoundError:
        return None
    except (OSError, YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read config: {' '.join(str(error).split())}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a mapping of keys to values")
    return data


def _known(key: str) -> None:
    if key in KEYS:
        return
    parts = key.split(".")
    if parts[0] != "providers" or len(parts) > 3:
        known = ", ".join(k for k in KEYS if k != "providers")
        raise ConfigError(f"unknown config key {key!r} (known: {known}, providers.NAME.base_url, "
                          "providers.NAME.api_key_env)")
    if len(parts) > 1 and not _NAME.fullmatch(parts[1]) or parts[1:2] in (["demo"], ["script"], ["openai"]):
        raise ConfigError(f"provider name {parts[1]!r} must be lower-case letters, digits, - or _, and not "
                          "demo, script or openai")
    if len(parts) == 3 and parts[2] not in PROVIDER_KEYS:
        raise ConfigError(f"unknown provider key {parts[2]!r} (known: {', '.join(PROVIDER_KEYS)})")


def _check_url(key: str, value: str) -> str:
    if not re.match(r"https?://[^/\s]", value):
        raise ConfigError(f"{key} must be an http:// or https:// URL, not {value!r}")
    return value


def _check_provider(name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"providers.{name} must be a mapping with base_url (and api_key_env)")
    out = {str(k): check_value(f"providers.{name}.{k}", v) for k, v in value.items()}
    if not out.get("base_url"):
        raise ConfigError(f"providers.{name} needs a base_url")
    return out


def check_value(key: str, value: Any, providers: Collection[str] | None = ()) -> Any:
    """The value as harnesskit uses it, or a ConfigError saying what is wrong with it. A model
    spec is parsed (against the providers known; None: later), never resolved: no file is read."""
    _known(key)
    if value is None:
        return None
    if key == "providers":
        if not isinstance(value, dict):
            raise ConfigError("providers must be a mapping of names to {base_url, api_key_env}")
        return {str(name): _check_provider(str(name), spec) for name, spec in value.items()}
    if key.startswith("providers."):
        _, name, *field = key.split(".")
        if not field:
            return _check_provider(name, value)
        value = str(value)
        if field == ["base_url"]:
            return _check_url(key, value)
        if not _ENV_NAME.fullmatch(value):
            raise ConfigError(f"{key} must be the name of an environment variable (e.g. MY_API_KEY), not {value!r}")
        return value
    if key == "fsync" and value not in FSYNC_POLICIES:
        raise ConfigError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {value!r}")
    if key == "pricing":  # a mapping, kept as one (edited in the file, not by `config set`)
        from harnesskit.session.pricing import parse_overrides

        try:
            parse_overrides(value)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        return value
    if key in ("request_timeout", "max_reply_bytes"):
        limit(key, value)
        return str(value)
    if key == "tools":
        from harnesskit.agent.tools import TOOLS

        names = [t.strip() for t in (value if isinstance(value, list) else str(value).split(",")) if str(t).strip()]
        unknown = [n for n in map(str, names) if n not in TOOLS]
        if unknown:
            raise ConfigError(f"unknown tool {', '.join(map(repr, unknown))} (available: {', '.join(TOOLS)})")
        return ",".join(map(str, names))
    if key == "reasoning_effort" and value not in ("auto", "always", "never"):
        raise ConfigError(f"reasoning_effort must be auto, always or never, not {value!r}")
    if key in BOOL_KEYS:
        return _as_bool(key, value)
    if key in INT_KEYS:
        return _as_count(key, value)
    value = str(value)
    if key == "model" and providers is not None:
        try:
            parse_spec(value, providers)
        except ValueError as error:
            raise ConfigError(f"model: {error}") from None
    if key == "base_url":
        return _check_url(key, value)
    return value


def limit(key: str, value: Any) -> float | int:
    """request_timeout (seconds, a positive number) or max_reply_bytes (a positive whole number)."""
    whole = key == "max_reply_bytes"
    try:
        number = int(str(value)) if whole else float(str(value))
    except ValueError:
        number = 0
    if isinstance(value, bool) or not 0 < number < float("inf"):
        kind = "a positive whole number of bytes" if whole else "a positive number of seconds"
        raise ConfigError(f"{key} must be {kind}, not {value!r}")
    return number


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ConfigError(f"{key} must be true or false, not {value!r}")


def _as_count(key: str, value: Any) -> int:
    """A token count: a whole number > 0 (underscores and commas allowed: 128_000, 128,000)."""
    text = str(value).strip().replace("_", "").replace(",", "")
    if isinstance(value, bool) or not text.isdigit() or int(text) <= 0:
        raise ConfigError(f"{key} must be a whole number of tokens above 0, not {value!r}")
    return int(text)


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """`compaction: {enabled: false}` in a file is the key `compaction.enabled`."""
    flat: dict[str, Any] = {}
    for key, value in (data or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and not prefix and any(k.startswith(f"{name}.") for k in KEYS):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def shown(value: Any) -> str:
    """A value as `config get/list` print it (booleans as in the YAML file)."""
    if value is None:
        return ""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass
class Config:
    values: dict[str, Any]
    sources: dict[str, str]  # key (providers.NAME.FIELD for a provider's) -> the file it came from

    def get(self, key: str) -> Any:
        """A key's value in effect; a dotted key not among KEYS reaches into providers."""
        if key in self.values:
            return self.values[key]
        first, *rest = key.split(".")
        value = self.values.get(first)
        for part in rest:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def providers(self) -> dict[str, Provider]:
        return {name: Provider(name, spec["base_url"], spec.get("api_key_env"))
                for name, spec in (self.values.get("providers") or {}).items()}

    def rows(self) -> list[tuple[str, Any, str]]:
        """(key, value, source) of every key, a provider's fields one row each."""
        out: list[tuple[str, Any, str]] = []
        for key in KEYS:
            if key != "providers":
                out.append((key, self.values.get(key), self.sources.get(key, "default")))
                continue
            for name, spec in (self.values.get("providers") or {}).items():
                for field, value in spec.items():
                    flat = f"providers.{name}.{field}"
                    out.append((flat, value, self.sources.get(flat, "default")))
        return out


def load_config(cwd: Path | None = None) -> Config:
    values = dict(DEFAULTS)
    values["providers"] = {}
    sources = {key: "default" for key in DEFAULTS}
    project = project_config_path(cwd)
    for path in (user_config_path(), project):
        if path is None:
            continue
        data = _load(path)
        for key, value in flatten(data).items():
            checked = check_value(str(key), value, providers=None)  # the model: once all is read
            if str(key) == "providers":
                for name, spec in (checked or {}).items():  # merged by name: a project adds to the user's
                    values["providers"][name] = spec
                    sources.update({f"providers.{name}.{field}": str(path) for field in spec})
                continue
            values[str(key)] = checked
            sources[str(key)] = str(path)
    if values.get("model") is not None:
        try:
            parse_spec(values["model"], values["providers"])
        except ValueError as error:
            raise ConfigError(f"{sources['model']}: model: {error}") from None
    return Config(values, sources)


def _section(data: Any, parts: list[str], create: bool) -> Any:
    """The mapping holding the last of `parts` (created on the way when asked), or None."""
    from ruamel.yaml.comments import CommentedMap

    for part in parts[:-1]:
        if not isinstance(data.get(part), dict):
            if not create:
                return None
            data[part] = CommentedMap()
        data = data[part]
    return data


def _read_for_update(path: Path) -> tuple[Any, str]:
    """The file's mapping and, for a file of comments only (it loads as None), those comments."""
    data = _load(path)
    kept = ""
    if data is None:
        from ruamel.yaml.comments import CommentedMap

        data = CommentedMap()
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            kept = "".join(f"{line}\n" for line in lines if not line.strip() or line.lstrip().startswith("#"))
    return data, kept


def _write(path: Path, data: Any, kept: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with temp.open("w", encoding="utf-8") as fp:
            fp.write(kept)
            if data:  # an empty mapping would be written as {}
                _yaml().dump(data, fp)
            fp.flush()
            os.fsync(fp.fileno())
        from harnesskit.session.writer import replace_synced  # only `config set` writes

        replace_synced(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def set_value(path: Path, key: str, value: str, providers: Collection[str] = ()) -> None:
    """Set one key (compaction.FIELD and providers.NAME.FIELD reach into their mapping), keeping everything else in the
    file as it was. The value is checked first: a bad one never reaches the file."""
    if key == "pricing":
        raise ConfigError("pricing is a mapping: edit it in the config file (see `harnesskit usage --help`)")
    checked = check_value(key, value, providers)
    parts = key.split(".")  # a dotted key lives in its section's mapping, as in pi's settings.json
    if parts[0] == "providers" and len(parts) == 2:
        raise ConfigError(f"set the fields of a provider one at a time: {key}.base_url, {key}.api_key_env")
    data, kept = _read_for_update(path)
    _section(data, parts, create=True)[parts[-1]] = checked
    if parts[0] == "providers":
        _check_provider(parts[1], dict(data["providers"][parts[1]]))
    _write(path, data, kept)


def unset_value(path: Path, key: str) -> bool:
    """Remove one key from the file (and a provider left empty); False when it was not there."""
    _known(key)
    if not path.exists():
        return False
    data, kept = _read_for_update(path)
    parts = key.split(".")
    section = _section(data, parts, create=False)
    if not isinstance(section, dict) or parts[-1] not in section:
        return False
    del section[parts[-1]]
    for depth in range(len(parts) - 1, 0, -1):  # drop the mappings this left empty
        parent = _section(data, parts[:depth], create=False)
        if isinstance(parent, dict) and parent.get(parts[depth - 1]) == {}:
            del parent[parts[depth - 1]]
    _write(path, data, kept)
    return True
