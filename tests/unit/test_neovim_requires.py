"""Every ``require("agentls…")`` of the Neovim plugin names one of its own Lua modules.

The plugin's modules are Lua files under clients/neovim/lua/, not the server's Python
packages: a rewrite of Python module names that reaches them (as the issue 37 move's did,
twice: ``agentls.config`` -> ``agentls.settings.config``) breaks every entry point of the
plugin, and only the Neovim tests, minutes later, would say so."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "clients" / "neovim"
REQUIRE = re.compile(r"""require\(\s*["'](agentls(?:\.[\w.]+)?)["']\s*\)""")


def test_every_require_of_the_plugin_names_a_module_it_has() -> None:
    missing = []
    files = [*PLUGIN.glob("lua/**/*.lua"), *PLUGIN.glob("plugin/**/*.lua")]
    assert files
    # the Lua the Neovim tests and the review bench send through pynvim counts too
    files += [*(REPO / "tests" / "nvim").glob("*.py"), REPO / "bench" / "bench_nvim_review.py"]
    for file in files:
        for match in REQUIRE.finditer(file.read_text(encoding="utf-8")):
            module = PLUGIN / "lua" / Path(*match.group(1).split("."))
            if not (module.with_suffix(".lua").is_file() or (module / "init.lua").is_file()):
                missing.append(f"{file.relative_to(REPO)}: require('{match.group(1)}')")
    assert not missing, "modules the plugin does not have:\n" + "\n".join(missing)
