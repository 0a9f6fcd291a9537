"""Real typescript-language-server (with typescript, from npm) and clangd (Debian), sandboxed,
over a pending workspace: a pending type error, and definition and references across two
pending files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentls.langservers.servers import LangServers
from agentls.settings.models import LangServerConfig, LspConfig
from agentls.settings.sandbox import SandboxSettings
from agentls.workspace.fence import Workspace

from .conftest import clangd, typescript_language_server

pytestmark = pytest.mark.usefixtures("sandboxed")


def _pool(name: str, command: str) -> LangServers:
    config = LspConfig(detect=False, servers={name: LangServerConfig(
        command=command, timeout_s=60, startup_timeout_s=60)})
    return LangServers(config, SandboxSettings(), secret_env="OPENAI_API_KEY")


async def test_typescript_sees_the_pending_edits(tmp_path: Path) -> None:
    root = tmp_path / "web"
    root.mkdir()
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (root / "lib.ts").write_text("export function greet(name: string): string {\n"
                                 "  return 'hi ' + name;\n}\n")
    (root / "app.ts").write_text("import { greet } from './lib';\nconsole.log(greet('x'));\n")
    ws = Workspace([root])
    lib, app = ws.resolve("lib.ts"), ws.resolve("app.ts")
    ws.stage_write(lib, "export function greet(name: string): string {\n"
                        "  return 'hi ' + name;\n}\n\nexport function shout(name: string): "
                        "string {\n  return greet(name).toUpperCase();\n}\n")
    ws.stage_write(app, "import { greet, shout } from './lib';\n"
                        "const n: number = shout('x');\nconsole.log(greet('y'), n);\n")
    pool = _pool("typescript", typescript_language_server())
    try:
        problems = await pool.diagnostics(ws, [app.abs])
        definition = await pool.definition(ws, app.abs, 2, 19)
        references = await pool.references(ws, lib.abs, 5, 17)
    finally:
        await pool.aclose()
    assert problems.failures == {}, problems.failures
    [error] = [p for p in problems.files[0].problems if p.severity == "error"]
    assert (error.line, error.new) == (2, True)
    assert "not assignable to type 'number'" in error.message
    assert [(p.path, p.line) for p in definition.places] == [("lib.ts", 5)]
    assert sorted((p.path, p.line) for p in references.places) == [
        ("app.ts", 1), ("app.ts", 2), ("lib.ts", 5)]


async def test_clangd_sees_the_pending_edits(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "compile_flags.txt").write_text("-std=c11\n")
    (root / "lib.h").write_text("int twice(int x);\n")
    (root / "main.c").write_text('#include "lib.h"\nint main(void) { return twice(2); }\n')
    ws = Workspace([root])
    main = ws.resolve("main.c")
    ws.stage_write(main, '#include "lib.h"\nint main(void) { return twice("2"); }\n')
    pool = _pool("clangd", clangd())
    try:
        problems = await pool.diagnostics(ws, [main.abs])
        definition = await pool.definition(ws, main.abs, 2, 25)
    finally:
        await pool.aclose()
    assert problems.failures == {}, problems.failures
    assert any(p.new and p.line == 2 for p in problems.files[0].problems)
    assert [(p.path, p.line) for p in definition.places] == [("lib.h", 1)]
