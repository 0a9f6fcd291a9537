""":AgentModel in real Neovim (issue 29): the list opens at once with the configured models,
marked "not checked yet", while the backends are asked (``agentls/models``: up to about a
second per backend); their answer is what the next :AgentModel shows. vim.ui.select cannot
change its list once open, so nothing waits for the probe.

One backend is the scripted model server; the other accepts connections and never answers,
so its probe can only end by the probe's own timeout: a list that waited for it would say
"unreachable", not "not checked yet".
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentls.devtools.replay.command import ReplayServer
from tests.lsp.conftest import options_for
from tests.nvim.conftest import Editor, isolate, start_editor

# The stub in conftest picks by label; this one also keeps every list it was shown.
RECORD_LABELS = """
local pick = vim.ui.select
_G.agentls_test_lists = {}
vim.ui.select = function(items, opts, on_choice)
  local labels = {}
  for _, item in ipairs(items) do
    table.insert(labels, opts.format_item and opts.format_item(item) or tostring(item))
  end
  table.insert(_G.agentls_test_lists, labels)
  return pick(items, opts, on_choice)
end
"""


@contextlib.contextmanager
def silent_backend() -> Iterator[str]:
    """A base URL whose server takes the connection and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


@pytest.fixture
def editor(tmp_path: Path, project: Path, model: ReplayServer,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    isolate(monkeypatch, tmp_path, project)
    with silent_backend() as silent:
        settings: dict[str, Any] = options_for(model)
        settings["backends"]["silent"] = {"base_url": silent, "model": "silent-model",
                                          "api_key_env": None}
        ed = start_editor(tmp_path, project, settings)
        try:
            ed.lua(RECORD_LABELS)
            yield ed
        finally:
            with contextlib.suppress(Exception):
                ed.nvim.command("qa!")
            ed.nvim.close()


def lists(editor: Editor) -> list[list[str]]:
    """Each list shown, the rows of this test's two backends (the built-in ones are there too)."""
    return [[label for label in labels if "(scripted" in label or "(silent" in label]
            for labels in editor.lua("return _G.agentls_test_lists")]


def test_agentmodel_opens_at_once_and_the_next_one_shows_what_the_backends_said(
        editor: Editor, model: ReplayServer) -> None:
    model.load({"models": ["scripted-model", "scripted-model-2"], "steps": []})
    editor.open("src/calc.py")
    editor.lua("_G.agentls_test_choice = nil")  # the person looks, and closes the list

    editor.nvim.command("AgentModel")
    editor.wait("the model list", lambda: len(lists(editor)) == 1)
    # The active backend's models first, then the others by name.
    assert editor.lua("return _G.agentls_test_lists")[0][0] == \
        "scripted-model  (scripted, not checked yet)"
    assert lists(editor)[0] == ["scripted-model  (scripted, not checked yet)",
                                "silent-model  (silent, not checked yet)"]
    assert editor.lua("return require('agentls.chat').probed_models()") is None

    # The probe: the scripted server lists its models; the silent one times out.
    probed = editor.wait("the backends' answer", lambda: editor.lua(
        "return require('agentls.chat').probed_models()"))
    status = {b["name"]: b["status"] for b in probed}
    assert (status["scripted"], status["silent"]) == ("available", "unreachable")

    editor.lua("_G.agentls_test_choice = 'scripted-model-2'")
    editor.nvim.command("AgentModel")
    editor.wait("the second model list", lambda: len(lists(editor)) == 2)
    assert lists(editor)[1] == ["scripted-model  (scripted)", "scripted-model-2  (scripted)",
                                "silent-model  (silent, unreachable)"]
    # No session yet: the pick is kept for the chat's first turn.
    assert editor.lua("return require('agentls.chat').state().pending.model") == \
        "scripted-model-2"
