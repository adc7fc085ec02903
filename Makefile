# Two commands for a fresh machine:  make demo   |   make test
# torch goes in first (CPU wheel by default; `make demo TORCH=torch` for a CUDA build) so that
# nothing else pulls a multi-GB CUDA wheel as a dependency.
PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE := 1

.PHONY: install demo test test-fast bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/causalrag demo

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(VENV)/.installed
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
