"""The llama.cpp backend: the same :class:`~causalrag.tools.backends.base.LLM` interface on a GGUF file, fast on CPU.

The GGUF is loaded as it is (no de-quantization, no cached float32 copy). We drive llama.cpp's
low-level API through ``llama-cpp-python`` because the high-level ``Llama`` class decodes one
sequence at a time and computes logits either for the last token or for every token:

* **batched generation** — up to ``parallel`` rows (prompts × samples) decode together, one token
  per row per ``llama_decode`` call, each row a sequence of one unified KV cache;
* **prefix cache** — sequence 0 keeps the last prompt's KV cache; a new prompt (or scoring prefix)
  decodes only the tokens after the longest prefix it shares with it, and the other rows of a batch
  copy the shared part from sequence 0 (a copy tags cache cells, it moves no data);
* **scoring** — ``logprob`` decodes a prefix once, copies it to up to ``n_seq - 1`` sequences and
  runs each continuation against it, asking llama.cpp for logits only at the positions scored
  (never ``logits_all``: the bundled model's vocabulary has 262k entries, 1 MB of logits a token);
  ``yes_probability`` reads the next-token logits after each prompt.

llama.cpp's kernels are not batch-invariant: the same tokens decoded in batches of other sizes
(a cached prefix, more continuations) move token log-probs by up to ~0.06 nats (measured), and the
quantized arithmetic differs from transformers' de-quantized float32 by up to ~0.15 nats a token,
enough to flip a near-tie in a greedy answer now and then.

Sampling happens in numpy on the copied logits (greedy, or pure temperature sampling with
``top_p = 1`` and no top-k, as the transformers backend does), seeded by ``seed``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from causalrag.errors import BackendUnavailableError, ModelNotFoundError
from causalrag.tools.backends.base import NO_WORDS, YES_WORDS, Judge, Reduce, bundled_gguf, reduce_logprobs, regroup, truncate_at_stop
from causalrag.tools.coalesce import Coalescer
from causalrag.tools.usage import Usage, record

Entry = tuple[int, int, int, bool]
"""One token of a ``llama_decode`` batch: (token id, position, sequence id, wants logits)."""


log = logging.getLogger(__name__)

# ggml's levels (ggml.h): llama-cpp-python 0.3.36 maps them one step off, so llama.cpp's warnings
# reached stderr as errors — e.g. "using full-size SWA cache", a setting we choose on purpose.
_GGML_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.INFO, 4: logging.ERROR}
_GGML_CONT = 5
_last_level = logging.DEBUG


def route_ggml_log(level: int, text: bytes, _user_data: object = None) -> None:
    """llama.cpp's log lines → this module's logger: errors as errors, its warnings and chatter below
    WARNING, so a normal load prints nothing (``logging.getLogger("causalrag.tools.backends.llamacpp")`` shows them)."""
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
        raise ModelNotFoundError(spec, "the llamacpp backend loads .gguf files; use --backend transformers for folders and hub ids")
    if not path.is_file():
        raise ModelNotFoundError(spec, "no such file")
    return path


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def log_softmax_at(logits: np.ndarray, index: int | Sequence[int]) -> np.ndarray:
    """log p(index) under ``softmax(logits)``, without materialising the whole distribution twice."""
    top = float(logits.max())
    return logits[index] - (top + np.log(np.exp(logits - top, dtype=np.float64).sum()))


_callback = None  # the C callback must outlive every model


def _ggml_log_callback(llama_cpp):
    global _callback
    if _callback is None:
        _callback = llama_cpp.llama_log_callback(route_ggml_log)
    return _callback


class LlamaCppLLM(Judge):
    """A GGUF model run by llama.cpp behind the :class:`~causalrag.tools.backends.base.LLM` interface.

    ``n_ctx`` is the unified KV cache shared by all sequences of a batch (rows are grouped so a
    batch fits), ``parallel`` the rows generated together, ``n_seq`` the sequences of the cache
    (sequence 0 is the prefix cache; scoring runs up to ``n_seq - 1`` continuations at a time),
    ``max_outputs`` the logit rows one decode call may return (bounds memory: 1 MB each here).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        parallel: int = 8,
        n_seq: int = 16,
        n_batch: int = 512,
        max_outputs: int = 64,
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
        params.swa_full = True  # sliding-window layers keep every cell, so a cached prefix can be truncated
        params.n_threads = params.n_threads_batch = self.n_threads
        params.no_perf = True
        self._ctx = _internals.LlamaContext(model=self._model, params=params, verbose=False)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._batch = _internals.LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=1, verbose=False)
        self.n_ctx, self.n_batch, self.n_seq, self.parallel, self.max_outputs = n_ctx, n_batch, n_seq, parallel, max_outputs
        self.n_vocab = self._model.n_vocab()
        self.name = path.stem if model is None else str(model)
        self.path = path
        template = self._model.metadata().get("tokenizer.chat_template")
        self.has_chat_template = bool(template)
        self._template = template
        self.usage = Usage()
        self._lock = threading.RLock()  # one context, many graph threads
        self._coalesced = Coalescer(self._generate_batched)
        self._cached: list[int] = []  # tokens held by sequence 0
        self._piece_buffer = ctypes.create_string_buffer(256)
        self._yes_ids = self._single_token_ids(YES_WORDS)
        self._no_ids = self._single_token_ids(NO_WORDS)

    @property
    def context_window(self) -> int:
        return self.n_ctx

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
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
        return self._model.tokenize(text, add_bos=not self.has_chat_template, special=self.has_chat_template)

    def _tokens(self, text: str, *, start: bool) -> list[int]:
        """Raw-text tokens for scoring; ``start`` adds BOS (or EOS as a separator when there is none)."""
        ids = self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []
        if start:
            first = self._model.token_bos()
            ids = [first if first >= 0 else self._model.token_eos(), *ids]
        return ids

    def _piece(self, token: int) -> bytes:
        """The bytes of one generated token (special tokens render as nothing, as with ``skip_special_tokens``)."""
        n = self._lib.llama_token_to_piece(self._model.vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False)
        return self._piece_buffer.raw[: max(n, 0)]

    def _single_token_ids(self, words: Sequence[str]) -> list[int]:
        ids = {tuple(self._tokens(w, start=False)) for w in words}
        return sorted({i[0] for i in ids if len(i) == 1})

    # ---- the llama.cpp batch
    def _decode(self, entries: Sequence[Entry], use: Callable[[int, np.ndarray], None] | None = None) -> None:
        """Decode ``entries`` in order, in calls of at most ``n_batch`` tokens and ``max_outputs`` logit rows.

        ``use(k, logits)`` receives the logits of every entry ``k`` that wants them; the array is
        a view into llama.cpp's buffer, valid only until the next decode: copy what you keep.
        """
        lib, batch = self._lib, self._batch.batch
        start = 0
        while start < len(entries):
            n = outputs = 0
            while start + n < len(entries) and n < self.n_batch:
                token, pos, seq, want = entries[start + n]
                if want and outputs == self.max_outputs:
                    break
                batch.token[n], batch.pos[n], batch.n_seq_id[n], batch.logits[n] = token, pos, 1, want
                batch.seq_id[n][0] = seq
                outputs += want
                n += 1
            batch.n_tokens = n
            code = lib.llama_decode(self._ctx.ctx, batch)
            if code != 0:
                self._forget()
                raise RuntimeError(f"llama.cpp could not decode a batch (code {code}): the {self.n_ctx}-token context is full.")
            record(self.usage, Usage(forward_passes=1))
            if use is not None:
                for i in range(n):
                    if batch.logits[i]:
                        row = lib.llama_get_logits_ith(self._ctx.ctx, i)
                        use(start + i, np.ctypeslib.as_array(row, shape=(self.n_vocab,)))
            start += n

    def _forget(self) -> None:
        """Drop every sequence (after an error the cache content is unknown)."""
        self._lib.llama_memory_clear(self._memory, True)
        self._cached = []

    def _drop(self, seqs: Sequence[int]) -> None:
        for s in seqs:
            self._lib.llama_memory_seq_rm(self._memory, s, -1, -1)

    def _prefill(self, tokens: list[int]) -> np.ndarray:
        """Bring sequence 0 to ``tokens``, reusing the longest cached prefix; return the last position's logits."""
        keep = min(common_prefix(self._cached, tokens), len(tokens) - 1)
        if not self._lib.llama_memory_seq_rm(self._memory, 0, keep, -1):
            self._lib.llama_memory_seq_rm(self._memory, 0, -1, -1)
            keep = 0
        self._cached = tokens[:keep]
        last: list[np.ndarray] = []
        self._decode([(t, p, 0, p == len(tokens) - 1) for p, t in enumerate(tokens) if p >= keep], lambda k, v: last.append(v.copy()))
        self._cached = list(tokens)
        return last[0]

    def _rounds(self, items: Sequence[int], cells: Callable[[int], int], *, rows: int, reserved: int) -> Iterator[list[int]]:
        """Group items into rounds of at most ``rows`` whose KV cells fit beside ``reserved`` cached ones."""
        budget = self.n_ctx - reserved - 16
        group: list[int] = []
        used = 0
        for i in items:
            need = cells(i)
            if need > budget:
                raise ValueError(f"A prompt of {need} tokens does not fit the {self.n_ctx}-token llama.cpp context: pass a larger n_ctx.")
            if group and (len(group) == rows or used + need > budget):
                yield group
                group, used = [], 0
            group.append(i)
            used += need
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
        self, prompts: list[list[int]], *, max_new_tokens: int, temperature: float, rng: np.random.Generator, stop: Sequence[str] | None
    ) -> Iterator[tuple[int, str]]:
        """Decode one round of rows together; yield ``(row, text so far)`` after each new token.

        Row ``r`` runs on sequence ``r``; row 0 goes through the prefix cache, and every other row
        copies the prefix it shares with row 0 before decoding the rest of its prompt.
        """
        lib = self._lib
        with self._lock:
            logits: list[np.ndarray | None] = [None] * len(prompts)
            try:
                logits[0] = self._prefill(prompts[0])
                entries: list[Entry] = []
                for r, tokens in enumerate(prompts[1:], start=1):
                    shared = min(common_prefix(prompts[0], tokens), len(tokens) - 1)
                    if shared:
                        lib.llama_memory_seq_cp(self._memory, 0, r, 0, shared)
                    entries += [(t, p, r, p == len(tokens) - 1) for p, t in enumerate(tokens) if p >= shared]
                self._decode(entries, lambda k, v: logits.__setitem__(entries[k][2], v.copy()))
                raw = [b""] * len(prompts)
                made = [0] * len(prompts)
                fed0 = list(prompts[0])  # what sequence 0 will hold afterwards
                position = [len(p) for p in prompts]
                active = list(range(len(prompts)))
                while active:
                    step: list[Entry] = []
                    for r in active:
                        token = self._pick(logits[r], temperature, rng)
                        if lib.llama_vocab_is_eog(self._model.vocab, token):
                            continue
                        made[r] += 1
                        raw[r] += self._piece(token)
                        text = raw[r].decode("utf-8", errors="ignore")
                        cut = truncate_at_stop(text, stop)
                        yield r, cut
                        if len(cut) < len(text) or made[r] >= max_new_tokens:
                            continue
                        step.append((token, position[r], r, True))
                        position[r] += 1
                        if r == 0:
                            fed0.append(token)
                    active = [e[2] for e in step]
                    if step:
                        self._decode(step, lambda k, v: logits.__setitem__(step[k][2], v.copy()))
                self._cached = fed0
            except BaseException:
                self._forget()
                raise
            finally:
                self._drop(range(1, len(prompts)))
                record(self.usage, Usage(prompt_tokens=sum(map(len, prompts)), new_tokens=sum(made)))

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

        Calls from parallel graph branches with the same settings are decoded together (:mod:`causalrag.tools.coalesce`).
        """
        return self._coalesced(prompts, max_new_tokens=max_new_tokens, temperature=temperature, n=n, stop=stop, seed=seed)

    def _generate_batched(
        self, prompts: Sequence[str], *, max_new_tokens: int, temperature: float, n: int, stop: Sequence[str] | None, seed: int | None
    ) -> list[list[str]]:
        samples = n if temperature > 0 else 1
        encoded = [self._prompt_tokens(p) for p in prompts]
        rows = [i for i in range(len(prompts)) for _ in range(samples)]
        rng = np.random.default_rng(seed)
        outputs: list[list[str]] = [[] for _ in prompts]
        with self._lock:
            cells = lambda r: len(encoded[rows[r]]) + max_new_tokens  # noqa: E731
            # row 0 replaces the cached sequence, so only the rows' own cells count
            for group in self._rounds(range(len(rows)), cells, rows=self.parallel, reserved=0):
                texts = [""] * len(group)
                for r, text in self._decode_rows(
                    [encoded[rows[g]] for g in group], max_new_tokens=max_new_tokens, temperature=temperature, rng=rng, stop=stop
                ):
                    texts[r] = text
                for g, text in zip(group, texts):
                    outputs[rows[g]].append(text)
        record(self.usage, Usage(calls=len(prompts) * n))
        return [o * n if samples == 1 else o for o in outputs]

    def stream(self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None) -> Iterator[str]:
        """Greedy completion of one prompt, yielded piece by piece (a possible stop string is held back)."""
        hold = max((len(s) for s in stop or ()), default=1) - 1
        text, sent = "", 0
        rows = self._decode_rows(
            [self._prompt_tokens(prompt)], max_new_tokens=max_new_tokens, temperature=0.0, rng=np.random.default_rng(0), stop=stop
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

        Each distinct head is decoded once on sequence 0 (reusing whatever it shares with the
        previous one); its continuations then run ``n_seq - 1`` at a time on copies of it.
        """
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, h in enumerate(heads):
            groups.setdefault(tuple(h), []).append(i)
        result: list[list[float]] = [[] for _ in conts]
        with self._lock:
            for key, members in groups.items():
                head = list(key)
                members = [i for i in members if conts[i]]
                if not members:
                    continue
                first = self._prefill(head)
                for i, lp in zip(members, log_softmax_at(first, [conts[i][0] for i in members])):
                    result[i] = [float(lp)]
                cells = lambda i: len(conts[i])  # noqa: E731
                for group in self._rounds(members, cells, rows=self.n_seq - 1, reserved=len(head)):
                    entries: list[Entry] = []
                    targets: list[tuple[int, int]] = []
                    for s, i in enumerate(group, start=1):
                        self._lib.llama_memory_seq_cp(self._memory, 0, s, -1, -1)
                        for j, token in enumerate(conts[i][:-1]):
                            entries.append((token, len(head) + j, s, True))
                            targets.append((i, conts[i][j + 1]))

                    def score(k: int, logits: np.ndarray) -> None:
                        i, target = targets[k]
                        result[i].append(float(log_softmax_at(logits, target)))

                    try:
                        self._decode(entries, score)
                    finally:
                        self._drop(range(1, len(group) + 1))
        record(self.usage, Usage(prompt_tokens=sum(map(len, conts))))
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
            [h for h, opts in zip(heads, options) for _ in opts],
            [self._tokens(self.reply_text(p, o), start=False) for p, opts in zip(prompts, options) for o in opts],
        )
        record(self.usage, Usage(calls=len(prompts)))
        return regroup(flat, [len(opts) for opts in options])

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum") -> list[float]:
        """Sum (or mean) of token log-probs of each continuation given its prefix; 0.0 for an empty one."""
        return reduce_logprobs(self.token_logprobs(prefixes, continuations), reduce)

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) for the next token after each (chat-formatted) prompt."""
        probs: list[float] = []
        with self._lock:
            for prompt in prompts:
                tokens = self._prompt_tokens(prompt)
                logits = self._prefill(tokens)
                yes = np.exp(log_softmax_at(logits, self._yes_ids)).sum()
                no = np.exp(log_softmax_at(logits, self._no_ids)).sum()
                probs.append(float(yes / max(yes + no, 1e-12)))
                record(self.usage, Usage(calls=1, prompt_tokens=len(tokens)))
        return probs
