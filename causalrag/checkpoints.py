"""Persistent graph state: a SQLite checkpointer per ``CAUSALRAG_HOME``, keyed by thread id.

``causalrag ask ... --thread ID`` stores every step, ``--resume`` continues an interrupted run from
its last checkpoint, and ``causalrag history --thread ID`` lists the stored steps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from causalrag.config import settings
from causalrag.errors import CausalRAGError


def checkpoint_path() -> Path:
    return settings().home / "checkpoints.sqlite"


@contextmanager
def sqlite_checkpointer(path: str | Path | None = None) -> Iterator[SqliteSaver]:
    """A LangGraph ``SqliteSaver`` on ``path`` (default ``$CAUSALRAG_HOME/checkpoints.sqlite``)."""
    path = Path(path or checkpoint_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)  # graph nodes may run in worker threads
    try:
        yield SqliteSaver(conn)
    except sqlite3.DatabaseError as exc:  # a damaged or foreign file: say so, never overwrite it
        raise CausalRAGError(
            f"The checkpoint database {path} cannot be read ({exc}): move it away to start a new one, or run without --thread."
        ) from exc
    finally:
        conn.close()


def thread_config(thread: str, method: str | None = None) -> dict:
    """Run config for ``thread``; the method name rides in the checkpoint metadata for ``history``."""
    config: dict = {"configurable": {"thread_id": thread}}
    if method:
        config["metadata"] = {"method": method}
    return config


def thread_method(saver: SqliteSaver, thread: str) -> str:
    """The method a thread was run with (from its latest checkpoint's metadata)."""
    latest = saver.get_tuple(thread_config(thread))
    if latest is None:
        raise CausalRAGError(f"Thread {thread!r} has no stored steps: run `causalrag ask QUESTION --thread {thread}` first.")
    method = (latest.metadata or {}).get("method")
    if not method:
        raise CausalRAGError(f"Thread {thread!r} was not stored by causalrag: use another thread id.")
    return method
