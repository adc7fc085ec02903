"""Real servers started and stopped by the tests of this folder, each on a free local port.

``chroma run`` (the venv's Chroma server), ``langgraph dev`` (LangGraph's API server on the repo's
``langgraph.json``), llama-cpp-python's OpenAI-compatible server and a PostgreSQL cluster of our own
(``initdb``/``pg_ctl``). Every fixture waits until its server answers, and stops it at the end.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(
    command: list[str], ready: Callable[[], bool], *, name: str, timeout: float = 120, **popen
) -> Iterator[subprocess.Popen]:
    """Start ``command``, wait until ``ready()`` (or fail with the server's own output), stop it at the end."""
    log = open(popen.pop("log"), "w+") if "log" in popen else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **popen)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if ready():
                    break
            except (httpx.TransportError, OSError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                said = ""
                if log is not subprocess.DEVNULL:
                    log.seek(0)
                    said = log.read()[-3000:]
                raise RuntimeError(
                    f"{name} did not start ({'exited' if proc.poll() is not None else 'timeout'}): {said}"
                )
            time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not subprocess.DEVNULL:
            log.close()


def answers(url: str) -> bool:
    return httpx.get(url, timeout=2).status_code == 200


# --------------------------------------------------------------------------- Chroma
@contextmanager
def chroma(folder: Path, port: int | None = None) -> Iterator[str]:
    """``chroma run`` on ``folder`` (the venv's command): its URL, e.g. http://127.0.0.1:PORT, while it runs."""
    command = shutil.which("chroma", path=str(BIN))
    if command is None:
        pytest.skip("the chroma command is not installed (pip install chromadb)")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    folder.mkdir(parents=True, exist_ok=True)
    with server([command, "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
                lambda: answers(f"{url}/api/v2/heartbeat"), name="chroma run", timeout=60, log=folder / "log.txt"):
        yield url


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory) -> Iterator[str]:
    with chroma(tmp_path_factory.mktemp("chroma-server")) as url:
        yield url


# ------------------------------------------------------------- llama-cpp-python's OpenAI-compatible server
HAS_LLAMA_SERVER = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "fastapi", "sse_starlette"))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[str]:
    """llama-cpp-python's server on the bundled GGUF: its base URL (``http://127.0.0.1:PORT/v1``)."""
    if not HAS_LLAMA_SERVER:
        pytest.skip("llama-cpp-python[server] is not installed (pip install 'causalrag[llamacpp]')")
    from causalrag.tools.servers import llama_server_command

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    # generation only: --logits_all (echo scoring, tests/tools/test_backends.py) makes long prompts ~10x slower
    command = llama_server_command(port=port, n_ctx=2048, n_threads=2, verbose=False, logits_all=False)
    log = tmp_path_factory.mktemp("llama-server") / "log.txt"
    with server(command, lambda: answers(f"{url}/models"), name="llama_cpp.server", log=log):
        yield url


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any CAUSALRAG_* setting, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CAUSALRAG_")}, **extra}


# --------------------------------------------------------------------------- an auth proxy in front of Chroma
TOKEN = "s3cret-token"


@contextmanager
def auth_proxy(upstream: str, token: str = TOKEN) -> Iterator[tuple[str, list[str]]]:
    """A reverse proxy that forwards to ``upstream`` only requests carrying ``Authorization: Bearer token``
    (answering 401 otherwise), as one puts in front of ``chroma run``, whose open-source server has no auth.
    Yields its URL and the list of paths it forwarded."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != f"Bearer {token}":
                self._reply(401, b'{"error":"Unauthorized","message":"a bearer token is required"}', "application/json")
                return
            seen.append(self.path)
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in ("host", "authorization", "content-length", "connection")
            }
            reply = httpx.request(self.command, upstream + self.path, content=body, headers=headers, timeout=60)
            self._reply(reply.status_code, reply.content, reply.headers.get("content-type", "application/json"))

        def _reply(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        def log_message(self, *args) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}", seen
    finally:
        proxy.shutdown()
        proxy.server_close()


# --------------------------------------------------------------------------- PostgreSQL
SBIN = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where a root login shell finds system tools: ``env -i PATH=/usr/local/bin:/usr/bin:/bin`` drops the sbin folders."""
POSTGRES_HINT = "apt-get install -y postgresql"


def system_tool(name: str, *folders: Path) -> str | None:
    """``name``'s full path as a root shell finds it: ``folders`` first, then PATH, then the sbin folders."""
    search = [*map(str, folders), *os.environ.get("PATH", "").split(os.pathsep), *SBIN]
    return shutil.which(name, path=os.pathsep.join(f for f in search if f))


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's ``initdb`` and ``pg_ctl``: the newest ``/usr/lib/postgresql/*/bin`` (Debian's
    ``postgresql`` package), else wherever a root shell finds ``initdb`` (other distributions, Homebrew)."""
    versions = Path("/usr/lib/postgresql").glob("*/bin")
    debian = sorted(versions, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    initdb = system_tool("initdb", *reversed(debian))
    folder = Path(initdb).resolve().parent if initdb else None  # a symlink's target folder holds pg_ctl and postgres
    return folder if folder and (folder / "pg_ctl").exists() else None


def as_user(user: str) -> list[str]:
    """The command prefix that runs a command as ``user`` from root: runuser, else su (found as a root shell would)."""
    if runuser := system_tool("runuser"):
        return [runuser, "-u", user, "--"]
    if su := system_tool("su"):
        return [su, "-s", "/bin/sh", "-c", 'exec "$0" "$@"', "--", user]  # "--": the command's options are not su's
    pytest.skip(f"running as root needs runuser or su to start PostgreSQL as {user}: apt-get install -y util-linux")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL cluster of our own (initdb in a temporary folder, pg_ctl on a free port, trust auth
    on 127.0.0.1 only), stopped and deleted at the end: its URL, postgresql://causalrag@127.0.0.1:PORT/postgres."""
    import pwd
    import tempfile

    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip(f"PostgreSQL's server programs (initdb, pg_ctl) are not installed: {POSTGRES_HINT}")
    pytest.importorskip("langgraph.checkpoint.postgres", reason='pip install "causalrag[postgres]"')
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to the postgres user
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip(f"running as root without a postgres user to own the cluster ({POSTGRES_HINT} makes one)")
        run_as = as_user("postgres")
    folder = Path(tempfile.mkdtemp(prefix="causalrag-postgres-"))
    if run_as:
        os.chown(folder, user.pw_uid, user.pw_gid)
    data, port = folder / "data", free_port()
    quiet = dict(check=True, capture_output=True, text=True, timeout=120)
    subprocess.run(
        [
            *run_as,
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "causalrag",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        **quiet,
    )
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off"
    )
    subprocess.run(
        [
            *run_as,
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log.txt"),
            "-w",
            "-t",
            "60",
            "start",
        ],
        **quiet,
    )
    try:
        yield f"postgresql://causalrag@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop"],
            capture_output=True,
            timeout=90,
        )
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- LangGraph's API server
@contextmanager
def langgraph_dev(
    folder: Path, env: dict[str, str], *, checkpointer: bool = False, graphs: dict[str, str] | None = None
) -> Iterator[str]:
    """``langgraph dev`` serving the graphs of the repo's ``langgraph.json`` (copied into ``folder`` with
    absolute paths, so the server's working files stay out of the repo), plus ``graphs`` (name → ``PATH:attr``
    relative to the repo); with ``checkpointer``, its checkpoints go to ``causalrag.checkpoints:server_checkpointer``
    (PostgreSQL). Yields the server URL."""
    import json

    command = shutil.which("langgraph", path=str(BIN))
    if command is None or importlib.util.find_spec("langgraph_runtime_inmem") is None:
        pytest.skip('langgraph-cli[inmem] is not installed (pip install "causalrag[dev]")')
    spec = json.loads((ROOT / "langgraph.json").read_text())
    spec["dependencies"] = [str(ROOT) if d == "." else d for d in spec["dependencies"]]
    spec["graphs"] = {
        name: str(ROOT / target.removeprefix("./")) for name, target in {**spec["graphs"], **(graphs or {})}.items()
    }
    if checkpointer:
        spec["checkpointer"] = {"path": f"{ROOT / 'causalrag' / 'checkpoints.py'}:server_checkpointer"}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "langgraph.json").write_text(json.dumps(spec, indent=2))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # --allow-blocking: the graphs' nodes are sync (LangGraph runs them in worker threads)
    argv = [command, "dev", "--config", str(folder / "langgraph.json"), "--host", "127.0.0.1", "--port", str(port),
            "--no-browser", "--no-reload", "--allow-blocking"]
    environ = clean_env(LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1", PYTHONPATH=str(ROOT), **env)
    with server(
        argv,
        lambda: answers(f"{url}/ok"),
        name="langgraph dev",
        timeout=90,
        cwd=folder,
        env=environ,
        log=folder / "log.txt",
    ):
        yield url
