"""Configuration: ~/.harnesskit/config.yaml and a project .harnesskit.yaml (project wins).

Read and written with ruamel.yaml's round-trip mode, so `config set` keeps a file's comments and
key order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnesskit.agent.models import DEFAULT_MAX_REPLY_BYTES, DEFAULT_REQUEST_TIMEOUT
from harnesskit.session.store import home_dir
from harnesskit.session.writer import FSYNC_POLICIES

if TYPE_CHECKING:  # ruamel.yaml is imported only when there is a config file to read (start-up)
    from ruamel.yaml import YAML

KEYS = {
    "model": "default model: demo, script:FILE.yaml or openai:MODEL",
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
}
DEFAULTS: dict[str, Any] = {"model": "demo", "base_url": None, "session_dir": None, "fsync": "turn",
                            "tools": "calc,read,ls", "request_timeout": f"{DEFAULT_REQUEST_TIMEOUT:g}",
                            "max_reply_bytes": str(DEFAULT_MAX_REPLY_BYTES), "context_window": None,
                            "reasoning_effort": "auto", "compaction.enabled": True,
                            "compaction.reserve_tokens": 16384, "compaction.keep_recent_tokens": 20000}
BOOL_KEYS = ("compaction.enabled",)
INT_KEYS = ("context_window", "compaction.reserve_tokens", "compaction.keep_recent_tokens")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
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


def check_value(key: str, value: Any) -> Any:
    if key not in KEYS:
        raise ConfigError(f"unknown config key {key!r} (known: {', '.join(KEYS)})")
    if value is None:
        return None
    if key == "fsync" and value not in FSYNC_POLICIES:
        raise ConfigError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {value!r}")
    if key == "pricing":  # a mapping, kept as one (edited in the file, not by `config set`)
        from harnesskit.session.pricing import parse_overrides

        try:
            parse_overrides(value)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        return value
    if key == "tools" and isinstance(value, list):
        value = ",".join(map(str, value))
    if key in ("request_timeout", "max_reply_bytes"):
        limit(key, value)
    if key == "reasoning_effort" and value not in ("auto", "always", "never"):
        raise ConfigError(f"reasoning_effort must be auto, always or never, not {value!r}")
    if key in BOOL_KEYS:
        return _as_bool(key, value)
    if key in INT_KEYS:
        return _as_count(key, value)
    return str(value)


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
    sources: dict[str, str]

    def get(self, key: str) -> Any:
        return self.values.get(key)


def load_config(cwd: Path | None = None) -> Config:
    values = dict(DEFAULTS)
    sources = {key: "default" for key in DEFAULTS}
    project = project_config_path(cwd)
    for path in (user_config_path(), project):
        if path is None:
            continue
        data = _load(path)
        for key, value in flatten(data).items():
            values[str(key)] = check_value(str(key), value)
            sources[str(key)] = str(path)
    return Config(values, sources)


def set_value(path: Path, key: str, value: str) -> None:
    """Set one key, keeping everything else in the file as it was."""
    if key == "pricing":
        raise ConfigError("pricing is a mapping: edit it in the config file (see `harnesskit usage --help`)")
    typed = check_value(key, value)
    data = _load(path)
    kept = ""  # a file of comments only loads as None: its comments must survive too
    if data is None:
        from ruamel.yaml.comments import CommentedMap

        data = CommentedMap()
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            kept = "".join(f"{line}\n" for line in lines if not line.strip() or line.lstrip().startswith("#"))
    section, dot, name = key.partition(".")
    if dot:  # a dotted key lives in its section's mapping, as in pi's settings.json
        from ruamel.yaml.comments import CommentedMap

        if not isinstance(data.get(section), dict):
            data[section] = CommentedMap()
        data[section][name] = typed
    else:
        data[key] = typed if key in BOOL_KEYS + INT_KEYS else value
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with temp.open("w", encoding="utf-8") as fp:
        fp.write(kept)
        _yaml().dump(data, fp)
    os.replace(temp, path)
