# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := formats families cpu speed cuda
PACKAGES := -e kinetic-core $(PLUGINS:%=-e kinetic-plugins/%) -e ".[test]" -e llama-cpp-kinetic

.PHONY: install demo test
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml kinetic-core/pyproject.toml $(PLUGINS:%=kinetic-plugins/%/pyproject.toml) \
		llama-cpp-kinetic/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(PACKAGES)
	touch $@

# The main job: answer a prompt with the default test model (Qwen2.5-Coder 0.5B) on the CPU.
demo: install
	$(VENV)/bin/kinetic run "$$($(PY) scripts/fetch_models.py qwen)" --temp 0 -n 96 \
		"Write a Python function that checks whether a string is a palindrome."

test: install
	$(PY) -m pytest -q
