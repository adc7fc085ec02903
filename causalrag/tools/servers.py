"""llama-cpp-python's OpenAI-compatible server on a GGUF model, set up for the ``openai`` backend.

Started by ``python -m causalrag.tools.servers [--port 8000] [--host 127.0.0.1] [--model FILE.gguf]``
(the bundled Gemma 3 270M by default; further ``--NAME VALUE`` options go to ``llama_cpp.server``), or
as the command list :func:`llama_server_command` returns, which the tests and benchmarks run. Its defaults
are what the graphs need: ``--logits_all true`` (prompt log-probabilities, for scoring) and
``--interrupt_requests false`` (by default a new request cuts a running stream short, and the graphs send
several at once). Needs ``pip install "causalrag[llamacpp]"``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from causalrag.tools.backends.base import bundled_gguf

MODULES = ("llama_cpp", "fastapi", "sse_starlette", "uvicorn")
"""What the server imports (the llamacpp extra: ``llama-cpp-python[server]``)."""

DEFAULTS: dict[str, object] = {"n_ctx": 4096, "logits_all": True, "interrupt_requests": False}
"""``llama_cpp.server`` settings the command sets unless told otherwise (its own default is 2048 tokens)."""


def llama_server_command(
    model_path: str | Path | None = None, port: int = 8000, *, host: str = "127.0.0.1", **flags: object
) -> list[str]:
    """The argv that starts ``llama_cpp.server`` on ``model_path`` (default: the bundled GGUF) at ``host:port``.

    ``flags`` are the server's settings by name (``n_threads=2``, ``verbose=False``, ``logits_all=False`` for
    generation only, which reads long prompts several times faster) over :data:`DEFAULTS`; booleans are
    written ``true``/``false``. The interpreter is this one (``sys.executable``), so the venv need not be on PATH.
    """
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path or bundled_gguf())]
    command += ["--host", host, "--port", str(port)]
    for name, value in {**DEFAULTS, **flags}.items():
        command += [f"--{name}", str(value).lower() if isinstance(value, bool) else str(value)]
    return command


def main(argv: list[str] | None = None) -> None:
    """Replace this process with the server (``python -m causalrag.tools.servers --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m causalrag.tools.servers",
        description="Serve a GGUF model through llama-cpp-python's OpenAI-compatible server at http://HOST:PORT/v1. "
        "Other --NAME VALUE options go to llama_cpp.server (see python -m llama_cpp.server --help).",
    )
    parser.add_argument("--model", help="GGUF file (default: the bundled Gemma 3 270M).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    known, rest = parser.parse_known_args(argv)
    if known.model and not Path(known.model).is_file():
        parser.exit(1, f"{parser.prog}: no model file at {known.model}: pass a .gguf file with --model.\n")
    missing = [m for m in MODULES if importlib.util.find_spec(m) is None]
    if missing:
        parser.exit(1, f"{parser.prog}: {', '.join(missing)} not installed: run pip install 'causalrag[llamacpp]'.\n")
    command = llama_server_command(known.model, known.port, host=known.host) + rest  # the last of a flag wins
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
