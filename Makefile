# AgentLS: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test demo bench lint install clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

install: $(STAMP)

# StyLua (npm registry) checks the Neovim plugin's Lua.
STYLUA := clients/neovim/node_modules/.bin/stylua
$(STYLUA): clients/neovim/package.json
	cd clients/neovim && npm install --no-audit --no-fund --silent
	@touch $@

lint: $(STAMP) $(STYLUA)
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy
	$(STYLUA) --check clients/neovim

test: lint
	$(VENV)/bin/pytest

demo: $(STAMP)
	$(PY) -m agentls.devtools.demo

bench: $(STAMP)
	$(PY) -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
