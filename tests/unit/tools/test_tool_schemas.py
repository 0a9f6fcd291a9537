"""The built-in tools' schemas travel as generated data (tool_schemas.py): the first request
needs no tool code. The data must be exactly what the live models give, or unused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentls.devtools import tool_schema_table
from agentls.tools import builtin, registry, tool_schemas
from agentls.tools.registry import BUILTIN, DEFAULT_TOOLS, ToolBox, ToolContext, schema_of
from agentls.workspace.fence import Workspace

PACKAGE = Path(tool_schemas.__file__).resolve().parent


def test_the_generated_table_is_current() -> None:
    expected = tool_schema_table.render(PACKAGE)
    assert (PACKAGE / "tool_schemas.py").read_text(encoding="utf-8") == expected, (
        "agentls/tools/tool_schemas.py is stale: run "
        "`python -m agentls.devtools.tool_schema_table`")
    assert registry.schema_table_is_current()


def test_every_schema_sent_equals_the_live_models_byte_for_byte(tmp_path: Path) -> None:
    assert all(tool.params == BUILTIN for tool in DEFAULT_TOOLS)
    assert set(tool_schemas.SCHEMAS) == {tool.name for tool in DEFAULT_TOOLS} == set(builtin.TOOLS)
    box = ToolBox(ToolContext(Workspace([tmp_path])))
    for sent in box.schemas():
        live = schema_of(builtin.TOOLS[sent.name][0])
        # Same keys in the same order: the request's bytes (and a provider's prompt cache)
        # do not change with where the schema came from.
        assert json.dumps(sent.parameters) == json.dumps(live), sent.name


def test_a_stale_table_is_never_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tool_schemas, "SOURCE_HASH", "0" * 64)
    monkeypatch.setattr(tool_schemas, "SCHEMAS", {t.name: {"stale": True} for t in DEFAULT_TOOLS})
    registry.schema_table_is_current.cache_clear()
    try:
        assert not registry.schema_table_is_current()
        box = ToolBox(ToolContext(Workspace([tmp_path])))
        assert all("stale" not in s.parameters for s in box.schemas())
        assert box.schemas()[0].parameters == schema_of(builtin.TOOLS["list_files"][0])
    finally:
        registry.schema_table_is_current.cache_clear()


async def test_arguments_are_still_checked_by_the_models(tmp_path: Path) -> None:
    box = ToolBox(ToolContext(Workspace([tmp_path])))
    outcome = await box.call("git_log", {"n": 0})
    assert outcome.result["error"] == "INVALID_ARGUMENTS"
    assert "n: Input should be greater than or equal to 1" in outcome.result["message"]
    assert outcome.result["schema"] == tool_schemas.SCHEMAS["git_log"]
    outcome = await box.call("read_file", {"path": "a.py", "colour": "red"})
    assert "colour: Extra inputs are not permitted" in outcome.result["message"]


def test_the_schemas_are_offered_without_importing_the_tools(tmp_path: Path) -> None:
    """Building a run's toolbox and its request's tool list imports no tool code: the file
    tools, search and the built-ins' models wait for the first call."""
    code = (
        "import sys\n"
        "from agentls.tools.registry import ToolBox, ToolContext\n"
        "from agentls.workspace.fence import Workspace\n"
        f"box = ToolBox(ToolContext(Workspace([{str(tmp_path)!r}])))\n"
        "assert len(box.schemas()) == 12\n"
        "print(sorted(m for m in ('agentls.tools.builtin', 'agentls.tools.files',\n"
        "                         'agentls.tools.search.text', 'agentls.tools.edit.matching',\n"
        "                         'agentls.tools.edit.patch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
