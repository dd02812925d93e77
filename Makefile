# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PLUGINS := formats families cpu speed cuda vulkan
PACKAGES := -e kinetic-core $(PLUGINS:%=-e kinetic-plugins/%) -e ".[test]" -e llama-cpp-kinetic

.PHONY: install demo test docs vulkan-driver
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

test: install vulkan-driver
	$(PY) -m pytest -q

# The documentation site, into build/site: the generated parts of its pages (each command's --help, the llama.cpp
# flag table) written again by cog, then built strictly, as the tests build it.
docs: install
	$(VENV)/bin/cog -r $$(grep -l '\[\[\[cog' docs/*.md)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The Vulkan tests run on any Vulkan driver, Mesa's lavapipe where there is no GPU: installed here as root with apt
# where none is found; elsewhere they skip, saying why.
vulkan-driver:
	@if ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		command -v apt-get >/dev/null; then \
		apt-get install -y -q mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1; } || \
		echo "make: could not install Mesa's Vulkan driver; the Vulkan tests will skip"; fi
