# AgentLS: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test demo bench lint install clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,local]'
	@touch $@

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest

demo: $(STAMP)
	$(PY) -m agentls.devtools.demo

bench: $(STAMP)
	$(PY) -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
