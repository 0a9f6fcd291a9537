"""Settings: every key, its default, where values come from, and how bad values are reported.

Precedence, low to high (DESIGN.md decision 10): defaults, the user config file, the
workspace's ``.agentls/config.toml``, the environment, LSP initializationOptions /
``workspace/configuration``, command-line flags.

Environment: ``AGENTLS_<KEY>`` sets any key, with ``.`` written as ``__`` (``AGENTLS_CACHE__TTL_S``,
``AGENTLS_BACKENDS__LOCAL__MODEL``) or, for keys outside ``backends``, as ``_``
(``AGENTLS_CACHE_TTL_S``). ``AGENTLS_MODEL`` sets the active backend's model and
``OPENAI_BASE_URL`` the ``openai`` backend's URL. API keys are only ever read from the
environment variable a backend names (``api_key_env``); no config file holds them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import platformdirs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from agentls import redaction
from agentls.permission_policy import PermissionPolicy
from agentls.sandbox_settings import SandboxSettings

APP_NAME = "agentls"
WORKSPACE_DIR = ".agentls"


class ConfigError(Exception):
    """A configuration problem, worded for the person who has to fix it."""


class BackendConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["openai", "codex", "copilot", "claude"] = Field(
        "openai",
        description="Protocol: `openai` = any OpenAI-compatible chat-completions server "
        "(OpenAI, Ollama, vLLM, llama.cpp server, LM Studio); `codex`, `copilot`, `claude` = "
        "run that installed agent CLI (OpenAI Codex CLI, GitHub Copilot CLI, Claude Code), "
        "which edits files itself: base_url, api_key_env and the sampling keys are ignored, "
        "and model is passed to the CLI only when set explicitly.",
        examples=["codex"],
    )
    base_url: str = Field(
        "https://api.openai.com/v1",
        description="Base URL of the API, ending in /v1.",
        examples=["http://localhost:11434/v1"],
    )
    model: str = Field("gpt-4o-mini", description="Model name sent with each request.",
                       examples=["gpt-4o-mini"])
    # No default key: a backend you add must name its own variable, so your OpenAI key is
    # never sent to some other host by accident. The built-in `openai` backend names it.
    api_key_env: str | None = Field(
        None,
        description="Name of the environment variable holding the API key (the built-in "
        "`openai` backend: OPENAI_API_KEY); `none` when the server needs no key. The key "
        "itself is never stored in a config file.",
        examples=["OPENAI_API_KEY"],
    )
    context_max_tokens: int = Field(128_000, gt=0, description="Context window of the model.",
                                    examples=[32768])
    max_tokens: int = Field(4096, gt=0, description="Most tokens the model may answer with.",
                            examples=[4096])
    temperature: float = Field(0.2, ge=0, le=2, description="Sampling temperature, 0 to 2.",
                               examples=[0.2])
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for the server per request.",
                           examples=[120])

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _no_key_variable(cls, value: Any) -> Any:
        # TOML has no null: `config set ... none` is stored as "", and people write "none".
        if isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        return value


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Serve identical requests from the response cache.",
                          examples=["false"])
    ttl_s: int = Field(7 * 24 * 3600, ge=0, description="Seconds an answer stays cached; 0 = "
                       "forever.", examples=[86400])
    max_mb: int = Field(256, gt=0, description="Size limit of the on-disk cache in MiB.",
                        examples=[256])
    # A replayed agent turn repeats tool calls decided on a workspace that may have changed.
    agent_runs: bool = Field(False, description="Also answer agent runs (requests offering "
                             "tools) from the cache; off by default, so a run always asks "
                             "the model.", examples=["true"])


class RetryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(3, ge=0, le=10, description="Retries after a rate limit, server "
                             "error, timeout or dropped connection.", examples=[3])
    base_delay_s: float = Field(1.0, gt=0, description="First backoff delay; doubles per retry.",
                                examples=[1.0])
    max_delay_s: float = Field(30.0, gt=0, description="Longest wait before a retry; a server "
                               "asking for longer is reported instead.", examples=[30])


class CompactionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_messages: int = Field(120, ge=10, description="Messages a session may hold before its "
                              "older part is summarised by the model.", examples=[120])


class IndexConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    embeddings: Literal["auto", "none", "static", "local", "openai"] = Field(
        "auto", description="Vectors of the search index: `static` = model2vec distilled from "
        "the bundled all-MiniLM-L6-v2 (fast), `local` = all-MiniLM-L6-v2 itself (slow on a "
        "CPU), both offline and needing `agentls[local]`; `openai` = an OpenAI-compatible "
        "/v1/embeddings endpoint (index.embedding_*); `none` = keywords (BM25) only; `auto` = "
        "static when agentls[local] is installed, else none.", examples=["none"])
    embedding_base_url: str = Field("http://localhost:11434/v1", description="Base URL of "
                                    "the /v1/embeddings endpoint (embeddings = openai).",
                                    examples=["https://api.openai.com/v1"])
    embedding_model: str = Field("nomic-embed-text", description="Embedding model name sent "
                                 "to that endpoint.", examples=["text-embedding-3-small"])
    embedding_api_key_env: str | None = Field(
        None, description="Environment variable holding that endpoint's key; none for none.",
        examples=["OPENAI_API_KEY"])
    max_file_kb: int = Field(512, gt=0, description="Larger files are not indexed.",
                             examples=[512])

    @field_validator("embedding_api_key_env", mode="before")
    @classmethod
    def _no_key_variable(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        return value


def default_backends() -> dict[str, BackendConfig]:
    return {
        "openai": BackendConfig(api_key_env="OPENAI_API_KEY"),
        "ollama": BackendConfig(base_url="http://localhost:11434/v1", model="qwen2.5-coder",
                                api_key_env=None, context_max_tokens=32_768),
        "vllm": BackendConfig(base_url="http://localhost:8000/v1", model="Qwen/Qwen2.5-Coder-7B",
                              api_key_env=None, context_max_tokens=32_768),
        "llamacpp": BackendConfig(base_url="http://localhost:8080/v1", model="default",
                                  api_key_env=None, context_max_tokens=8_192),
    }


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = Field("openai", description="Name of the backend to use (a key of "
                         "`backends`).", examples=["ollama"])
    backends: dict[str, BackendConfig] = Field(
        default_factory=default_backends,
        description="Configured model servers, by name; add your own as backends.<name>.*",
    )
    max_iterations: int = Field(25, gt=0, description="Most model turns in one run.",
                                examples=[25])
    timeout_ms: int = Field(600_000, gt=0, description="Time limit of one run, in milliseconds.",
                            examples=[120000])
    completion_mode: Literal["marker", "json"] = Field(
        "marker", description="How `agentls loop` knows a task is done: a final `DONE` line "
        "(marker) or a JSON status object (json).", examples=["json"])
    tool_timeout_s: float = Field(60.0, gt=0, description="Seconds one tool call may take "
                                  "(shell_exec: at least its own timeout).", examples=[60])
    no_progress_limit: int = Field(3, gt=0, description="Identical outputs in a row before a "
                                   "loop stops for lack of progress.", examples=[3])
    cache: CacheConfig = Field(default_factory=CacheConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    permissions: PermissionPolicy = Field(
        default_factory=PermissionPolicy,
        description="What tools may do without asking (DESIGN.md decision 3).",
    )
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)

    @model_validator(mode="after")
    def _backend_exists(self) -> Settings:
        if self.backend not in self.backends:
            names = ", ".join(sorted(self.backends))
            raise ValueError(
                f"backend {self.backend!r} is not configured (configured: {names}); add it "
                f"with `agentls config set backends.{self.backend}.base_url URL` or pick a "
                "configured one")
        return self

    @property
    def active_backend(self) -> BackendConfig:
        return self.backends[self.backend]


# --- keys -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KeyInfo:
    key: str  # dotted; backends.<name>.field for per-backend keys
    info: FieldInfo
    annotation: Any


def _model_keys(model: type[BaseModel], prefix: str = "") -> Iterator[KeyInfo]:
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _model_keys(annotation, f"{prefix}{name}.")
        elif typing.get_origin(annotation) is dict:
            # A table keyed by names the person picks: backends.<name>.*, permissions.tools.<name>
            value = typing.get_args(annotation)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                yield from _model_keys(value, f"{prefix}{name}.<name>.")
            else:
                yield KeyInfo(f"{prefix}{name}.<name>", FieldInfo(description=info.description),
                              value)
        else:
            yield KeyInfo(f"{prefix}{name}", info, annotation)


KEYS: dict[str, KeyInfo] = {k.key: k for k in _model_keys(Settings)}


_KEY_PATTERNS = [
    (re.compile(re.escape(k).replace(re.escape("<name>"), r"[^.]+")), info)
    for k, info in KEYS.items()
]


def key_info(key: str) -> KeyInfo:
    """The field behind a dotted key; ``ConfigError`` listing the valid keys otherwise."""
    if key in KEYS:
        return KEYS[key]
    for pattern, info in _KEY_PATTERNS:
        if pattern.fullmatch(key):
            return info
    hint = ""
    if "api_key" in key and not key.endswith("api_key_env"):
        hint = ("API keys are never stored in configuration: put the key in the environment "
                "variable named by backends.<name>.api_key_env (default OPENAI_API_KEY).\n")
    nearest = nearest_key(key)
    if nearest is not None and not hint:
        hint = f"Did you mean {nearest}?\n"
    valid = "\n  ".join(KEYS)
    raise ConfigError(f"unknown key {key!r}.\n{hint}Valid keys:\n  {valid}")


def nearest_key(key: str) -> str | None:
    """The valid key closest to a mistyped one (``cache.ttl`` -> ``cache.ttl_s``), with the
    person's own name in place of ``<name>`` (``backends.work.modle`` -> ``...work.model``)."""
    import difflib

    parts = key.split(".")
    candidates: list[str] = []
    for known in KEYS:
        pattern = known.split(".")
        if len(pattern) == len(parts):
            known = ".".join(p if w == "<name>" else w for w, p in zip(pattern, parts, strict=True))
        candidates.append(known)
    found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def check_base_url(key: str, url: str) -> None:
    """A base URL must be an http(s) URL with a host: ``localhost:8000/v1`` is not one."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return
    guess = f"https://{url.split('://', 1)[1]}" if "://" in url else f"http://{url}"
    raise ConfigError(
        f"invalid value {url!r} for {key}: a base URL starts with http:// or https:// and "
        f"names a host.\nExample: agentls config set {key} {guess.rstrip('/')}"
        + ("" if guess.rstrip("/").endswith("/v1") else "/v1"))


def parse_value(key: str, raw: str) -> Any:
    """Turn a command-line or environment string into a valid value for ``key``."""
    info = key_info(key)
    if key.endswith(".base_url"):
        check_base_url(key, raw.strip())
    value: Any = raw
    if raw.strip().lower() in ("none", "null") and _accepts_none(info.annotation):
        value = None
    elif typing.get_origin(info.annotation) is list:
        # A list on a command line: a JSON array, or items separated by commas.
        try:
            value = json.loads(raw) if raw.lstrip().startswith("[") else [
                item.strip() for item in raw.split(",") if item.strip()]
        except json.JSONDecodeError:
            value = raw
    adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, Annotated[info.annotation, info.info]))
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        problem = "; ".join(e["msg"].rstrip(".") for e in exc.errors())
        example = info.info.examples[0] if info.info.examples else _first_choice(info.annotation)
        suggestion = f"\nExample: agentls config set {key} {example}" if example is not None else ""
        raise ConfigError(f"invalid value {raw!r} for {key}: {problem}.{suggestion}") from None


def _accepts_none(annotation: Any) -> bool:
    return type(None) in getattr(annotation, "__args__", ())


def _first_choice(annotation: Any) -> Any:
    """An example for a key without one: the first allowed value of a ``Literal``."""
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)[0]
    return None


# --- layers -----------------------------------------------------------------------------------


def user_config_file() -> Path:
    return platformdirs.user_config_path(APP_NAME) / "config.toml"


def workspace_config_file(workspace: Path) -> Path:
    return workspace / WORKSPACE_DIR / "config.toml"


def user_cache_dir() -> Path:
    return platformdirs.user_cache_path(APP_NAME)


@dataclass
class Layer:
    name: str  # shown by `config list`: default, user, workspace, env, client, flags
    data: dict[str, Any]


def _reset_command(path: Path) -> str:
    # A workspace file lives in .agentls/; `config reset` alone would reset the user file.
    workspace = path.parent.name == WORKSPACE_DIR
    return "agentls config reset --workspace" if workspace else "agentls config reset"


def read_config_file(path: Path) -> dict[str, Any]:
    """A TOML config file as a dict; missing means empty; unparseable is a ``ConfigError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else max(1, len(text.splitlines()))
        reason = re.sub(r" \(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise ConfigError(
            f"config file {path}, line {line}: not valid TOML ({reason}).\n"
            f"Fix that line, or run `{_reset_command(path)}` to start again from defaults "
            f"(the old file is kept as {path.name}.bak)."
        ) from None


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    node = data
    *parents, leaf = key.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value


def get_dotted(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    single = {k.replace(".", "_").upper(): k for k in KEYS if "<name>" not in k}
    for name, raw in env.items():
        if not name.startswith("AGENTLS_") or name == "AGENTLS_MODEL":
            continue
        suffix = name[len("AGENTLS_"):]
        if "__" in suffix:
            key = ".".join(part.lower() for part in suffix.split("__"))
        elif suffix in single:
            key = single[suffix]
        else:
            continue  # other AGENTLS_* variables (test switches, paths) are not settings
        try:
            set_dotted(data, key, parse_value(key, raw))
        except ConfigError as exc:
            raise ConfigError(f"environment variable {name}: {exc}") from None
    if env.get("OPENAI_BASE_URL"):
        set_dotted(data, "backends.openai.base_url", env["OPENAI_BASE_URL"])
    return data


def deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass
class LoadedSettings:
    settings: Settings
    layers: list[Layer]

    def source_of(self, key: str) -> str:
        for layer in reversed(self.layers):
            try:
                get_dotted(layer.data, key)
            except KeyError:
                continue
            return layer.name
        return "default"


def load(
    workspace: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    client: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> LoadedSettings:
    """Merge every source in precedence order and validate the result."""
    environ = os.environ if env is None else env
    layers = [Layer("default", Settings().model_dump(mode="python"))]
    user_file = user_config_file()
    layers.append(Layer(f"user ({user_file})", read_config_file(user_file)))
    if workspace is not None:
        ws_file = workspace_config_file(workspace)
        layers.append(Layer(f"workspace ({ws_file})", read_config_file(ws_file)))
    layers.append(Layer("environment", env_layer(environ)))
    if client:
        layers.append(Layer("client", dict(client)))
    if flags:
        flag_data: dict[str, Any] = {}
        for key, value in flags.items():
            set_dotted(flag_data, key, value)
        layers.append(Layer("command line", flag_data))

    merged: dict[str, Any] = {}
    for layer in layers:
        if layer.name == "environment" and environ.get("AGENTLS_MODEL"):
            # AGENTLS_MODEL follows whichever backend the lower layers made active; it goes
            # into the environment layer so `config list` names the environment as its source.
            active = str(layer.data.get("backend", merged.get("backend", "openai")))
            set_dotted(layer.data, f"backends.{active}.model", environ["AGENTLS_MODEL"])
        try:
            merged = deep_merge(merged, layer.data)
        except (TypeError, AttributeError):
            raise ConfigError(f"{layer.name}: expected a table of settings") from None
    settings = validate(merged, layers)
    return LoadedSettings(settings, layers)


def validate(data: Mapping[str, Any], layers: Sequence[Layer] = ()) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = []
        loaded = LoadedSettings(Settings(), list(layers))
        for error in exc.errors():
            # The one settings-wide check is that `backend` names a configured backend.
            key = ".".join(str(p) for p in error["loc"]) or "backend"
            message = error["msg"].removeprefix("Value error, ")
            where = f" (from {loaded.source_of(key)})" if layers else ""
            problems.append(f"{key}: {message}{where}")
        raise ConfigError(
            "invalid configuration:\n  " + "\n  ".join(problems)
            + "\nFix it with `agentls config set KEY VALUE [--workspace]` (or in its "
            "AGENTLS_* variable, when it comes from the environment), or start again from "
            "defaults with `agentls config reset [--workspace]`."
        ) from None


def api_key(backend: BackendConfig, env: Mapping[str, str] | None = None) -> str | None:
    """The backend's API key from the environment; never logged, never stored."""
    if not backend.api_key_env:
        return None
    key = (os.environ if env is None else env).get(backend.api_key_env) or None
    redaction.add_secrets([key])  # from now on the key is hidden in every output
    return key


# --- writing ----------------------------------------------------------------------------------


def set_value(path: Path, key: str, raw: str) -> Any:
    """Validate ``key = raw`` and store it in the config file at ``path``.

    The file must make sense on its own over the defaults (``backend`` names a backend it or
    the defaults configure), so it never depends on another layer to be valid.
    """
    value = parse_value(key, raw)
    data = read_config_file(path)
    set_dotted(data, key, value)
    validate(deep_merge(Settings().model_dump(mode="python"), data))
    write_config_file(path, data)
    return value


def write_config_file(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    import tempfile

    import tomli_w

    text = tomli_w.dumps(_without_none(data))
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temporary name of its own, so two `config set` at once never share one.
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}; check "
                          "that its folder is writable") from None


def _without_none(data: Mapping[str, Any]) -> dict[str, Any]:
    # TOML has no null: an unset optional (api_key_env = none) is stored as an empty string.
    return {
        k: _without_none(v) if isinstance(v, Mapping) else ("" if v is None else v)
        for k, v in data.items()
    }


def reset(path: Path) -> Path | None:
    """Move the config file aside (``config.toml.bak``); defaults apply again."""
    if not path.exists():
        return None
    backup = path.with_name(path.name + ".bak")
    try:
        os.replace(path, backup)
    except OSError as exc:
        raise ConfigError(f"cannot move {path} to {backup}: {exc.strerror or exc}; check that "
                          "its folder is writable, or delete the file yourself") from None
    return backup
