"""The llama.cpp backend: the same :class:`~causalrag.tools.backends.base.LLM` interface on a GGUF file, fast on CPU.

The GGUF is loaded as it is (no de-quantization, no cached float32 copy). We drive llama.cpp's
low-level API through ``llama-cpp-python`` because the high-level ``Llama`` class decodes one
sequence at a time and computes logits either for the last token or for every token:

* **one cache of many sequences** — ``n_seq`` sequences share one unified KV cache. Every prompt
  or scoring row runs on its own sequence, which keeps its tokens afterwards as a cache entry; a
  new row starts from the longest prefix any cached sequence holds (the few-shot header, the
  question, an earlier call's prompt: a copy tags cache cells, it moves no data), and the least
  recently used sequences are reused first. When the cache is full, idle entries are dropped;
* **shared prefixes decoded once** — tokens that several rows of a call have at the same place
  after the same prefix become one cell tagged with all their sequences, so a header shared by 8
  prompts, or a head shared by 50 scored continuations, is decoded once in the same ``llama_decode``
  call as the parts that differ;
* **batched generation** — up to ``parallel`` rows (prompts × samples) decode together, one token
  per row per ``llama_decode`` call;
* **scoring** — ``logprob`` / ``choose`` run each continuation as a parallel sequence after its
  (shared) head, asking llama.cpp for outputs only at the positions scored (never ``logits_all``:
  the bundled model's vocabulary has 262k entries, 1 MB of logits a token); ``yes_probability``
  reads the next-token outputs after each prompt, all prompts in one batch;
* **a shortlist for scored tokens** (:mod:`causalrag.tools.shortlist`; off unless ``shortlist=True`` or
  ``CAUSALRAG_SHORTLIST=1``) — at a scored position llama.cpp stops before its output projection: a
  graph callback copies the final hidden state (``result_norm``) and ends the graph there, and the
  log-prob is projected in torch on the output matrix's rows for the shortlist and the row's own
  tokens only (read from the GGUF; for a Q8_0 matrix the hidden state is quantized as llama.cpp's dot
  product does, which reproduces its logits to ~1e-5). Generation still computes every logit;
* **a streamed reply's own log-probs** — a greedy ``stream`` keeps each token it picked with its
  log-probability (full softmax), so scoring that reply after the same prompt next (triage's confidence in
  its closed-book answer) reads them instead of decoding it again.

llama.cpp's kernels are not batch-invariant: the same tokens decoded in batches of other sizes
(a cached prefix, more continuations) move a token's log-prob by up to ~0.5 nats, and so does where
the cells sit in the cache; the quantized arithmetic differs from transformers' de-quantized float32
by a few hundredths of a nat a token on average, enough to flip a near-tie in a greedy answer now and
then (the figures: docs/performance.md, "Accuracy before and after the row-order change" and
"Backends"). Seeded sampling empties the cache first, so a seed gives the same text every time.

Sampling happens in numpy on the copied logits (greedy, or pure temperature sampling with
``top_p = 1`` and no top-k, as the transformers backend does), seeded by ``seed``.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from causalrag.errors import BackendUnavailableError, ModelNotFoundError
from causalrag.tools.backends.base import (
    NO_WORDS,
    YES_WORDS,
    Judge,
    Reduce,
    bundled_gguf,
    reduce_logprobs,
    regroup,
    truncate_at_stop,
)
from causalrag.tools.coalesce import Coalescer
from causalrag.tools.shortlist import (
    ENV,
    SIZE,
    Shortlist,
    derivation_rows,
    derive,
    quantize_q8_0,
    ranking,
    shortlist_wanted,
)
from causalrag.tools.usage import Usage, record

Entry = tuple[int, int, Sequence[int], bool]
"""One token of a ``llama_decode`` batch: (token id, position, the sequences its cell serves, wants logits)."""


log = logging.getLogger(__name__)

# ggml's levels (ggml.h): llama-cpp-python 0.3.36 maps them one step off, so llama.cpp's warnings
# reached stderr as errors — e.g. "using full-size SWA cache", a setting we choose on purpose.
_GGML_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}
_GGML_CONT = 5
_last_level = logging.DEBUG


def route_ggml_log(level: int, text: bytes, _user_data: object = None) -> None:
    """Route llama.cpp's log lines to this module's logger: errors as errors, the rest below WARNING.

    A normal load then prints nothing; ``logging.getLogger("causalrag.tools.backends.llamacpp")`` shows
    llama.cpp's warnings and chatter.
    """
    global _last_level
    _last_level = _last_level if level == _GGML_CONT else _GGML_LEVELS.get(level, logging.DEBUG)
    message = text.decode("utf-8", errors="replace").rstrip()
    if message:
        log.log(_last_level, "llama.cpp: %s", message)


def available_threads() -> int:
    """``OMP_NUM_THREADS`` when set (users limit threads that way), else the cores this process may use."""
    return int(os.environ.get("OMP_NUM_THREADS") or 0) or len(os.sched_getaffinity(0))


def gguf_file(spec: str | None) -> Path:
    """The GGUF file for ``--model`` / ``CAUSALRAG_MODEL`` (the bundled one when unset)."""
    if spec is None:
        return bundled_gguf()
    path = Path(spec).expanduser()
    if path.suffix != ".gguf":
        raise ModelNotFoundError(
            spec, "the llamacpp backend loads .gguf files; use --backend transformers for folders and hub ids"
        )
    if not path.is_file():
        raise ModelNotFoundError(spec, "no such file")
    return path


EXACT_BLOCK = 64
"""Tokens an exact prompt is decoded in per call, at fixed positions from 0: a block's cells are then
computed the same way whatever ran before, and whole blocks an earlier exact prompt shared (the header)
serve again (:meth:`LlamaCppLLM._fill_exact`)."""

EXACT_SNAPSHOTS = 4
"""Exact prompts of this many kinds (by their first block: standard RAG's reading, the closed-book answer, ...)
keep a copy of their cells in host memory, so a method that alternates exact prompts of two kinds reuses
each kind's header blocks instead of decoding them again (:meth:`LlamaCppLLM._fill_exact`)."""


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix (slice comparisons run in C; a binary search finds the end)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def log_normalizer(logits: np.ndarray) -> float:
    """Log Σ exp(logits): subtracted from a logit it gives that token's log-probability (float32 exps, float64 sum)."""
    top = float(logits.max())
    return top + float(np.log(np.exp(logits - top).sum(dtype=np.float64)))


def streamed_logprobs(
    streamed: tuple[list[int], list[tuple[int, float]]] | None, head: list[int], cont: list[int]
) -> list[float] | None:
    """The log-probs of ``cont`` after ``head`` if the ``streamed`` reply (prompt, picked tokens) starts with it."""
    if streamed is None or streamed[0] != head:
        return None
    replied = streamed[1][: len(cont)]
    return [lp for _, lp in replied] if [t for t, _ in replied] == cont else None


_callback = None  # the C callback must outlive every model


def _ggml_log_callback(llama_cpp: ModuleType) -> Any:
    """The C log callback for ``llama_log_set`` (made once: it must outlive every model)."""
    global _callback
    if _callback is None:
        _callback = llama_cpp.llama_log_callback(route_ggml_log)
    return _callback


class LlamaCppLLM(Judge):
    """A GGUF model run by llama.cpp behind the :class:`~causalrag.tools.backends.base.LLM` interface.

    ``n_ctx`` is the unified KV cache shared by all sequences (rows are grouped so a round fits),
    ``n_seq`` the sequences of the cache (a round uses at most half of them, so the rest can serve as
    cached prefixes), ``parallel`` the rows generated together, ``max_outputs`` the logit rows one
    decode call may return (bounds memory: 1 MB each here). ``shortlist`` (default: ``CAUSALRAG_SHORTLIST``,
    off) scores tokens with the normalizer over a shortlist (:mod:`causalrag.tools.shortlist`); off, every
    scored token gets its full softmax. On, a graph callback runs for every node of every decode (its cost:
    docs/performance.md, "Scored tokens over a shortlist").
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        parallel: int = 8,
        n_seq: int = 32,
        n_batch: int = 512,
        max_outputs: int = 64,
        shortlist: bool | None = None,
    ) -> None:
        try:
            import llama_cpp
            from llama_cpp import _internals
        except ImportError as exc:
            raise BackendUnavailableError("llamacpp", "pip install 'causalrag[llamacpp]'") from exc
        path = gguf_file(model)
        llama_cpp.llama_log_set(_ggml_log_callback(llama_cpp), ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        self._lib = llama_cpp
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = 999  # a GPU build offloads every layer; the CPU build ignores it
        try:
            self._model = _internals.LlamaModel(path_model=str(path), params=model_params, verbose=False)
        except ValueError as exc:
            raise ModelNotFoundError(str(model or path), "llama.cpp cannot read it") from exc
        self.n_threads = n_threads or available_threads()
        params = llama_cpp.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, n_batch, n_batch
        params.n_seq_max, params.kv_unified = n_seq, True  # one cache: sequences share prefix cells
        params.n_outputs_max = params.n_outputs_max_per_seq = (
            max_outputs  # logits buffer: max_outputs rows, not n_batch
        )
        params.swa_full = True  # sliding-window layers keep every cell, so a cached prefix can be truncated
        params.n_threads = params.n_threads_batch = self.n_threads
        params.no_perf = True
        wants_shortlist = shortlist_wanted(shortlist)
        self._captured: list[np.ndarray] | None = None  # final hidden states of the decode running now, when asked for
        if wants_shortlist:
            from llama_cpp._ggml import libggml

            self._ggml = libggml
            pointer, size = ctypes.c_void_p, ctypes.c_size_t
            libggml.ggml_get_name.restype, libggml.ggml_nelements.restype = ctypes.c_char_p, ctypes.c_int64
            libggml.ggml_backend_tensor_get.restype = None
            libggml.ggml_get_name.argtypes = libggml.ggml_nelements.argtypes = [pointer]
            libggml.ggml_backend_tensor_get.argtypes = [pointer, pointer, size, size]
            self._observer = llama_cpp.ggml_backend_sched_eval_callback(self._observe)  # kept alive with the context
            params.cb_eval = self._observer
        self._ctx = _internals.LlamaContext(model=self._model, params=params, verbose=False)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        # a cell may serve every sequence
        self._batch = _internals.LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=n_seq, verbose=False)
        self.n_ctx, self.n_batch, self.n_seq, self.max_outputs = n_ctx, n_batch, n_seq, max_outputs
        self.parallel = max(1, min(parallel, n_seq // 2))  # half the sequences stay free for the cache
        self.n_vocab = self._model.n_vocab()
        self.name = path.stem if model is None else str(model)
        self.path, self._bundled = path, model is None
        template = self._model.metadata().get("tokenizer.chat_template")
        self.has_chat_template = bool(template)
        self._template = template
        self.usage = Usage()
        self._lock = threading.RLock()  # one context, many graph threads
        self._coalesced = Coalescer(self._generate_batched)
        self._held: list[list[int]] = [[] for _ in range(n_seq)]  # tokens each sequence's cells hold
        self._used = [0] * n_seq  # when each sequence last served a call (least recently used is reused first)
        self._exact: tuple[int, list[int]] | None = None  # the sequence whose first cells are exact blocks; tokens
        # recent exact prompts' cells copied to host memory, by their first block, least recently used first
        self._n_swa = llama_cpp.llama_model_n_swa(self._model.model)  # sliding-window attention span, 0: none
        self._snapshots: OrderedDict[tuple[int, ...], tuple[list[int], bytes]] = OrderedDict()
        self._streamed: tuple[list[int], list[tuple[int, float]]] | None = None  # last stream: prompt, (token, log p)
        self._clock = 0
        self._piece_buffer = ctypes.create_string_buffer(256)
        self._yes_ids = self._single_token_ids(YES_WORDS)
        self._no_ids = self._single_token_ids(NO_WORDS)
        self.shortlist = self._load_shortlist() if wants_shortlist else None

    @property
    def context_window(self) -> int:
        """The KV cache's tokens (``n_ctx``): one prompt plus its reply must fit in it."""
        return self.n_ctx

    # ---- the shortlist's hidden states
    def _observe(self, tensor: int, ask: bool, _data: int) -> bool:
        """llama.cpp's graph callback: capture the final hidden states when a decode asks for them.

        While a decode asks for hidden states, it copies ``result_norm`` (the final hidden state of every
        output row) and ends the graph there, before the output projection.
        """
        if self._captured is None:
            return False
        if ask:
            name: bytes | None = self._ggml.ggml_get_name(tensor)
            return name == b"result_norm"
        values = np.empty(self._ggml.ggml_nelements(tensor), dtype=np.float32)
        self._ggml.ggml_backend_tensor_get(tensor, values.ctypes.data, 0, values.nbytes)
        self._captured.append(values.reshape(-1, self._model.n_embd()))
        return False

    def _load_shortlist(self) -> Shortlist | None:
        """The shortlist on this GGUF's output matrix, checked against llama.cpp's own logits on one row.

        Returns:
            The shortlist; None, with a warning, when the hidden states cannot be had or do not reproduce
            llama.cpp's logits.
        """
        import gguf
        import torch

        reader = gguf.GGUFReader(self.path)
        tensors = {t.name: t for t in reader.tensors}
        matrix = tensors.get("output.weight") or tensors["token_embd.weight"]  # tied embeddings have no output.weight
        arch = str(reader.fields["general.architecture"].contents())
        cap = reader.fields.get(f"{arch}.final_logit_softcapping")
        # these types' dot products quantize the activations to 8 bits in blocks of 32
        q8_0 = matrix.tensor_type.name in ("Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1", "IQ4_NL")

        def rows(ids: np.ndarray) -> torch.Tensor:
            values = gguf.quants.dequantize(np.asarray(matrix.data[ids]), matrix.tensor_type)
            return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32).reshape(len(ids), -1))

        key = self.path.stem if self._bundled else f"{self.path.stem}-{self.path.stat().st_size}"
        fixed = ranking(key, self._derive_shortlist)[:SIZE]
        probe = [self._tokens("The", start=True)]
        full, hidden = [], []
        self._fill(probe, [[len(probe[0]) - 1]], lambda logits, _: full.append(logits.copy()), reuse=False)
        try:
            self._fill(probe, [[len(probe[0]) - 1]], lambda h, _: hidden.append(h), reuse=False, hidden=True)
        except RuntimeError as exc:
            log.warning("llama.cpp gave no final hidden state for %s (%s): the full softmax it is.", self.name, exc)
            return None
        finally:
            self.clear_cache()
        softcap = float(cap.contents()) if cap else None
        shortlist = Shortlist(fixed, rows, softcap=softcap, prepare=quantize_q8_0 if q8_0 else None)
        error = float(np.abs(shortlist.logits(hidden[0][None], fixed)[0] - full[0][fixed]).max())
        if error > 0.05:
            message = "%s: logits from hidden states miss llama.cpp's by %.3f: the full softmax it is."
            log.warning(message, self.name, error)
            return None
        return shortlist

    def _derive_shortlist(self) -> np.ndarray:
        """Derive the shortlist's token ranking from llama.cpp's full next-token distributions.

        :func:`~causalrag.tools.shortlist.derive` over the mean distribution at every position of
        :func:`~causalrag.tools.shortlist.derivation_rows`.
        """
        rows = derivation_rows(lambda text: self._tokens(text, start=True))
        total, count = np.zeros(self.n_vocab, dtype=np.float64), 0

        def add(logits: np.ndarray, readers: list[tuple[int, int]]) -> None:
            nonlocal count
            np.add(total, len(readers) * np.exp(logits - log_normalizer(logits)), out=total)
            count += len(readers)

        with self._lock:
            for group in self._rounds(range(len(rows)), rows.__getitem__, rows=max(1, self.n_seq // 2)):
                self._fill([rows[i] for i in group], [range(len(rows[i]) - 1) for i in group], add, reuse=False)
        self.clear_cache()
        return derive(total / count)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes as a generation prompt (chat template included where the GGUF has one)."""
        return [len(self._prompt_tokens(t)) for t in texts]

    # ---- text → tokens
    def format(self, prompt: str) -> str:
        """Apply the GGUF's chat template when it has one; base models take the prompt as it is."""
        if not self._template:
            return prompt
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        m = self._model
        formatter = Jinja2ChatFormatter(
            self._template, eos_token=m.token_get_text(m.token_eos()), bos_token=m.token_get_text(m.token_bos())
        )
        return formatter(messages=[{"role": "user", "content": prompt}]).prompt

    def _prompt_tokens(self, prompt: str) -> list[int]:
        """Tokens of a generation prompt: BOS + text, or the chat-formatted text with its special tokens."""
        text = self.format(prompt).encode("utf-8")
        chat = self.has_chat_template
        tokens: list[int] = self._model.tokenize(text, add_bos=not chat, special=chat)
        return tokens

    def _tokens(self, text: str, *, start: bool) -> list[int]:
        """Raw-text tokens for scoring; ``start`` adds BOS (or EOS as a separator when there is none)."""
        ids = self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []
        if start:
            first = self._model.token_bos()
            ids = [first if first >= 0 else self._model.token_eos(), *ids]
        return ids

    def _piece(self, token: int) -> bytes:
        """The bytes of one generated token (special tokens render as nothing, as with ``skip_special_tokens``)."""
        n = self._lib.llama_token_to_piece(
            self._model.vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False
        )
        return self._piece_buffer.raw[: max(n, 0)]

    def _single_token_ids(self, words: Sequence[str]) -> list[int]:
        ids = {tuple(self._tokens(w, start=False)) for w in words}
        return sorted({i[0] for i in ids if len(i) == 1})

    # ---- the llama.cpp batch
    def _decode(
        self,
        entries: Sequence[Entry],
        use: Callable[[int, np.ndarray], None] | None = None,
        *,
        keep: Sequence[int] = (),
        hidden: bool = False,
    ) -> None:
        """Decode ``entries`` in order, in calls of at most ``n_batch`` tokens and ``max_outputs`` logit rows.

        ``use(k, logits)`` receives the logits of every entry ``k`` that wants them; the array is
        a view into llama.cpp's buffer, valid only until the next decode: copy what you keep.
        ``hidden=True`` (a shortlist is loaded) passes final hidden states instead, and llama.cpp skips
        the output projection. When the cache has no room, cached sequences outside ``keep`` are dropped
        one at a time, least recently used first, until the call fits: the prefixes still in use (the
        evidence every module of an iteration starts with) stay cached.
        """
        start = 0
        while start < len(entries):
            n, outputs = self._fill_batch(entries, start)
            captured = self._decode_batch(keep, capture=bool(hidden and outputs))
            if hidden and outputs and (captured is None or len(captured) != outputs):
                got = 0 if captured is None else len(captured)
                raise RuntimeError(f"llama.cpp gave {got} hidden states for {outputs} outputs: unset {ENV}.")
            if use is not None:
                self._hand_out(use, start, n, captured)
            start += n

    def _fill_batch(self, entries: Sequence[Entry], start: int) -> tuple[int, int]:
        """Put ``entries`` from ``start`` on into the llama.cpp batch, as many as one decode call takes.

        A call takes at most ``n_batch`` tokens and ``max_outputs`` logit rows.

        Returns:
            How many entries the batch holds, and how many of them want logits.
        """
        batch = self._batch.batch
        n = outputs = 0
        while start + n < len(entries) and n < self.n_batch:
            token, pos, seqs, want = entries[start + n]
            if want and outputs == self.max_outputs:
                break
            batch.token[n], batch.pos[n], batch.n_seq_id[n], batch.logits[n] = token, pos, len(seqs), want
            for j, s in enumerate(seqs):
                batch.seq_id[n][j] = s
            outputs += want
            n += 1
        batch.n_tokens = n
        return n, outputs

    def _decode_batch(self, keep: Sequence[int], *, capture: bool) -> np.ndarray | None:
        """Decode the filled batch (:meth:`_decode_dropping_idle`) and count it as one forward pass.

        ``capture=True`` has the graph callback (:meth:`_observe`) copy the final hidden states.

        Returns:
            The captured hidden states, one row per output, or None when none were captured.

        Raises:
            RuntimeError: llama.cpp could not decode the batch (the context is full even without idle
                sequences, or another error its log lines name).
        """
        self._captured = [] if capture else None
        try:
            code = self._decode_dropping_idle(keep)
            captured = np.concatenate(self._captured) if self._captured else None
        finally:
            self._captured = None
        if code != 0:
            reason = f"the {self.n_ctx}-token context is full" if code == 1 else "see the llama.cpp log lines"
            raise RuntimeError(f"llama.cpp could not decode a batch (code {code}): {reason}.")
        record(self.usage, Usage(forward_passes=1))
        return captured

    def _decode_dropping_idle(self, keep: Sequence[int]) -> int:
        """``llama_decode`` of the filled batch; while the cache is full, drop an idle sequence and try again.

        Sequences outside ``keep`` go one at a time in :meth:`_idle`'s order. Returns llama.cpp's code (0:
        decoded, 1: no room in the cache, else an error).
        """
        lib, batch = self._lib, self._batch.batch
        code: int = lib.llama_decode(self._ctx.ctx, batch)
        for seq in self._idle(keep) if code == 1 else []:
            self._drop(seq)
            code = lib.llama_decode(self._ctx.ctx, batch)
            if code != 1:
                break
        return code

    def _hand_out(
        self, use: Callable[[int, np.ndarray], None], start: int, n: int, captured: np.ndarray | None
    ) -> None:
        """Call ``use(k, output)`` for every entry ``k`` of the decoded batch that wanted an output.

        The output is the entry's row of ``captured`` (hidden states) when there is one, else a view of its
        logits in llama.cpp's buffer. ``start`` is the first batch entry's index in the entries decoded.
        """
        lib, batch = self._lib, self._batch.batch
        j = 0
        for i in range(n):
            if batch.logits[i]:
                if captured is not None:  # hidden states were asked for (and counted by _decode)
                    use(start + i, captured[j])
                    j += 1
                else:
                    row = lib.llama_get_logits_ith(self._ctx.ctx, i)
                    use(start + i, np.ctypeslib.as_array(row, shape=(self.n_vocab,)))

    def clear_cache(self) -> None:
        """Drop every cached sequence and saved exact prompt.

        After an error the cache's content is unknown; benchmarks start cold.
        """
        self._empty_cells()
        self._snapshots.clear()

    def _empty_cells(self) -> None:
        """Drop every cached sequence (the saved exact prompts stay)."""
        self._lib.llama_memory_clear(self._memory, True)
        self._held = [[] for _ in range(self.n_seq)]
        self._exact = None

    def _idle(self, keep: Sequence[int]) -> list[int]:
        """The cached sequences outside ``keep``, in the order they are dropped in (:meth:`_reuse_order`)."""
        return self._reuse_order(s for s in range(self.n_seq) if s not in keep and self._held[s])

    def _reuse_order(self, seqs: Iterable[int]) -> list[int]:
        """``seqs`` in the order they are given up: least recently used first, the exact blocks last.

        The exact blocks go last so that the next question's exact reading finds its header blocks after a
        method's other calls.
        """
        exact = self._exact[0] if self._exact else -1
        return sorted(seqs, key=lambda s: (s == exact, self._used[s]))

    def _drop(self, seq: int) -> None:
        """Forget one cached sequence (its cells are freed once no other sequence shares them)."""
        self._lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
        self._held[seq] = []
        self._emptied(seq)

    def _emptied(self, seq: int) -> None:
        """Sequence ``seq`` lost its cells: if it held the exact blocks, there are none now."""
        if self._exact and self._exact[0] == seq:
            self._exact = None

    def _assign(self, rows: Sequence[list[int]], firsts: Sequence[int]) -> tuple[list[int], list[int]]:
        """A sequence per row, holding the longest prefix of its tokens that any cached sequence had.

        Returns each row's sequence and how many of its tokens it already holds (never past
        ``firsts[r]``, the first position whose logits the row needs). A row takes over its source
        when no other row reads it and it holds no exact blocks; the others take the sequences
        given up first (:meth:`_reuse_order`), with a copy of their source's shared cells.
        """
        lib, memory = self._lib, self._memory
        exact = self._exact[0] if self._exact else -1
        best = []
        for tokens, first in zip(rows, firsts, strict=True):
            shared = [min(common_prefix(held, tokens), first) for held in self._held]
            source = max(range(self.n_seq), key=shared.__getitem__)
            best.append((source, shared[source]))
        readers = Counter(s for s, n in best if n)
        sources = set(readers)
        placed: dict[int, int] = {}  # row → the sequence it runs in
        for r, (source, n) in enumerate(best):
            if n and readers[source] == 1 and source != exact:
                placed[r] = source
                lib.llama_memory_seq_rm(memory, source, n, -1)
        free = self._reuse_order(s for s in range(self.n_seq) if s not in sources)
        for r, (source, n) in enumerate(best):
            if r not in placed:
                placed[r] = target = free.pop(0)
                lib.llama_memory_seq_rm(memory, target, -1, -1)
                self._emptied(target)
                if n:
                    lib.llama_memory_seq_cp(memory, source, target, 0, n)
        seqs = [placed[r] for r in range(len(rows))]
        self._clock += 1
        for s in set(seqs) | sources:
            self._used[s] = self._clock
        for r, s in enumerate(seqs):
            self._held[s] = list(rows[r])
        return seqs, [n for _, n in best]

    def _fill(
        self,
        rows: Sequence[list[int]],
        wants: Sequence[Sequence[int]],
        use: Callable[[np.ndarray, list[tuple[int, int]]], None],
        *,
        reuse: bool = True,
        hidden: bool = False,
    ) -> list[int]:
        """Bring one sequence per row to hold the row's tokens, handing the wanted outputs to ``use``.

        ``use(logits, [(row, position), ...])`` is called once per decoded position that rows want the
        logits of (rows with the same tokens share one). Rows share work twice: a row starts from the
        longest prefix held by any cached sequence (the few-shot header, the question, an earlier call's
        prompt), and tokens that several rows have at the same place after the same prefix are decoded
        once, as one cell tagged with all their sequences. Returns the rows' sequence ids.

        ``reuse=False`` empties the cache first: llama.cpp's kernels are not batch-invariant (nor is the
        order of cells in the cache), so only then do the same rows give the very same logits every time.
        ``hidden=True`` passes final hidden states instead of logits.
        """
        if not reuse:
            self.clear_cache()
        seqs, starts = self._assign(rows, [min(w, default=len(t) - 1) for t, w in zip(rows, wants, strict=True)])
        nodes: dict[tuple[int, int], int] = {}
        entries: list[list[Any]] = []  # [token, position, sequences, wants logits]
        readers: dict[int, list[tuple[int, int]]] = {}
        for r, tokens in enumerate(rows):
            parent, wanted = -1, set(wants[r])
            for p, token in enumerate(tokens):
                k = nodes.get((parent, token))
                if k is None:
                    k = nodes[(parent, token)] = len(entries)
                    entries.append([token, p, [], False])
                if p >= starts[r]:
                    entries[k][2].append(seqs[r])
                    if p in wanted:
                        entries[k][3] = True
                        readers.setdefault(k, []).append((r, p))
                parent = k
        # row by row (each cell after its parent): interleaving the rows by position makes the same decode
        # slower (docs/performance.md, "The cost table": MoI's scoring before and after the row order)
        order = [k for k, e in enumerate(entries) if e[2]]
        batch = [tuple(entries[k]) for k in order]
        # the tokens computed: cached prefixes and shared cells count once
        record(self.usage, Usage(prompt_tokens=len(batch)))

        self._decode(batch, lambda i, logits: use(logits, readers[order[i]]), keep=seqs, hidden=hidden)
        return seqs

    def _fill_exact(self, tokens: list[int], use: Callable[[np.ndarray, list[tuple[int, int]]], None]) -> int:
        """Bring one sequence to hold ``tokens`` so that their logits depend on the tokens alone; return it.

        llama.cpp's logits for a token depend on how its cells were batched and where the cache put
        them. So every other sequence is dropped, and the tokens are decoded in blocks of
        ``EXACT_BLOCK`` at fixed positions from 0; whole blocks computed the same way before are kept:
        the previous exact prompt's (other calls copy its cells but never change or reuse its sequence
        while another is free: :meth:`_assign`), or those of a saved exact prompt of another kind, copied
        back into the emptied cache where they were decoded (:meth:`_restore_exact`).
        ``use(logits, [(0, last position)])`` gets the last token's logits.
        """
        seq, valid = self._exact or (0, [])
        kept = self._whole_blocks(valid, tokens)
        saved, restorable = self._saved_exact(tokens)
        if restorable > kept:
            seq, kept = 0, self._restore_exact(saved, restorable)
        elif kept:
            for other in range(self.n_seq):
                if other != seq:
                    self._drop(other)
        else:
            self._empty_cells()
        if kept:
            self._lib.llama_memory_seq_rm(self._memory, seq, kept, -1)
        last = len(tokens) - 1
        for start in range(kept, len(tokens), EXACT_BLOCK):
            block = [(t, p, (seq,), p == last) for p, t in enumerate(tokens[start : start + EXACT_BLOCK], start)]
            self._decode(block, lambda _, logits: use(logits, [(0, last)]), keep=[seq])
        record(self.usage, Usage(prompt_tokens=len(tokens) - kept))
        self._clock += 1
        self._used[seq], self._held[seq], self._exact = self._clock, list(tokens), (seq, list(tokens))
        self._save_exact(seq, tokens)
        return seq

    @staticmethod
    def _whole_blocks(done: Sequence[int], tokens: Sequence[int]) -> int:
        """The tokens of ``tokens`` in whole exact blocks that ``done`` (an exact prompt decoded before) shares."""
        return min(common_prefix(done, tokens), len(tokens) - 1) // EXACT_BLOCK * EXACT_BLOCK

    def _saved_exact(self, tokens: Sequence[int]) -> tuple[list[int], int]:
        """The saved exact prompt sharing the most whole blocks with ``tokens``, and how many tokens that is."""
        saved = self._snapshots.get(tuple(tokens[:EXACT_BLOCK]))
        return (saved[0], self._whole_blocks(saved[0], tokens)) if saved else ([], 0)

    def _save_exact(self, seq: int, tokens: list[int]) -> None:
        """Copy the cells of the exact prompt just decoded to host memory (the least recently used kind goes)."""
        if len(tokens) <= EXACT_BLOCK or 0 < self._n_swa < len(tokens):
            # no whole block another prompt could reuse; or a sliding-window model's copy would hold only the
            # window's last cells (llama.cpp writes a sequence's state that way), so it could not be exact
            return
        lib, ctx = self._lib, self._ctx.ctx
        data = (ctypes.c_uint8 * lib.llama_state_seq_get_size(ctx, seq))()
        written = lib.llama_state_seq_get_data(ctx, data, len(data), seq)
        key = tuple(tokens[:EXACT_BLOCK])
        self._snapshots.pop(key, None)
        self._snapshots[key] = (list(tokens), bytes(data)[:written])
        while len(self._snapshots) > EXACT_SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def _restore_exact(self, tokens: list[int], whole: int) -> int:
        """Empty the cache and copy a saved exact prompt's cells back into sequence 0.

        Returns ``whole`` (the tokens of it to keep), or 0 when llama.cpp could not restore them. In an
        empty cache the cells land where they were first decoded, with the same values, so the
        blocks that follow are computed as if the prompt had stayed cached.
        """
        saved = self._snapshots[tuple(tokens[:EXACT_BLOCK])]
        self._snapshots.move_to_end(tuple(tokens[:EXACT_BLOCK]))
        self._empty_cells()
        data = (ctypes.c_uint8 * len(saved[1])).from_buffer_copy(saved[1])
        if not self._lib.llama_state_seq_set_data(self._ctx.ctx, data, len(data), 0):
            self._empty_cells()  # nothing restored: the prompt is decoded from position 0
            return 0
        self._held[0] = list(tokens)
        return whole

    def _rounds(
        self, items: Sequence[int], tokens: Callable[[int], list[int]], *, rows: int, extra: int = 0
    ) -> Iterator[list[int]]:
        """Group items into rounds of at most ``rows`` whose new KV cells fit the context.

        Items go in lexicographic order of their tokens, so shared prefixes sit together; an item's new
        cells are its tokens past the previous item's common prefix, plus ``extra``.
        """
        budget = self.n_ctx - 16
        group: list[int] = []
        used = 0
        previous: list[int] = []
        for i in sorted(items, key=tokens):
            need = len(tokens(i)) + extra
            if need > budget:
                raise ValueError(
                    f"A prompt of {need} tokens does not fit the {self.n_ctx}-token "
                    "llama.cpp context: pass a larger n_ctx."
                )
            need -= common_prefix(previous, tokens(i)) if group else 0
            if group and (len(group) == rows or used + need > budget):
                yield group
                group, used, need = [], 0, len(tokens(i)) + extra
            group.append(i)
            used += need
            previous = tokens(i)
        if group:
            yield group

    # ---- generation
    @staticmethod
    def _pick(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
        if temperature <= 0:
            return int(np.argmax(logits))
        scaled = logits.astype(np.float64) / temperature
        p = np.exp(scaled - scaled.max())
        return int(rng.choice(len(p), p=p / p.sum()))

    def _decode_rows(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        rng: np.random.Generator,
        stop: Sequence[str] | None,
        reuse: bool = True,
        exact: bool = False,
        scored: list[tuple[int, float]] | None = None,
    ) -> Iterator[tuple[int, str]]:
        """Decode one round of rows together, one sequence each; yield ``(row, text so far)`` after each new token.

        Each step samples every active row's next token from its logits and decodes all of them in
        one ``llama_decode`` call; the sequences keep prompt + output as cache for later calls. ``scored``
        (one row) receives each picked token with its log-probability.
        """
        lib = self._lib
        picked = [0] * len(prompts)
        made = [0] * len(prompts)

        def pick(logits: np.ndarray, readers: list[tuple[int, int]]) -> None:
            for r, _ in readers:  # rows with the same prompt (samples) draw one token each
                picked[r] = self._pick(logits, temperature, rng)
                if scored is not None:
                    scored.append((picked[r], float(logits[picked[r]]) - log_normalizer(logits)))

        def pick_step(rows: list[int], k: int, logits: np.ndarray) -> None:  # entry k of a step is row rows[k]
            pick(logits, [(rows[k], 0)])

        with self._lock:
            try:
                if exact:  # one prompt (``stream``)
                    seqs = [self._fill_exact(prompts[0], pick)]
                else:
                    seqs = self._fill(prompts, [[len(p) - 1] for p in prompts], pick, reuse=reuse)
                raw = [b""] * len(prompts)
                position = [len(p) for p in prompts]
                active = list(range(len(prompts)))
                while active:
                    step: list[Entry] = []
                    stepping: list[int] = []
                    for r in active:
                        token = picked[r]
                        if lib.llama_vocab_is_eog(self._model.vocab, token):
                            continue
                        made[r] += 1
                        raw[r] += self._piece(token)
                        text = raw[r].decode("utf-8", errors="ignore")
                        cut = truncate_at_stop(text, stop)
                        yield r, cut
                        if len(cut) < len(text) or made[r] >= max_new_tokens:
                            continue
                        step.append((token, position[r], (seqs[r],), True))
                        stepping.append(r)
                        position[r] += 1
                        self._held[seqs[r]].append(token)
                    active = stepping
                    if step:
                        self._decode(step, functools.partial(pick_step, stepping), keep=seqs)
            except BaseException:
                self.clear_cache()
                raise
            finally:
                record(self.usage, Usage(new_tokens=sum(made)))

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        n: int = 1,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        """``n`` completions per prompt; rows decode ``parallel`` at a time. Greedy returns ``n`` copies.

        Calls from parallel graph branches with the same settings are decoded together
        (:mod:`causalrag.tools.coalesce`).
        """
        return self._coalesced(
            prompts, max_new_tokens=max_new_tokens, temperature=temperature, n=n, stop=stop, seed=seed
        )

    def _generate_batched(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int,
        temperature: float,
        n: int,
        stop: Sequence[str] | None,
        seed: int | None,
    ) -> list[list[str]]:
        samples = n if temperature > 0 else 1
        encoded = [self._prompt_tokens(p) for p in prompts]
        rows = [i for i in range(len(prompts)) for _ in range(samples)]
        rng = np.random.default_rng(seed)
        texts = [""] * len(rows)
        with self._lock:
            rounds = self._rounds(
                range(len(rows)), lambda r: encoded[rows[r]], rows=self.parallel, extra=max_new_tokens
            )
            for group in rounds:
                decoded = self._decode_rows(
                    [encoded[rows[g]] for g in group],
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                    rng=rng,
                    stop=stop,
                    reuse=seed is None,  # seeded sampling must give the same text every time
                )
                for r, text in decoded:
                    texts[group[r]] = text
        outputs: list[list[str]] = [[] for _ in prompts]
        for r, text in zip(rows, texts, strict=True):
            outputs[r].append(text)
        record(self.usage, Usage(calls=len(prompts) * n))
        return [o * n if samples == 1 else o for o in outputs]

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        """Greedy completion of one prompt, yielded piece by piece (a possible stop string is held back).

        ``exact=True`` decodes the prompt with :meth:`_fill_exact`: a prompt decoded after a cached
        prefix, or beside other sequences' cells, gets other logits than the same prompt decoded alone
        (not bit-identical across histories, now and then another first token), so only then is the text
        the same whatever ran before. The measurements are in ``research/performance-history.md`` (the
        entry "Standard RAG's reading is computed exact").
        """
        hold = max((len(s) for s in stop or ()), default=1) - 1
        text, sent = "", 0
        tokens, scored = self._prompt_tokens(prompt), list[tuple[int, float]]()
        self._streamed = (tokens, scored)
        rows = self._decode_rows(
            [tokens],
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            rng=np.random.default_rng(0),
            stop=stop,
            exact=exact,
            scored=scored,
        )
        for _, text in rows:
            if len(text) - hold > sent:
                yield text[sent : len(text) - hold]
                sent = len(text) - hold
        if len(text) > sent:
            yield text[sent:]
        record(self.usage, Usage(calls=1))

    # ---- scoring
    def _score_tokens(self, heads: list[list[int]], conts: list[list[int]]) -> list[list[float]]:
        """Per-token log p(continuation token | head, earlier tokens) for token lists.

        Every (head, continuation) pair is one row of :meth:`_fill`: a head shared by several rows
        (and whatever prefix of it the cache holds) is decoded once, the continuations run as
        parallel sequences, and outputs are computed only at the scored positions: full logits, or
        final hidden states that the shortlist projects in one batch per round.
        """
        result: list[list[float]] = [[0.0] * len(c) for c in conts]
        rows = {i: heads[i] + conts[i] for i in range(len(conts)) if conts[i]}
        streamed = self._streamed  # one snapshot: another thread's stream may replace it meanwhile
        known = {i: got for i in rows if (got := streamed_logprobs(streamed, heads[i], conts[i])) is not None}
        # only when no other reply to that prompt is scored in this call: options compare like for like
        if known and streamed and all(i in known for i in rows if heads[i] == streamed[0]):
            for i, got in known.items():
                result[i] = got
                del rows[i]
        with self._lock:
            for group in self._rounds(list(rows), rows.__getitem__, rows=max(1, self.n_seq // 2)):
                states: list[np.ndarray] = []
                where: list[tuple[int, int]] = []  # (row, position of the scored token)

                # _fill calls it within this round, so it reads this round's group, states and where
                def score(output: np.ndarray, readers: list[tuple[int, int]]) -> None:
                    if self.shortlist is not None:
                        states.extend([output] * len(readers))  # noqa: B023
                        where.extend((group[r], p + 1) for r, p in readers)  # noqa: B023
                        return
                    norm = log_normalizer(output)
                    for r, p in readers:
                        i = group[r]  # noqa: B023
                        result[i][p - len(heads[i]) + 1] = float(output[rows[i][p + 1]]) - norm

                try:
                    wants = [range(len(heads[i]) - 1, len(rows[i]) - 1) for i in group]
                    self._fill([rows[i] for i in group], wants, score, hidden=self.shortlist is not None)
                except BaseException:
                    self.clear_cache()
                    raise
                if where and self.shortlist is not None:  # only a shortlist's scoring fills ``where``
                    for (i, p), lp in zip(where, self.shortlist.logprobs(np.stack(states), rows, where), strict=True):
                        result[i][p - len(heads[i])] = lp
        return result

    def token_logprobs(self, prefixes: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """Per-token log p(continuation token | prefix, earlier tokens) of raw text.

        Callers keep the space between prefix and continuation in the continuation.
        """
        if len(prefixes) != len(continuations):
            raise ValueError("logprob needs one prefix per continuation.")
        heads = {p: self._tokens(p, start=True) for p in set(prefixes)}
        result = self._score_tokens([heads[p] for p in prefixes], [self._tokens(c, start=False) for c in continuations])
        record(self.usage, Usage(calls=len(continuations)))
        return result

    def option_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[list[list[float]]]:
        """Token log-probs of every option as the reply to its (chat-formatted) prompt; each prompt decodes once."""
        heads = [self._prompt_tokens(p) for p in prompts]
        flat = self._score_tokens(
            [h for h, opts in zip(heads, options, strict=True) for _ in opts],
            [
                self._tokens(self.reply_text(p, o), start=False)
                for p, opts in zip(prompts, options, strict=True)
                for o in opts
            ],
        )
        record(self.usage, Usage(calls=len(prompts)))
        return regroup(flat, [len(opts) for opts in options])

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum") -> list[float]:
        """Sum (or mean) of token log-probs of each continuation given its prefix; 0.0 for an empty one."""
        return reduce_logprobs(self.token_logprobs(prefixes, continuations), reduce)

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) for the next token after each (chat-formatted) prompt, all prompts in one batch."""
        encoded = [self._prompt_tokens(p) for p in prompts]
        probs = [0.5] * len(encoded)
        words = self._yes_ids + self._no_ids

        def share(output: np.ndarray, readers: list[tuple[int, int]]) -> None:
            if self.shortlist is None:
                norm = log_normalizer(output)
                yes, no = np.exp(output[self._yes_ids] - norm).sum(), np.exp(output[self._no_ids] - norm).sum()
            else:  # the normalizer cancels in P(yes) / (P(yes) + P(no)): project these words only, exactly
                logits = self.shortlist.logits(output[None], words)[0]
                weights = np.exp(logits.astype(np.float64) - logits.max())
                yes, no = weights[: len(self._yes_ids)].sum(), weights[len(self._yes_ids) :].sum()
            for r, _ in readers:
                probs[group[r]] = float(yes / max(yes + no, 1e-12))

        with self._lock:
            for group in self._rounds(range(len(encoded)), encoded.__getitem__, rows=max(1, self.n_seq // 2)):
                try:
                    last = [[len(encoded[i]) - 1] for i in group]
                    self._fill([encoded[i] for i in group], last, share, hidden=self.shortlist is not None)
                except BaseException:
                    self.clear_cache()
                    raise
        record(self.usage, Usage(calls=len(encoded)))
        return probs
