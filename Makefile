# Two commands for a fresh machine:  make demo   |   make test
# torch goes in first, so that nothing else pulls a torch build of its own as a dependency. TORCH is
# passed to pip as arguments (split at spaces): `torch==2.13.0` is whatever build pip finds first, the
# CUDA one on plain PyPI for Linux; ask for the CPU build with
#   make demo TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
# (quote a version range inside it: TORCH="'torch>=2.2'").
PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
# llama-cpp-python has no wheel on the registry: pip compiles it (4-12 min on 2 cores) once into
# WHEELS, and every later install (a fresh clone, CI) takes the cached wheel.
LLAMA  ?= llama-cpp-python==0.3.36
# It is built for this CPU (-march=native) but without ggml's AMX kernels: on an AMX machine (Sapphire
# Rapids, in a Firecracker VM that grants the tile state) they crashed the first decode of the bundled
# model (SIGSEGV in ggml_backend_amx_mul_mat, plain llama_cpp.Llama too; cause not isolated). AVX-512
# and the repacked Q4_K kernels stay. The wheels' folder is named after the build, so an earlier build is
# not reused.
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE ?= -DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'
WHEELS ?= $(HOME)/.cache/causalrag/wheels/native-no-amx
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE := 1

.PHONY: install demo test test-fast lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	mkdir -p $(WHEELS)
	ls $(WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="$(LLAMA_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/python -m pip wheel -q --no-deps --no-binary llama-cpp-python -w $(WHEELS) "$(LLAMA)"
	$(BIN)/python -m pip install -q --find-links $(WHEELS) -e ".[dev,llamacpp,openai]" "$(LLAMA)"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/causalrag demo

# ruff (pyproject.toml [tool.ruff]: docstrings and complexity on the package) on the package, tests and benchmarks, and
# mypy on the package (strict on state/, nodes/, graphs/, eval/): zero findings
lint: $(VENV)/.installed-dev
	$(BIN)/python -m ruff check causalrag tests benchmarks
	$(BIN)/python -m mypy

# the documentation site (mkdocs.yml): built strictly, so a broken link or docstring fails `make test`;
# not --quiet, so the build's warnings are there to read (it passes with none)
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

# everything: lint, the docs, every test, the slow real-model tests and the notebooks (nbmake)
test: $(VENV)/.installed-dev lint docs
	$(BIN)/python -m pytest -q

# the inner loop, a few minutes: no real-model tests, no notebooks. The path `tests` keeps nbmake (in
# pyproject's addopts) from collecting notebooks/; the marker leaves out tests/test_notebooks.py
test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m "not slow and not notebooks" tests

# every benchmark with its defaults; one that needs an extra (make test installs them) says so and is skipped
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/_run_all.py

clean:
	rm -rf $(VENV) build site *.egg-info
