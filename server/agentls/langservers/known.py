"""The language servers AgentLS knows: how to start each, what it serves, what it needs.

One small class per server (Serena / multilspy's shape). A known server found on PATH (or
beside AgentLS's own interpreter, where ``pip install basedpyright`` puts it) is used without
configuring it while ``lsp.detect`` is on; ``lsp.servers.NAME`` overrides any field.
"""

from __future__ import annotations

from typing import Any, ClassVar


class KnownServer:
    name: ClassVar[str]
    commands: ClassVar[tuple[str, ...]]  # the first found is used
    args: ClassVar[tuple[str, ...]] = ()
    languages: ClassVar[tuple[str, ...]] = ()
    globs: ClassVar[tuple[str, ...]] = ()
    root_markers: ClassVar[tuple[str, ...]] = ()
    initialization_options: ClassVar[dict[str, Any]] = {}
    settings: ClassVar[dict[str, Any]] = {}
    # Another known server that does the same job better: this one is not detected beside it.
    yields_to: ClassVar[tuple[str, ...]] = ()
    # Pushed diagnostics without a version: how long to wait for a later push (a server that
    # sends syntax errors first and type errors after needs longer).
    push_settle_s: ClassVar[float] = 0.15


class Basedpyright(KnownServer):
    name = "basedpyright"
    commands = ("basedpyright-langserver",)
    args = ("--stdio",)
    languages = ("python",)
    globs = ("*.py", "*.pyi")
    root_markers = ("pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json",
                    "requirements.txt")
    # Errors the compiler would report, not basedpyright's stricter default ("recommended").
    settings: ClassVar[dict[str, Any]] = {"basedpyright": {"analysis": {
        "typeCheckingMode": "standard", "diagnosticMode": "openFilesOnly"}}}


class Pyright(KnownServer):
    name = "pyright"
    commands = ("pyright-langserver",)
    args = ("--stdio",)
    languages = ("python",)
    globs = ("*.py", "*.pyi")
    root_markers = Basedpyright.root_markers
    settings: ClassVar[dict[str, Any]] = {
        "python": {"analysis": {"diagnosticMode": "openFilesOnly"}}}
    yields_to = ("basedpyright",)


class Ruff(KnownServer):
    name = "ruff"
    commands = ("ruff",)
    args = ("server",)
    languages = ("python",)
    globs = ("*.py", "*.pyi")
    root_markers = ("pyproject.toml", "ruff.toml", ".ruff.toml")


class TypeScript(KnownServer):
    name = "typescript"
    commands = ("typescript-language-server",)
    args = ("--stdio",)
    languages = ("typescript", "typescriptreact", "javascript", "javascriptreact")
    globs = ("*.ts", "*.tsx", "*.mts", "*.cts", "*.js", "*.jsx", "*.mjs", "*.cjs")
    root_markers = ("tsconfig.json", "jsconfig.json", "package.json")
    push_settle_s = 0.6  # syntax, semantic and suggestion diagnostics come one push each


class Gopls(KnownServer):
    name = "gopls"
    commands = ("gopls",)
    languages = ("go",)
    globs = ("*.go",)
    root_markers = ("go.mod", "go.work")


class Clangd(KnownServer):
    name = "clangd"
    commands = ("clangd",)
    args = ("--background-index=false",)
    languages = ("c", "cpp", "objective-c")
    globs = ("*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hpp", "*.hh", "*.hxx")
    root_markers = ("compile_commands.json", "compile_flags.txt", ".clangd", "CMakeLists.txt")


class RustAnalyzer(KnownServer):
    name = "rust-analyzer"
    commands = ("rust-analyzer",)
    languages = ("rust",)
    globs = ("*.rs",)
    root_markers = ("Cargo.toml",)
    # The workspace is read-only in the sandbox and has no network: no build scripts.
    initialization_options: ClassVar[dict[str, Any]] = {
        "cargo": {"buildScripts": {"enable": False}}, "procMacro": {"enable": False},
        "checkOnSave": False}


KNOWN: dict[str, type[KnownServer]] = {
    cls.name: cls for cls in (Basedpyright, Pyright, Ruff, TypeScript, Gopls, Clangd,
                              RustAnalyzer)}

LANGUAGE_OF_SUFFIX: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascriptreact", ".go": "go", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rs": "rust", ".m": "objective-c",
}
