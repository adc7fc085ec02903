"""The llama.cpp server command: the settings llama_cpp.server reads from it; ``python -m causalrag.tools.servers``."""

from __future__ import annotations

import argparse
import sys

import pytest

from causalrag.tools import servers
from causalrag.tools.servers import llama_server_command


def read_by_llama_cpp(argv: list[str]) -> dict:
    """The settings llama_cpp.server's own command-line parser takes from ``argv`` (model and server halves)."""
    cli = pytest.importorskip("llama_cpp.server.cli")
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    read: dict = {}
    for settings in (ModelSettings, ServerSettings):
        parser = argparse.ArgumentParser()
        cli.add_args_from_model(parser, settings)
        read |= {k: v for k, v in vars(parser.parse_known_args(argv)[0]).items() if v is not None}
    return read


def test_the_command_runs_this_interpreter_with_the_graphs_defaults_and_the_callers_flags():
    argv = llama_server_command("m.gguf", 8123, n_threads=2, verbose=False, logits_all=False)
    assert argv[:3] == [sys.executable, "-m", "llama_cpp.server"]
    read = read_by_llama_cpp(argv[3:])
    assert {k: read[k] for k in ("model", "host", "port", "n_ctx", "n_threads", "verbose", "logits_all")} == {
        "model": "m.gguf",
        "host": "127.0.0.1",
        "port": 8123,
        "n_ctx": 4096,
        "n_threads": 2,
        "verbose": False,
        "logits_all": False,
    }
    assert read["interrupt_requests"] is False  # llama_cpp.server's default (True) cuts streams short
    assert read_by_llama_cpp(llama_server_command("m.gguf"))["logits_all"] is True  # scoring by default


def test_module_passes_further_options_to_the_server(monkeypatch, tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    ran: list[list[str]] = []
    monkeypatch.setattr(servers.os, "execv", lambda path, argv: ran.append(argv))
    monkeypatch.setattr(servers.importlib.util, "find_spec", lambda name: object())  # as if installed
    servers.main(["--model", str(model), "--port", "9001", "--n_ctx", "1024"])
    (argv,) = ran
    assert argv[0] == sys.executable
    assert argv[argv.index("--port") + 1] == "9001" and argv[-2:] == ["--n_ctx", "1024"]  # after the default


def test_module_without_the_server_installed_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sse_starlette", None)  # find_spec answers None, as when not installed
    monkeypatch.setattr(servers.os, "execv", lambda *_: pytest.fail("started without the server installed"))
    with pytest.raises(SystemExit) as exit_:
        servers.main([])
    assert exit_.value.code == 1
    assert "sse_starlette not installed: run pip install 'causalrag[llamacpp]'." in capsys.readouterr().err


def test_a_missing_model_file_is_one_sentence_and_exit_1(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        servers.main(["--model", str(tmp_path / "absent.gguf"), "--port", "8731"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.strip().endswith("pass a .gguf file with --model.")
