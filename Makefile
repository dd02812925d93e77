# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := formats families
PACKAGES := -e kinetic-core $(PLUGINS:%=-e kinetic-plugins/%) -e ".[test]"

.PHONY: install demo test
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml kinetic-core/pyproject.toml $(PLUGINS:%=kinetic-plugins/%/pyproject.toml)
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(PACKAGES)
	touch $@

# The main job: show what the default test model holds.
demo: install
	$(VENV)/bin/kinetic info "$$($(PY) scripts/fetch_models.py qwen)"

test: install
	$(PY) -m pytest -q
