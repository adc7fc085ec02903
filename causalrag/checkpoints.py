"""Persistent graph state, keyed by thread id: SQLite by default, PostgreSQL when a URL is set.

The SQLite file lives in ``CAUSALRAG_HOME``; with ``CAUSALRAG_CHECKPOINT_URL=postgresql://...``
(``langgraph-checkpoint-postgres``; ``pip install "causalrag[postgres]"``) several processes or machines
share threads.

``causalrag ask ... --thread ID`` stores every step, ``--resume`` continues an interrupted run from
its last checkpoint, and ``causalrag history --thread ID`` lists the stored steps.
:func:`server_checkpointer` is the same Postgres saver for LangGraph's API server (``langgraph.json``'s
``"checkpointer": {"path": "./causalrag/checkpoints.py:server_checkpointer"}``; docs/deploy.md).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver

from causalrag.config import settings
from causalrag.errors import CausalRAGError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def checkpoint_path() -> Path:
    """The default SQLite checkpoint file, ``$CAUSALRAG_HOME/checkpoints.sqlite``."""
    return settings().home / "checkpoints.sqlite"


@contextmanager
def checkpointer() -> Iterator[BaseCheckpointSaver[Any]]:
    """The configured saver: PostgreSQL at ``CAUSALRAG_CHECKPOINT_URL``, else SQLite in ``CAUSALRAG_HOME``."""
    url = settings().checkpoint_url
    with postgres_checkpointer(url) if url else sqlite_checkpointer() as saver:
        yield saver


@contextmanager
def sqlite_checkpointer(path: str | Path | None = None) -> Iterator[BaseCheckpointSaver[Any]]:
    """A LangGraph ``SqliteSaver`` on ``path`` (default ``$CAUSALRAG_HOME/checkpoints.sqlite``)."""
    path = Path(path or checkpoint_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)  # graph nodes may run in worker threads
    try:
        yield SqliteSaver(conn)
    except sqlite3.DatabaseError as exc:  # a damaged or foreign file: say so, never overwrite it
        raise CausalRAGError(
            f"The checkpoint database {path} cannot be read ({exc}): move it away "
            "to start a new one, or run without --thread."
        ) from exc
    finally:
        conn.close()


def _hidden(url: str) -> str:
    """``url`` with its password replaced by ***, for messages."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def _postgres_error(url: str, exc: BaseException) -> CausalRAGError:
    said = " ".join(str(exc).split())[:200] or type(exc).__name__
    return CausalRAGError(
        f"No PostgreSQL database takes checkpoints at CAUSALRAG_CHECKPOINT_URL={_hidden(url)} "
        f"({said}): start the server, fix the URL (postgresql://USER:PASSWORD@HOST:PORT/DATABASE), "
        "or unset it to keep checkpoints in SQLite."
    )


def _check_url(url: str) -> None:
    if not url.startswith(POSTGRES_SCHEMES):
        raise CausalRAGError(
            f"CAUSALRAG_CHECKPOINT_URL={_hidden(url)} is not a postgresql:// URL: write "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or unset it."
        )


def _postgres() -> tuple[Any, Any]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:
        raise CausalRAGError(
            'Checkpoints in PostgreSQL need langgraph-checkpoint-postgres: run `pip install "causalrag[postgres]"`, '
            'or unset CAUSALRAG_CHECKPOINT_URL.'
        ) from exc
    return psycopg, PostgresSaver


@contextmanager
def postgres_checkpointer(url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """A LangGraph ``PostgresSaver`` on ``url``, its tables created on first use.

    A server that is down or refuses the login is one sentence.
    """
    _check_url(url)
    psycopg, PostgresSaver = _postgres()
    from psycopg.rows import dict_row

    try:  # the saver's own settings (from_conn_string): autocommit, no prepared statements, dict rows
        conn = psycopg.Connection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, connect_timeout=10
        )
    except psycopg.Error as exc:
        raise _postgres_error(url, exc) from exc
    with conn:
        saver = PostgresSaver(conn)
        try:
            saver.setup()
        except psycopg.Error as exc:
            raise _postgres_error(url, exc) from exc
        yield saver


@asynccontextmanager
async def server_checkpointer() -> AsyncIterator[Any]:
    """An ``AsyncPostgresSaver`` on ``CAUSALRAG_CHECKPOINT_URL`` for LangGraph's API server.

    The server's custom checkpointer hook enters this once at start-up and leaves it at shutdown.
    """
    url = settings().checkpoint_url
    if not url:
        raise CausalRAGError("The server's checkpointer is PostgreSQL: set CAUSALRAG_CHECKPOINT_URL=postgresql://USER:PASSWORD@HOST:PORT/DATABASE.")
    _check_url(url)
    psycopg, _ = _postgres()
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, connect_timeout=10
        )
    except psycopg.Error as exc:
        raise _postgres_error(url, exc) from exc
    class ServerPostgresSaver(AsyncPostgresSaver):
        """An ``AsyncPostgresSaver`` that stores only the JSON values of a checkpoint's metadata.

        LangGraph's server copies every ``configurable`` value into a checkpoint's metadata, the
        context object ``build_graph`` binds among them; metadata is JSON, so such values are left out.
        """

        async def aput(
            self,
            config: RunnableConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
        ) -> RunnableConfig:
            return await super().aput(config, checkpoint, _json_only(metadata), new_versions)

    async with conn:
        saver = ServerPostgresSaver(conn)
        await saver.setup()
        yield saver


def _json_only(metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` without the values that are not JSON (objects bound in the run's config)."""
    import json

    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        kept[key] = value
    return cast(CheckpointMetadata, kept)  # the same keys, fewer of them


def thread_config(thread: str, method: str | None = None) -> RunnableConfig:
    """Run config for ``thread``; the method name rides in the checkpoint metadata for ``history``."""
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    if method:
        config["metadata"] = {"method": method}
    return config


def thread_method(saver: BaseCheckpointSaver[Any], thread: str) -> str:
    """The method a thread was run with (from its latest checkpoint's metadata)."""
    latest = saver.get_tuple(thread_config(thread))
    if latest is None:
        raise CausalRAGError(
            f"Thread {thread!r} has no stored steps: run `causalrag ask QUESTION --thread {thread}` first."
        )
    method = (latest.metadata or {}).get("method")
    if not method or not isinstance(method, str):
        raise CausalRAGError(f"Thread {thread!r} was not stored by causalrag: use another thread id.")
    return method
