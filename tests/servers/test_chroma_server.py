"""The store on a real Chroma server (``chroma run``), reached through ``CAUSALRAG_CHROMA_URL`` with a
tenant, a database and an auth header (an auth proxy in front: the open-source server has none).

Proves: ingest, ask and eval write to and read from that server, in that tenant and database only,
with the token on every request; a server that is down, stops, refuses the token or lacks the tenant
or database is one sentence (a CausalRAGError), and a stopped server loses nothing.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import chromadb
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from typer.testing import CliRunner

from causalrag.cli import app
from causalrag.errors import CausalRAGError, StoreUnreachableError
from causalrag.tools.store import Passage, Store, StoreRefusedError, StoreScopeError, _client
from tests.servers.conftest import TOKEN, auth_proxy, chroma, clean_env, free_port

TENANT, DATABASE = "team-rag", "staging"
BACKEND = "llamacpp" if importlib.util.find_spec("llama_cpp") else "transformers"  # llama.cpp loads in ~1 s

ZOO = {
    "okapi.md": "The okapi lives in the rainforests of the Democratic Republic of the Congo. It eats leaves and fruit.",
    "quokka.md": "The quokka is a small wallaby found on Rottnest Island near Perth in Western Australia.",
    "axolotl.md": (
        "The axolotl is a salamander native to Lake Xochimilco in Mexico City. It keeps its gills as an adult."
    ),
}


def admin(url: str):
    host, port = url.removeprefix("http://").split(":")
    return chromadb.AdminClient(
        chromadb.Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI", chroma_server_host=host, chroma_server_http_port=int(port)
        )
    )


@pytest.fixture(scope="module")
def team_database(chroma_server):
    """Tenant TENANT with database DATABASE on the session's server (Chroma makes neither on demand)."""
    client = admin(chroma_server)
    client.create_tenant(TENANT)
    client.create_database(DATABASE, tenant=TENANT)
    return chroma_server


@pytest.fixture
def behind_proxy(team_database, monkeypatch):
    with auth_proxy(team_database) as (url, seen):
        monkeypatch.setenv("CAUSALRAG_CHROMA_URL", url)
        monkeypatch.setenv("CAUSALRAG_CHROMA_TENANT", TENANT)
        monkeypatch.setenv("CAUSALRAG_CHROMA_DATABASE", DATABASE)
        monkeypatch.setenv("CAUSALRAG_CHROMA_TOKEN", TOKEN)
        yield url, seen


def one_sentence(text: str) -> bool:
    return "\n" not in text and text.endswith(".") and not re.search(r"[.!?]\s+[A-Z]", text)


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.mark.slow
def test_ingest_ask_and_eval_through_the_server(behind_proxy, team_database, tmp_path):
    url, seen = behind_proxy
    docs = tmp_path / "zoo"
    docs.mkdir()
    for name, text in ZOO.items():
        (docs / name).write_text(text)

    said = invoke("ingest", str(docs), "--collection", "zoo-animals")
    assert "3 new" in said and "now holds 3 passages" in said

    # the passages sit in the team's tenant and database on the real server, not in the default ones
    host, port = team_database.removeprefix("http://").split(":")
    team = chromadb.HttpClient(host=host, port=int(port), tenant=TENANT, database=DATABASE)
    assert team.get_collection("zoo-animals").count() == 3
    assert "zoo-animals" not in [c.name for c in chromadb.HttpClient(host=host, port=int(port)).list_collections()]

    answer = json.loads(
        invoke(
            "ask",
            "Which island is the quokka found on?",
            "--collection",
            "zoo-animals",
            "--backend",
            BACKEND,
            "--k",
            "1",
            "--json",
            "-p",
            "max_new_tokens=8",
        )
    )
    assert [d["title"] for d in answer["documents"]] == ["quokka"]
    assert answer["answer"].strip()
    bm25 = json.loads(invoke("ask", "axolotl salamander gills", "--collection", "zoo-animals", "--backend", BACKEND,
                             "--retrieval", "bm25", "--k", "1", "--json", "-p", "max_new_tokens=4"))
    assert [d["title"] for d in bm25["documents"]] == ["axolotl"]

    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "Where does the okapi live?", "golden_answers": ["Congo"]}) + "\n"
    )
    out = tmp_path / "run"
    invoke(
        "eval",
        "--dataset",
        f"jsonl:{questions}",
        "--methods",
        "standard_rag",
        "--setting",
        "open",
        "--collection",
        "zoo-animals",
        "--backend",
        BACKEND,
        "-p",
        "k=1",
        "-p",
        "max_new_tokens=8",
        "--out",
        str(out),
    )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["method"] == "standard_rag"
    assert "okapi" in json.dumps(rows[0]).lower()  # the retrieved passage came from the server
    assert any("/collections/" in path for path in seen)  # every call went through the proxy with the token


def test_bad_server_settings_are_one_sentence(team_database, monkeypatch, tmp_path):
    """No traceback for a server that is not there, refuses us, or lacks the tenant or database."""
    with auth_proxy(team_database) as (url, _):
        cases = [
            (
                dict(CAUSALRAG_CHROMA_URL=f"http://127.0.0.1:{free_port()}"),
                StoreUnreachableError,
                "nothing answers there",
            ),
            (
                dict(CAUSALRAG_CHROMA_URL=url),
                StoreRefusedError,
                r"refused the request \(HTTP 401\).*CAUSALRAG_CHROMA_TOKEN",
            ),
            (dict(CAUSALRAG_CHROMA_URL=url, CAUSALRAG_CHROMA_TOKEN="wrong"), StoreRefusedError, "HTTP 401"),
            (
                dict(CAUSALRAG_CHROMA_URL=url, CAUSALRAG_CHROMA_HEADERS='{"Authorization": "Bearer wrong"}'),
                StoreRefusedError,
                "HTTP 401",
            ),
            (
                dict(CAUSALRAG_CHROMA_URL=url, CAUSALRAG_CHROMA_TOKEN=TOKEN, CAUSALRAG_CHROMA_TENANT="nosuch-team"),
                StoreScopeError,
                "has no tenant 'nosuch-team'.*CAUSALRAG_CHROMA_TENANT",
            ),
            (
                dict(
                    CAUSALRAG_CHROMA_URL=url,
                    CAUSALRAG_CHROMA_TOKEN=TOKEN,
                    CAUSALRAG_CHROMA_TENANT=TENANT,
                    CAUSALRAG_CHROMA_DATABASE="prod",
                ),
                StoreScopeError,
                "has no database 'prod' in tenant 'team-rag'.*CAUSALRAG_CHROMA_DATABASE",
            ),
            (
                dict(CAUSALRAG_CHROMA_URL=url, CAUSALRAG_CHROMA_HEADERS="x-chroma-token: abc"),
                CausalRAGError,
                "not a JSON object",
            ),
        ]
        for env, error, says in cases:
            for name in ("URL", "TENANT", "DATABASE", "TOKEN", "HEADERS"):
                monkeypatch.delenv(f"CAUSALRAG_CHROMA_{name}", raising=False)
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            with pytest.raises(error, match=says) as caught:
                Store("zoo-animals").count()
            assert isinstance(caught.value, CausalRAGError) and one_sentence(str(caught.value)), str(caught.value)
        # the right token, tenant and database: the same call works through the proxy
        for name, value in dict(
            CAUSALRAG_CHROMA_HEADERS=json.dumps({"Authorization": f"Bearer {TOKEN}"}),
            CAUSALRAG_CHROMA_TENANT=TENANT,
            CAUSALRAG_CHROMA_DATABASE=DATABASE,
        ).items():
            monkeypatch.setenv(name, value)
        store = Store("settings-ok", embeddings=DeterministicFakeEmbedding(size=16))
        store.add([Passage("okapi", ZOO["okapi.md"])])
        assert store.count() == 1

        # as a user sees it: the command line prints one line and exits 1
        env = clean_env(CAUSALRAG_CHROMA_URL=url, CAUSALRAG_CHROMA_TOKEN="wrong", CAUSALRAG_HOME=str(tmp_path))
        result = subprocess.run([sys.executable, "-m", "causalrag.cli", "ask", "Who?", "--collection", "zoo-animals"],
                                capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
        assert "refused the request (HTTP 401)" in " ".join(result.stderr.split()), result.stderr


def test_a_server_that_stops_is_one_sentence_and_loses_nothing(tmp_path, monkeypatch):
    """Passages written before the server stopped are all there when it comes back on the same folder."""
    port = free_port()
    fake = DeterministicFakeEmbedding(size=16)
    passages = [Passage(name, text) for name, text in ZOO.items()]
    with chroma(tmp_path, port) as url:
        store = Store("kept", url=url, embeddings=fake)
        assert store.add(passages) == 3
    with pytest.raises(StoreUnreachableError, match="it stopped answering"):
        store.count()
    _client.cache_clear()  # a new process would connect afresh
    with chroma(tmp_path, port):
        again = Store("kept", url=url, embeddings=fake)
        assert again.count() == 3
        assert {d.metadata["title"] for d in again.retrieve("quokka island wallaby", k=3, mode="bm25")} == set(ZOO)
