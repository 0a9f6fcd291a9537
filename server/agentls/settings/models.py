"""The settings models: every key, its default and what values it accepts (pydantic).

Where values come from and how they merge is ``agentls.settings.config``; the key index used by
`config get/set` is ``agentls.settings.keys``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentls.policy.permissions import PermissionPolicy
from agentls.settings.mcp import McpConfig
from agentls.settings.sandbox import SandboxSettings


class BackendConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

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
    images: bool = Field(False, description="The model takes images in prompts (a vision "
                         "model): ACP clients may then attach images, sent as image parts.",
                         examples=["true"])
    tool_calls: Literal["native", "text", "auto"] = Field(
        "auto", description="How the model calls tools: native (the API's tools field), text "
        "(the tools described in the system prompt, calls read from the answer's text, "
        "results sent back as messages: for models with no tool calling), auto (native, and "
        "text once the server refuses tools, as Ollama does for a model without them). Calls "
        "a server left in the text unparsed are read in every mode.",
        examples=["text"])

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _no_key_variable(cls, value: Any) -> Any:
        # TOML has no null: `config set ... none` is stored as "", and people write "none".
        if isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        return value


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

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
    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_retries: int = Field(3, ge=0, le=10, description="Retries after a rate limit, server "
                             "error, timeout or dropped connection.", examples=[3])
    base_delay_s: float = Field(1.0, gt=0, description="First backoff delay; doubles per retry.",
                                examples=[1.0])
    max_delay_s: float = Field(30.0, gt=0, description="Longest wait before a retry; a server "
                               "asking for longer is reported instead.", examples=[30])


class CompactionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_messages: int = Field(120, ge=10, description="Messages a session may hold before its "
                              "older part is summarised by the model.", examples=[120])


class IndexConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    embeddings: Literal["auto", "none", "static", "local", "openai"] = Field(
        "auto", description="Vectors of the search index: `static` = model2vec distilled from "
        "the bundled all-MiniLM-L6-v2 (fast), `local` = all-MiniLM-L6-v2 itself (slow on a "
        "CPU), both offline and needing `agentls[local]`; `openai` = an OpenAI-compatible "
        "/v1/embeddings endpoint (index.embedding_*); `none` = keywords (BM25) only; `auto` = "
        "static once its model is built (`static` builds it: minutes, once), else none.",
        examples=["none"])
    embedding_base_url: str = Field("http://localhost:11434/v1", description="Base URL of "
                                    "the /v1/embeddings endpoint (embeddings = openai).",
                                    examples=["https://api.openai.com/v1"])
    embedding_model: str = Field("nomic-embed-text", description="Embedding model name sent "
                                 "to that endpoint.", examples=["text-embedding-3-small"])
    embedding_api_key_env: str | None = Field(
        None, description="Environment variable holding that endpoint's key; none for none.",
        examples=["OPENAI_API_KEY"])
    rerank: Literal["auto", "off"] = Field(
        "off", description="Interactive searches (`agentls search`, the agent's "
        "search_semantic) over `static` vectors re-order their first 20 candidates with "
        "all-MiniLM-L6-v2: `auto` = when `agentls[local]` is installed, `off` = never (the "
        "default: on the code-search benchmark it adds little, and it loads torch, seconds "
        "per `agentls search`; see docs/SEMANTIC_SEARCH.md).", examples=["auto"])
    chat_context: int = Field(0, ge=0, le=20, description="Chunks of the search index (the "
                              "best matches for the request) added to each chat request; 0 = "
                              "off (the default until measured useful for your repository).",
                              examples=[5])
    max_file_kb: int = Field(512, gt=0, description="Larger files are not indexed.",
                             examples=[512])

    @field_validator("embedding_api_key_env", mode="before")
    @classmethod
    def _no_key_variable(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        return value


class CompletionConfig(BaseModel):
    """Inline completion as you type (DESIGN.md decision 15): its own small model, never the
    agent loop. Off until a completion model is set (or ``enabled`` is true)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    enabled: bool | None = Field(
        None, description="Ghost-text completion as you type; default: on when "
        "`completion.model` is set.", examples=["true"])
    backend: str = Field("", description="The backend (a key of `backends`) whose server "
                         "answers completions; empty = the active `backend`.",
                         examples=["ollama"])
    model: str = Field("", description="The completion model (a small fill-in-the-middle "
                       "model, e.g. qwen2.5-coder:1.5b); empty = the backend's model, used "
                       "only when `completion.enabled` is true.",
                       examples=["qwen2.5-coder:1.5b-base"])
    fim: Literal["auto", "suffix", "template", "chat"] = Field(
        "auto", description="How the request is made: `suffix` = /v1/completions with "
        "`suffix` (Ollama); `template` = /v1/completions with the model's FIM template "
        "(vLLM, llama.cpp); `chat` = a chat model with a strict prompt (last resort); `auto` "
        "= suffix, then the template when the server refuses `suffix`, then chat when no "
        "template fits the model name.", examples=["template"])
    template: str = Field(
        "", description="FIM template: empty = chosen by model name; `qwen`, `starcoder2`, "
        "`deepseek`, `codellama`, `codestral`; or your own text with {prefix} and {suffix}.",
        examples=["qwen"])
    stop: list[str] = Field(default_factory=list, description="Extra stop strings.",
                            examples=[["\n\n"]])
    disabled_languages: list[str] = Field(
        default_factory=list, description="Language ids (as the editor names them) with no "
        "completion.", examples=[["markdown", "plaintext"]])
    debounce_ms: int = Field(60, ge=0, le=2000, description="Pause after a keystroke before "
                             "an automatic request reaches the model.", examples=[60])
    max_tokens: int = Field(128, gt=0, le=2048, description="Most tokens one completion "
                            "may have.", examples=[128])
    max_lines: int = Field(12, gt=0, le=200, description="Most lines one completion may "
                           "have.", examples=[12])
    context_tokens: int = Field(1536, ge=128, le=32_000, description="Token budget of the "
                                "context around the cursor (prefix, suffix, other files).",
                                examples=[2048])
    temperature: float = Field(0.1, ge=0, le=2, description="Sampling temperature.",
                               examples=[0.1])
    timeout_s: float = Field(5.0, gt=0, le=120, description="Seconds a completion may wait "
                             "for the model before it gives up (empty answer).",
                             examples=[5])

    @property
    def active(self) -> bool:
        return bool(self.model) if self.enabled is None else self.enabled


class LangServerConfig(BaseModel):
    """One language server the agent uses, `lsp.servers.NAME` (docs/LANGUAGE_SERVERS.md)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: str | None = Field(None, description="Program that starts the server over stdio "
                                "(a name on PATH or a path); empty: the known server of that "
                                "name as detected.", examples=["basedpyright-langserver"])
    args: list[str] = Field(default_factory=list, description="Its arguments.",
                            examples=["--stdio"])
    languages: list[str] = Field(default_factory=list, description="Language ids it serves "
                                 "(python, typescript, go, c, cpp, rust ...).",
                                 examples=["python"])
    globs: list[str] = Field(default_factory=list, description="Files it serves, as globs "
                             "(*.py); with languages, a file matching either is served.",
                             examples=["*.py,*.pyi"])
    initialization_options: dict[str, Any] = Field(
        default_factory=dict, description="Sent as initializationOptions.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Answers to the server's workspace/configuration "
        "requests, by section (python.analysis.typeCheckingMode = \"strict\").")
    root_markers: list[str] = Field(default_factory=list, description="Files whose presence "
                                    "in the workspace says the server applies "
                                    "(pyproject.toml, tsconfig.json, go.mod ...).",
                                    examples=["pyproject.toml"])
    enabled: bool = Field(True, description="Use this server.", examples=["false"])
    startup_timeout_s: float = Field(30.0, gt=0, description="Seconds it may take to answer "
                                     "initialize.", examples=[30])
    timeout_s: float = Field(15.0, gt=0, description="Seconds one request (or one file's "
                             "diagnostics) may take.", examples=[15])


class LspConfig(BaseModel):
    """Embedded in the settings as `lsp`: the language servers that are the agent's eyes
    (DESIGN.md decision 16)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    servers: dict[str, LangServerConfig] = Field(
        default_factory=dict, description="Language servers by name; a known name "
        "(basedpyright, pyright, ruff, typescript, gopls, clangd, rust-analyzer) needs no "
        "command.")
    detect: bool = Field(True, description="Use the known servers found on PATH without "
                         "configuring them.", examples=["false"])
    idle_stop_s: float = Field(600.0, gt=0, description="A server unused this long is "
                               "stopped (started again on next use).", examples=[600])


class AgentConfig(BaseModel):
    """Embedded in the settings as `agent`: how the loop checks its own work."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    check: Literal["errors", "warnings", "off"] = Field(
        "errors", description="After the model's last edit of a turn, the changed files' "
        "diagnostics from the language servers: new errors (or errors and warnings) go back "
        "to the model once; off: no check.", examples=["warnings"])
    check_turns: int = Field(1, ge=0, le=5, description="Most extra model turns the check "
                             "may ask for in one run.", examples=[1])
    check_timeout_s: float = Field(30.0, gt=0, description="Seconds the check may wait for "
                                   "the servers; past it the summary says it could not run.",
                                   examples=[30])


class NextEditConfig(BaseModel):
    """Next-edit suggestions (DESIGN.md decisions 15 and 18): the edit the person is about to
    make near the cursor, from a small model of its own, never the agent loop. Off until a
    model is set (or ``enabled`` is true)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    enabled: bool | None = Field(
        None, description="Next-edit suggestions; default: on when `next_edit.model` is set.",
        examples=["true"])
    backend: str = Field("", description="The backend (a key of `backends`) whose server "
                         "answers next-edit requests; empty = the active `backend`.",
                         examples=["ollama"])
    model: str = Field("", description="The next-edit model (an open NES model such as Zed's "
                       "zeta, or any chat model); empty = the backend's model, used only when "
                       "`next_edit.enabled` is true.", examples=["zeta"])
    format: Literal["auto", "zeta", "chat"] = Field(
        "auto", description="The prompt: `zeta` = Zeta's editable-region format on "
        "/v1/completions (models trained on it); `chat` = a chat model with the same markers "
        "and strict rules; `auto` = zeta when the model name holds `zeta`, else chat.",
        examples=["zeta"])
    debounce_ms: int = Field(150, ge=0, le=5000, description="Pause after a request before "
                             "it reaches the model; a newer request in it replaces it.",
                             examples=[150])
    region_tokens: int = Field(350, ge=32, le=4000, description="Token budget of the "
                               "editable region around the cursor (what the model may "
                               "rewrite).", examples=[350])
    context_tokens: int = Field(150, ge=0, le=4000, description="Token budget of the "
                                "read-only context around the editable region.",
                                examples=[150])
    history_tokens: int = Field(500, ge=0, le=8000, description="Token budget of the recent "
                                "edits (diffs) in the prompt.", examples=[500])
    max_tokens: int = Field(768, gt=0, le=8192, description="Most tokens one answer may "
                            "have.", examples=[768])
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature.",
                               examples=[0.0])
    timeout_s: float = Field(10.0, gt=0, le=120, description="Seconds a suggestion may wait "
                             "for the model before it gives up (no suggestion).",
                             examples=[10])
    disabled_languages: list[str] = Field(
        default_factory=list, description="Language ids (as the editor names them) with no "
        "next-edit suggestions.", examples=[["markdown", "plaintext"]])

    @property
    def active(self) -> bool:
        return bool(self.model) if self.enabled is None else self.enabled


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
    model_config = ConfigDict(extra="forbid", defer_build=True)

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
    completion: CompletionConfig = Field(default_factory=CompletionConfig)
    next_edit: NextEditConfig = Field(default_factory=NextEditConfig)
    mcp: McpConfig = Field(default_factory=McpConfig, description="Tools from MCP servers "
                           "(docs/MCP.md).")
    lsp: LspConfig = Field(default_factory=LspConfig, description="Language servers the "
                           "agent reads diagnostics, definitions and references from "
                           "(docs/LANGUAGE_SERVERS.md).")
    agent: AgentConfig = Field(default_factory=AgentConfig)

    @model_validator(mode="after")
    def _backend_exists(self) -> Settings:
        if self.backend not in self.backends:
            names = ", ".join(sorted(self.backends))
            raise ValueError(
                f"backend {self.backend!r} is not configured (configured: {names}); add it "
                f"with `agentls config set backends.{self.backend}.base_url URL` or pick a "
                "configured one")
        return self

    @model_validator(mode="after")
    def _completion_backend_exists(self) -> Settings:
        name = self.completion.backend
        if name and name not in self.backends:
            names = ", ".join(sorted(self.backends))
            raise ValueError(f"completion.backend {name!r} is not configured (configured: "
                             f"{names}); name one of them, or leave it empty for the active "
                             "backend")
        return self

    @model_validator(mode="after")
    def _next_edit_backend_exists(self) -> Settings:
        name = self.next_edit.backend
        if name and name not in self.backends:
            names = ", ".join(sorted(self.backends))
            raise ValueError(f"next_edit.backend {name!r} is not configured (configured: "
                             f"{names}); name one of them, or leave it empty for the active "
                             "backend")
        return self

    @property
    def active_backend(self) -> BackendConfig:
        return self.backends[self.backend]
