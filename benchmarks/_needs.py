"""What a benchmark needs beyond ``make demo``'s install (``pip install -e .``): a script calls :func:`need`
before importing it; when it is missing, the script prints one ``skipped:`` line and exits 0, and
``make bench`` (``benchmarks/_run_all.py``) counts it as skipped, not failed."""

from __future__ import annotations

import importlib.util

SKIPPED = "skipped:"


def need(extra: str, *modules: str) -> None:
    """Exit 0 with ``skipped: needs the EXTRA extra ...`` unless every module in ``modules`` is importable."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(f"{SKIPPED} needs the {extra} extra ({', '.join(missing)} not installed; make test installs it, "
              f"or pip install 'causalrag[{extra}]')", flush=True)
        raise SystemExit(0)


LLAMA_SERVER = ("llama_cpp", "fastapi", "sse_starlette", "uvicorn")
"""llama-cpp-python's OpenAI-compatible server (the llamacpp extra: llama-cpp-python[server])."""
