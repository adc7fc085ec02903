"""Errors a person can act on: each message is one sentence that names the fix."""


class CausalRAGError(Exception):
    """Base class; the CLI prints the message (no traceback) and exits non-zero."""


class EmptyQuestionError(CausalRAGError, ValueError):
    """The question has no words in it."""

    def __init__(self) -> None:
        super().__init__("The question is empty: pass a question with some words in it.")


class UnknownMethodError(CausalRAGError, KeyError):
    """No registered method has this name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"Unknown method {name!r}: choose one of {', '.join(known)} (see `causalrag methods`).")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        message: str = self.args[0]
        return message


class UnknownParameterError(CausalRAGError, TypeError):
    """The method has no parameter of this name."""

    def __init__(self, method: str, names: list[str], known: list[str]) -> None:
        super().__init__(
            f"Method {method!r} has no parameter {', '.join(map(repr, names))}: use one of {', '.join(known)}."
        )


class CollectionNotFoundError(CausalRAGError, LookupError):
    """The named Chroma collection does not exist."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(
            f"Collection {name!r} does not exist in {where}: run `causalrag ingest PATH --collection {name}` first."
        )


class EmptyCollectionError(CausalRAGError, LookupError):
    """The collection exists but holds no passages."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Collection {name!r} holds no passages: run `causalrag ingest PATH "
            f"--collection {name}` with some text files."
        )


class ModelNotFoundError(CausalRAGError, FileNotFoundError):
    """A model (the LLM or an embedding model) could not be loaded."""

    def __init__(self, spec: str, reason: str = "") -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"Model {spec!r} could not be loaded{detail}: pass a local model folder or .gguf file with "
            "--model / CAUSALRAG_MODEL, or unset it to use the bundled Gemma 3 270M."
        )


class ScoringUnavailableError(CausalRAGError, NotImplementedError):
    """The backend cannot compute the log-probabilities a method needs."""

    def __init__(self, backend: str, what: str) -> None:
        super().__init__(
            f"The {backend} backend cannot compute {what}: use a local model (the "
            "default) or a server that returns token log-probabilities."
        )


class UnknownBackendError(CausalRAGError, ValueError):
    """No LLM backend has this name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            f"Unknown LLM backend {name!r}: choose one of {', '.join(known)} with --backend or CAUSALRAG_BACKEND."
        )


class BackendUnavailableError(CausalRAGError, ImportError):
    """The chosen LLM backend's package is not installed."""

    def __init__(self, backend: str, fix: str) -> None:
        super().__init__(f"The {backend} backend is not installed: run `{fix}` or choose another --backend.")


class ServerUnreachableError(CausalRAGError, ConnectionError):
    """No OpenAI-compatible server is set, or none answers at its URL."""

    def __init__(self, url: str | None, reason: str = "") -> None:
        detail = f" ({reason})" if reason else ""
        if url is None:
            super().__init__("The openai backend needs a server: set CAUSALRAG_OPENAI_URL to its base URL (e.g. http://127.0.0.1:8000/v1).")
            return
        super().__init__(
            f"No OpenAI-compatible server answers at {url}{detail}: start it or set CAUSALRAG_OPENAI_URL to its base "
            "URL (e.g. http://127.0.0.1:8000/v1)."
        )


class ServerRequestError(CausalRAGError, RuntimeError):
    """The OpenAI-compatible server rejected a request."""

    def __init__(self, url: str, status: int, detail: str) -> None:
        super().__init__(
            f"The OpenAI-compatible server at {url} rejected the request (HTTP {status}: {detail[:200]}): check "
            "CAUSALRAG_OPENAI_MODEL and what the server supports."
        )


def _shown(value: object, width: int = 60) -> str:
    """A value as quoted in a message: its repr, cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


class InvalidParameterError(CausalRAGError, ValueError):
    """A parameter value has the wrong type or range."""

    def __init__(self, method: str, name: str, value: object, expected: str) -> None:
        super().__init__(f"Parameter {name}={_shown(value)} of {method} is not valid: give {expected}.")


class InvalidAssignmentError(CausalRAGError, ValueError):
    """A command-line parameter is not written as ``NAME=VALUE``."""

    def __init__(self, item: str) -> None:
        super().__init__(f"{_shown(item)} is not NAME=VALUE: write a parameter as -p NAME=VALUE, e.g. -p k=3.")


class QuestionTooLongError(CausalRAGError, ValueError):
    """The question leaves the model no room for a method's prompt and answer."""

    def __init__(self, tokens: int, window: int, reserve: int) -> None:
        super().__init__(
            f"The question takes {tokens:,} tokens but the model reads at most {window:,}, "
            f"{reserve:,} of them kept for the method's prompt and answer: shorten the "
            "question, or use a model with a longer context (--model)."
        )


class StoreUnreachableError(CausalRAGError, ConnectionError):
    """No Chroma server answers at ``CAUSALRAG_CHROMA_URL``."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"No Chroma server at CAUSALRAG_CHROMA_URL={_shown(url)} ({reason}): start one with `chroma run --path "
            "DIR` and point the variable at it, e.g. http://localhost:8000, or unset it to use the embedded store."
        )


class DamagedStoreError(CausalRAGError, RuntimeError):
    """A Chroma database on disk cannot be used."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"The Chroma database {path} cannot be used ({reason}): restore it from a backup, or move it away to start "
            "an empty store (nothing was changed)."
        )
