"""``make bench`` after ``make demo`` alone: a benchmark that needs an extra says so in one line and exits 0,
and ``benchmarks/_run_all.py`` ends with one summary of what ran, was skipped and failed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_hiding(script: str, hidden: list[str]) -> subprocess.CompletedProcess:
    """Run a benchmark as ``python benchmarks/SCRIPT`` would, with ``hidden`` modules not installed
    (``sys.modules[name] = None``: find_spec answers None and an import fails, as in a venv without them)."""
    code = (
        "import runpy, sys\n"
        f"for name in {hidden!r}: sys.modules[name] = None\n"
        f"sys.path.insert(0, {str(BENCHMARKS)!r}); sys.argv = [{script!r}]\n"
        f"runpy.run_path({str(BENCHMARKS / script)!r}, run_name='__main__')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("script", "hidden", "extra"), [
    ("async_openai.py", ["llama_cpp"], "llamacpp"),
    ("async_openai.py", ["httpx"], "openai"),
    ("eval_concurrency.py", ["fastapi"], "llamacpp"),
    ("floor.py", ["llama_cpp"], "llamacpp"),
    ("lexical.py", ["rank_bm25"], "dev"),
])
def test_a_benchmark_without_its_extra_is_skipped_in_one_line(script, hidden, extra):
    done = run_hiding(script, hidden)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"skipped: needs the {extra} extra ({hidden[0]} not installed; make test installs it")
    assert done.stdout.count("\n") == 1 and not done.stderr


def test_run_all_ends_with_one_summary(tmp_path):
    (tmp_path / "fine.py").write_text("print('measured 2.0x')\n")
    (tmp_path / "lacking.py").write_text("print('skipped: needs the llamacpp extra (llama_cpp not installed)')\n")
    (tmp_path / "broken.py").write_text("raise SystemExit('no server')\n")
    scripts = [str(tmp_path / n) for n in ("fine.py", "lacking.py", "broken.py")]
    done = subprocess.run([sys.executable, str(BENCHMARKS / "_run_all.py"), *scripts], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    summary = done.stdout.split("=== summary\n")[1].splitlines()
    assert summary[0] == "ran: 1" and re.fullmatch(r"  fine\.py: \d+ s", summary[1])
    assert summary[2:4] == ["skipped: 1", "  lacking.py: needs the llamacpp extra (llama_cpp not installed)"]
    assert summary[4] == "failed: 1" and re.fullmatch(r"  broken\.py: exit 1 after \d+ s: no server", summary[5])
    assert len(summary) == 6
