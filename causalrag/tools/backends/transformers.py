"""The transformers backend: a local Hugging Face causal LM behind :class:`~causalrag.tools.backends.base.LLM`.

Two compute paths serve every method (see ``docs/methods.md``):

* ``generate`` — several prompts (and ``n`` samples each) as one batch;
* ``logprob`` / ``yes_probability`` — one forward pass per batch, log-softmax only at the
  positions that are scored; with ``shortlist=True`` or ``CAUSALRAG_SHORTLIST=1`` over a shortlist of the
  vocabulary (the head's rows for :mod:`causalrag.tools.shortlist`'s tokens and the row's own), and
  ``yes_probability`` then projects only its yes/no words.

Both reuse a batch's **head** — the tokens all its rows share (the few-shot header, a question before
many passages, a prompt before its options): the head runs once, every row continues from a copy of
its KV cache, and recent heads (:data:`HEAD_TOKENS` tokens of them) stay cached (:class:`HeadCache`), so a head that
extends an earlier one (the same header, then one passage's prompt) runs only the extension.

Usage (sequences, prompt tokens, new tokens, forward passes; ``causalrag.tools.usage``) is counted on the model and on
every active :func:`~causalrag.tools.usage.metered` block, so each graph node reports its own cost.
Model files: :func:`model_location` resolves ``--model`` / ``CAUSALRAG_MODEL``; a GGUF becomes a
plain de-quantized copy once (:func:`plain_copy`).
"""

from __future__ import annotations

import contextvars
import copy
import functools
import logging
import os
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

from causalrag.config import settings
from causalrag.errors import CausalRAGError, ModelNotFoundError
from causalrag.tools.backends.base import (
    NO_WORDS,
    YES_WORDS,
    Judge,
    Reduce,
    bundled_gguf,
    pick_device,
    reduce_logprobs,
    regroup,
    truncate_at_stop,
)
from causalrag.tools.coalesce import Coalescer
from causalrag.tools.shortlist import SIZE, Shortlist, derivation_rows, derive, ranking, shortlist_wanted
from causalrag.tools.usage import Usage, record

if TYPE_CHECKING:
    import numpy as np
    import torch
    from transformers import Cache

log = logging.getLogger(__name__)

HEAD_MIN = 16
"""Fewest shared tokens worth running apart as a head (a BOS alone, or a short question, is not)."""
HEAD_TOKENS = 16384
"""Tokens of heads kept (the bundled model's fp32 KV: ~37 KB a token, ~6 KB past its 512-token sliding
window; a 7B model's bf16 KV ~57 KB a token, so ~1 GB at most)."""
Head = tuple["Cache", "torch.Tensor"]
"""A run head: its KV cache (batch of one) and the hidden state of its last token."""


def shared_head(rows: Sequence[Sequence[int]], limit: int | None = None) -> int:
    """Length of the tokens every row starts with (at most ``limit``)."""
    first = rows[0]
    n = min(map(len, rows)) if limit is None else min(limit, *map(len, rows))
    for row in rows[1:]:
        n = next((k for k in range(n) if row[k] != first[k]), n)
    return n


class HeadCache:
    """The KV caches (batch of one) and last hidden states of recently run heads.

    The least recently used heads are dropped first once they hold more than ``tokens`` tokens.
    """

    def __init__(self, tokens: int = HEAD_TOKENS) -> None:
        self.tokens = tokens
        self._entries: OrderedDict[tuple[int, ...], Head] = OrderedDict()

    def longest(self, tokens: Sequence[int]) -> tuple[int, Head | None]:
        """The longest stored head that ``tokens`` start with: its length and (cache, last hidden state)."""
        found = max(
            (k for k in self._entries if len(k) <= len(tokens) and tuple(tokens[: len(k)]) == k), key=len, default=None
        )
        if found is None:
            return 0, None
        self._entries.move_to_end(found)
        return len(found), self._entries[found]

    def put(self, tokens: Sequence[int], value: Head) -> None:
        """Store the head of ``tokens`` as the most recently used, dropping the oldest ones past the budget."""
        self._entries[tuple(tokens)] = value
        self._entries.move_to_end(tuple(tokens))
        while len(self._entries) > 1 and sum(map(len, self._entries)) > self.tokens:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every stored head."""
        self._entries.clear()


@contextmanager
def one_gguf_parse() -> Iterator[None]:
    """Within this block, parse each GGUF file once.

    transformers parses a GGUF's metadata three times (tokenizer, config, weights), and reading the
    262k-entry vocabulary one field at a time is most of a conversion.
    """
    import gguf

    with patch.object(gguf, "GGUFReader", functools.lru_cache(maxsize=2)(gguf.GGUFReader)):
        yield


def plain_copy(gguf: Path, cache: Path) -> Path:
    """Folder with a de-quantized, plain ``save_pretrained`` copy of ``gguf`` (made once, ~1 min).

    transformers de-quantizes a GGUF on every load (~56 s for the 270M model) and refuses to
    ``save_pretrained`` a GGUF-loaded model, so we copy its weights into a fresh model built from
    the same config; that copy loads in seconds. Written to a temporary folder and renamed, so
    concurrent processes never see half a copy.
    """
    target = cache / f"{gguf.stem}-plain"
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.initialization import no_init_weights

    log.warning("Converting %s once into %s (about a minute; later loads take seconds).", gguf.name, target)
    with one_gguf_parse():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with no_init_weights():  # every weight is overwritten next: random init would be ~14 % of a conversion
        plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(quantized.state_dict())
    plain.tie_weights()  # no_init_weights skips the tying that from_config does: keep one shared embedding
    plain.generation_config = quantized.generation_config
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_location(spec: str | None) -> str:
    """Resolve ``--model`` / ``CAUSALRAG_MODEL`` to something ``from_pretrained`` loads offline."""
    cache = settings().model_cache
    if spec is None:
        return str(plain_copy(bundled_gguf(), cache))
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelNotFoundError(spec, "no such file")
        return str(plain_copy(path, cache))
    if path.is_dir() or not spec.startswith((".", "/", "~")):
        return str(path) if path.is_dir() else spec  # a hub id loads from the user's HF cache or hub
    raise ModelNotFoundError(spec, "no such folder")


DTYPES = ("auto", "float32", "bfloat16", "float16")


def pick_dtype(requested: str, device: str) -> torch.dtype:
    """The weights' torch dtype on ``device``: ``requested`` (``CAUSALRAG_DTYPE``), with ``auto`` resolved.

    ``auto`` is bf16 on CUDA and fp32 elsewhere (the answers every real-model test asserts; ``bfloat16``
    on a CPU with native bf16 decodes ~1.6× faster and may change close choices, see docs/performance.md).
    """
    import torch

    if requested not in DTYPES:
        raise CausalRAGError(
            f"CAUSALRAG_DTYPE={requested!r} is not one of {', '.join(DTYPES)}: set one of them, or unset it."
        )
    if requested == "auto":
        return torch.bfloat16 if device == "cuda" else torch.float32
    dtype: torch.dtype = getattr(torch, requested)
    return dtype


CPU_CONTEXT = 8192
"""Tokens of prompt + reply allowed on a CPU (llama.cpp's default ``n_ctx`` too)."""


class TransformersLLM(Judge):
    """A local transformers causal LM behind the :class:`LLM` interface.

    Device: CUDA (bf16) → MPS → CPU (fp32 unless ``CAUSALRAG_DTYPE`` says otherwise). Prompts go through the
    tokenizer's chat template when it has one (instruct models) and are used as plain completion
    text otherwise (the bundled base model). ``logprob`` scores raw text (no chat template) so a
    passage's likelihood means the same for every model. ``shortlist`` (default ``CAUSALRAG_SHORTLIST``,
    off) normalizes scored tokens over a shortlist (:mod:`causalrag.tools.shortlist`); ``False``: full softmax.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str | None = None,
        batch_size: int | None = None,
        max_batch_tokens: int | None = None,
        dtype: str | None = None,
        shortlist: bool | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self._torch = torch
        self.device = pick_device(device or settings().device)
        weights = pick_dtype(dtype or settings().dtype, self.device)  # a bad value fails before any conversion
        location = model_location(model)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(location)
            loaded = AutoModelForCausalLM.from_pretrained(location, dtype=weights)
            # transformers wraps PreTrainedModel.to in a decorator whose type loses the bound self
            self.model = loaded.to(self.device).eval()  # type: ignore[arg-type]
        except (OSError, ValueError) as exc:
            raise ModelNotFoundError(model or location, type(exc).__name__) from exc
        self.name = Path(location).name.removesuffix("-plain") if model is None else str(model)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"  # generation pads on the left; scoring pads by hand
        # Our calls set sampling explicitly; a checkpoint's own defaults would only add warnings.
        gen = self.model.generation_config
        gen.do_sample, gen.temperature, gen.top_p, gen.top_k = False, None, None, None
        self.has_chat_template = bool(self.tokenizer.chat_template)
        on_gpu = self.device == "cuda"
        self.batch_size = batch_size or (32 if on_gpu else 8)
        self.max_batch_tokens = max_batch_tokens or (32768 if on_gpu else 4096)
        self.usage = Usage()
        self._lock = threading.RLock()  # one model, many graph threads: run forwards one at a time
        self._coalesced = Coalescer(self._generate_batched)
        self._heads = HeadCache()
        self._yes_ids = self._single_token_ids(YES_WORDS)
        self._no_ids = self._single_token_ids(NO_WORDS)
        self._key = self.name if model is None else re.sub(r"[^\w.-]+", "_", str(model)).strip("_") + "-transformers"
        self.shortlist = self._load_shortlist() if shortlist_wanted(shortlist) else None

    def _load_shortlist(self) -> Shortlist | None:
        """The shortlist on the output head's rows (None for a head with a bias, which it does not model)."""
        head = self.model.get_output_embeddings()
        if getattr(head, "bias", None) is not None:
            log.warning("%s's output layer has a bias: scored tokens use the full softmax.", self.name)
            return None
        weight = head.weight
        ids = ranking(self._key, self._derive_shortlist)[:SIZE]
        rows = lambda i: weight[self._torch.as_tensor(i, device=weight.device)]  # noqa: E731
        return Shortlist(ids, rows, softcap=getattr(self.model.config, "final_logit_softcapping", None))

    def _derive_shortlist(self) -> np.ndarray:
        """Mean next-token distribution at every position of the bundled text's rows → :func:`derive`."""
        import numpy as np

        torch = self._torch
        rows = derivation_rows(lambda text: self._ids(text, start=True))
        total, count = torch.zeros(self.model.config.vocab_size, dtype=torch.float64, device=self.device), 0
        with self._lock, torch.inference_mode():
            for batch in self._chunks([len(r) for r in rows], range(len(rows))):
                hidden, _ = self._run([rows[i] for i in batch])
                states = torch.cat([hidden[b, : len(rows[i]) - 1] for b, i in enumerate(batch)])
                for s in range(0, len(states), 64):
                    total += torch.softmax(self._logits(states[s : s + 64]), dim=-1).sum(0, dtype=torch.float64)
                count += len(states)
        return derive((total / count).cpu().numpy().astype(np.float64))

    def clear_cache(self) -> None:
        """Forget the cached heads (benchmarks start cold)."""
        with self._lock:
            self._heads.clear()

    @property
    def context_window(self) -> int:
        """The model's max positions; on a CPU at most ``CPU_CONTEXT``, since attention memory and time grow with it."""
        positions = getattr(self.model.config, "max_position_embeddings", None) or CPU_CONTEXT
        return positions if self.device == "cuda" else min(positions, CPU_CONTEXT)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes as a generation prompt (chat template included where the model has one)."""
        return [len(self._prompt_ids(t)) for t in texts]

    # ---- text → ids
    def format(self, prompt: str) -> str:
        """Apply the chat template when the model has one; base models take the prompt as it is."""
        if not self.has_chat_template:
            return prompt
        # with tokenize=False the template renders text; transformers' return type does not overload on it
        return self.tokenizer.apply_chat_template(  # type: ignore[return-value]
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def _ids(self, text: str, *, start: bool) -> list[int]:
        """Token ids; ``start`` adds the BOS token (or EOS as a document separator when there is none)."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []
        if start:
            first = self.tokenizer.bos_token_id
            first = self.tokenizer.eos_token_id if first is None else first
            if not ids or ids[0] != first:
                ids = [first, *ids]
        return ids

    def _single_token_ids(self, words: Sequence[str]) -> list[int]:
        ids = {tuple(self.tokenizer(w, add_special_tokens=False)["input_ids"]) for w in words}
        return sorted({i[0] for i in ids if len(i) == 1})

    def _chunks(self, lengths: Sequence[int], order: Sequence[int], *, rows: int | None = None) -> Iterator[list[int]]:
        """Group indices (in ``order``) so each batch stays under the row and padded-token budgets."""
        rows = rows or self.batch_size
        batch: list[int] = []
        longest = 0
        for i in order:
            longest_if = max(longest, lengths[i])
            if batch and (len(batch) >= rows or longest_if * (len(batch) + 1) > self.max_batch_tokens):
                yield batch
                batch, longest_if = [], lengths[i]
            batch.append(i)
            longest = longest_if
        if batch:
            yield batch

    # ---- generation
    def _padded(self, rows: list[list[int]]) -> tuple[dict[str, Any], int]:
        """``generate``'s inputs for prompt rows, and the tokens they take from a head.

        The inputs are left-padded rows; or, when the rows share a head, the head from :meth:`_head` as the
        ``cache`` and the padding after it, so only the rest of each row runs (positions come from the
        attention mask).
        """
        torch = self._torch
        h = shared_head(rows, min(map(len, rows)) - 1)
        width = max(map(len, rows))
        window = getattr(self.model.config, "sliding_window", None)
        # a sliding window counts cells, padding included: padding inside a window would hide real tokens
        if h < HEAD_MIN or (window and width > window and min(map(len, rows)) < width):
            return dict(self.tokenizer.pad({"input_ids": rows}, return_tensors="pt").to(self.device)), 0
        cache, _ = self._head(rows[0][:h])
        cache.batch_repeat_interleave(len(rows))
        pad = self.tokenizer.pad_token_id
        ids = [r[:h] + [pad] * (width - len(r)) + r[h:] for r in rows]
        mask = [[1] * h + [0] * (width - len(r)) + [1] * (len(r) - h) for r in rows]
        tensor = functools.partial(torch.tensor, device=self.device)
        return {"input_ids": tensor(ids), "attention_mask": tensor(mask), "cache": cache}, h

    def _generate_kwargs(
        self, *, max_new_tokens: int, temperature: float, stop: Sequence[str] | None
    ) -> dict[str, Any]:
        """``model.generate``'s settings: greedy or pure temperature sampling, and the stop strings."""
        kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=1.0, top_k=0)
        else:
            kwargs.update(do_sample=False)
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=self.tokenizer)
        return kwargs

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
        """``n`` completions per prompt; all prompts and samples run as left-padded batches.

        Greedy decoding (``temperature=0``) returns ``n`` copies of one completion. ``seed`` seeds
        torch's global generator before each batch, for reproducible sampling. Calls from parallel
        graph branches with the same settings are decoded together (:mod:`causalrag.tools.coalesce`).
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
        torch = self._torch
        texts = [self.format(p) for p in prompts]
        encoded = [self.tokenizer(t, add_special_tokens=not self.has_chat_template)["input_ids"] for t in texts]
        samples = n if temperature > 0 else 1
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        lengths = [len(e) + max_new_tokens for e in encoded]
        outputs: list[list[str]] = [[] for _ in texts]
        kwargs = self._generate_kwargs(max_new_tokens=max_new_tokens, temperature=temperature, stop=stop)
        rows = max(1, self.batch_size // samples)
        for batch in self._chunks(lengths, order, rows=rows):
            ids = [encoded[i] for i in batch for _ in range(samples)]
            with self._lock, torch.inference_mode():
                enc, cached = self._padded(ids)
                if seed is not None:
                    torch.manual_seed(seed)
                out = self.model.generate(**enc, **kwargs)
            new = out[:, enc["input_ids"].shape[1] :]
            decoded = self.tokenizer.batch_decode(new, skip_special_tokens=True)
            for row, text in enumerate(decoded):
                outputs[batch[row // samples]].append(truncate_at_stop(text, stop))
            real_new = int((new != self.tokenizer.pad_token_id).sum())
            record(
                self.usage,
                Usage(
                    calls=len(batch) * n,
                    prompt_tokens=sum(map(len, ids)) - cached * len(ids),  # a head's tokens are counted where they run
                    new_tokens=real_new,
                    forward_passes=new.shape[1],
                ),
            )
        return [o * n if samples == 1 else o for o in outputs]

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        """Greedy completion of one prompt, yielded piece by piece as tokens are decoded.

        It never reads the head cache, so every call is ``exact``.
        """
        from transformers import TextIteratorStreamer

        torch = self._torch
        ids = self.tokenizer(self.format(prompt), add_special_tokens=not self.has_chat_template, return_tensors="pt")
        ids = ids.to(self.device)
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
        kwargs = self._generate_kwargs(max_new_tokens=max_new_tokens, temperature=0.0, stop=stop)
        result: dict[str, Any] = {}

        def run() -> None:
            try:
                with self._lock, torch.inference_mode():
                    result["out"] = self.model.generate(**ids, **kwargs, streamer=streamer)
            except BaseException as exc:  # surface errors from the worker thread in the caller
                result["error"] = exc
                streamer.end()

        # copy the context so usage lands in the caller's meters
        worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
        worker.start()
        hold = max((len(s) for s in stop or ()), default=1) - 1
        text, sent = "", 0
        for piece in streamer:
            text += piece
            cut = truncate_at_stop(text, stop)
            if len(cut) < len(text):  # a stop string appeared: send what precedes it and finish
                text = cut
                for _ in streamer:  # drain the rest so the worker can finish
                    pass
                break
            if len(text) - hold > sent:
                yield text[sent : len(text) - hold]
                sent = len(text) - hold
        worker.join()
        if "error" in result:
            raise result["error"]
        if len(text) > sent:
            yield text[sent:]
        new = result["out"][0, ids["input_ids"].shape[1] :]
        record(
            self.usage,
            Usage(calls=1, prompt_tokens=ids["input_ids"].shape[1], new_tokens=len(new), forward_passes=len(new)),
        )

    # ---- scoring
    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Output-layer logits for a few hidden states (never the whole sequence × vocabulary)."""
        logits = self.model.get_output_embeddings()(hidden).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        capped: torch.Tensor = self._torch.tanh(logits / cap) * cap if cap else logits
        return capped

    def _token_logprobs(self, hidden: torch.Tensor, targets: torch.Tensor) -> list[float]:
        """Log p(target | position) for rows of ``hidden``, in slices to bound the vocabulary-sized memory."""
        torch = self._torch
        out: list[float] = []
        step = max(1, 2**27 // max(1, self.model.config.vocab_size))  # ≈ 512 MB of fp32 logits at most
        for s in range(0, hidden.shape[0], step):
            logp = torch.log_softmax(self._logits(hidden[s : s + step]), dim=-1)
            out += logp.gather(1, targets[s : s + step, None])[:, 0].tolist()
        return out

    def _run(self, ids: list[list[int]], **kwargs: Any) -> tuple[torch.Tensor, Cache | None]:
        """One forward pass of the decoder over right-padded rows.

        Returns:
            The last hidden states, and the KV cache when asked for (``use_cache=True``; else None).
        """
        torch = self._torch
        width = max(map(len, ids))
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in ids], device=self.device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ids], device=self.device)
        past = kwargs.get("cache")
        if past is not None:
            offset = past.get_seq_length()
            mask = torch.cat([torch.ones(len(ids), offset, dtype=mask.dtype, device=self.device), mask], dim=1)
            kwargs["position_ids"] = torch.arange(offset, offset + width, device=self.device)[None].expand(len(ids), -1)
        out = self.model.get_decoder()(input_ids=input_ids, attention_mask=mask, **kwargs)
        record(self.usage, Usage(prompt_tokens=int(sum(map(len, ids))), forward_passes=1))
        assert out.last_hidden_state is not None, "a decoder returns its hidden states"
        return out.last_hidden_state, out.cache

    def _head(self, tokens: list[int]) -> Head:
        """A fresh KV cache (batch of one) holding ``tokens``, and the last one's hidden state.

        The longest stored head they start with is extended by the rest, and the result stored as a head.
        """
        n, stored = self._heads.longest(tokens)
        if n < len(tokens):
            hidden, cache = self._run([tokens[n:]], cache=copy.deepcopy(stored[0]) if stored else None, use_cache=True)
            assert cache is not None, "use_cache=True returns the cache"
            stored = (cache, hidden[:, -1:])
            self._heads.put(tokens, stored)
        assert stored is not None, "a stored head holds every token, or one was just run"
        return copy.deepcopy(stored[0]), stored[1]

    def _hidden(self, rows: list[list[int]], limit: int) -> tuple[torch.Tensor, int]:
        """Last hidden states of a batch of rows (right-padded) and the offset that maps a position to its column.

        The rows' shared head (at most ``limit`` tokens) comes from :meth:`_head`; the rest of each row
        runs after a copy of its cache. Position ``p`` of a row is column ``p - offset``.
        """
        h = shared_head(rows, limit)
        if h < HEAD_MIN:
            return self._run(rows)[0], 0
        cache, last = self._head(rows[0][:h])
        cache.batch_repeat_interleave(len(rows))
        hidden, _ = self._run([r[h:] for r in rows], cache=cache, use_cache=True)
        return self._torch.cat([last.expand(len(rows), -1, -1), hidden], dim=1), h - 1

    def _score_rows(self, seqs: list[list[int]], starts: list[int]) -> list[list[float]]:
        """Log p of every token of each row from ``starts[r]`` on, given the tokens before it (one batch)."""
        hidden, offset = self._hidden(seqs, min(starts))
        rows: list[int] = []
        cols: list[int] = []
        where: list[tuple[int, int]] = []
        for r, (seq, start) in enumerate(zip(seqs, starts, strict=True)):
            for pos in range(start, len(seq)):
                rows.append(r)
                cols.append(pos - 1 - offset)
                where.append((r, pos))
        if self.shortlist is not None:
            lps = self.shortlist.logprobs(hidden[rows, cols], seqs, where)
        else:
            targets = self._torch.tensor([seqs[r][p] for r, p in where], device=self.device)
            lps = self._token_logprobs(hidden[rows, cols], targets)
        out, k = [], 0
        for seq, start in zip(seqs, starts, strict=True):
            out.append(lps[k : k + len(seq) - start])
            k += len(seq) - start
        return out

    def _score_ids(self, prefixes: list[list[int]], conts: list[list[int]]) -> list[list[float]]:
        """Per-token log-probs of each continuation after its prefix (token ids).

        Continuations of one prefix (a prompt's options) are batched apart, so their head is the whole
        prefix; the others are batched together in token order, so their head is what neighbours share.
        The prefix every row shares (the few-shot header) runs first, once, as a head the others extend.
        """
        torch = self._torch
        seqs = [p + c for p, c in zip(prefixes, conts, strict=True)]
        result: list[list[float]] = [[] for _ in conts]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in range(len(conts)):
            if conts[i]:
                groups.setdefault(tuple(prefixes[i]), []).append(i)
        singles = sorted((m[0] for m in groups.values() if len(m) == 1), key=seqs.__getitem__)
        lengths = [len(s) for s in seqs]
        shared = [sorted(m, key=lengths.__getitem__) for m in groups.values() if len(m) > 1]  # by length: least padding
        batches = [b for m in shared for b in self._chunks(lengths, m)] + list(self._chunks(lengths, singles))
        with self._lock, torch.inference_mode():
            if len(groups) > 1 and (h := shared_head(list(groups))) >= HEAD_MIN:
                self._head(list(next(iter(groups)))[:h])
            for batch in batches:
                for i, lps in zip(
                    batch, self._score_rows([seqs[i] for i in batch], [len(prefixes[i]) for i in batch]), strict=True
                ):
                    result[i] = lps
        return result

    def token_logprobs(self, prefixes: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """Per-token log p(continuation token | prefix, earlier tokens) of raw text, batched.

        Callers keep the space between prefix and continuation in the continuation (``"Answer:"`` + ``" Paris"``).
        """
        if len(prefixes) != len(continuations):
            raise ValueError("logprob needs one prefix per continuation.")
        pre = {p: self._ids(p, start=True) for p in set(prefixes)}
        result = self._score_ids([pre[p] for p in prefixes], [self._ids(c, start=False) for c in continuations])
        record(self.usage, Usage(calls=len(continuations)))
        return result

    def _prompt_ids(self, prompt: str) -> list[int]:
        """Ids of a prompt as generation sees it: chat-formatted with its special tokens, or BOS + text."""
        ids: list[int] = self.tokenizer(self.format(prompt), add_special_tokens=not self.has_chat_template)["input_ids"]
        return ids

    def option_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[list[list[float]]]:
        """Token log-probs of every option as the reply to its (chat-formatted) prompt; each prompt runs once."""
        heads = [self._prompt_ids(p) for p in prompts]
        prefixes = [h for h, opts in zip(heads, options, strict=True) for _ in opts]
        conts = [
            self._ids(self.reply_text(p, o), start=False)
            for p, opts in zip(prompts, options, strict=True)
            for o in opts
        ]
        flat = self._score_ids(prefixes, conts)
        record(self.usage, Usage(calls=len(prompts)))
        return regroup(flat, [len(opts) for opts in options])

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum") -> list[float]:
        """Sum (or mean) of token log-probs of each continuation given its prefix; 0.0 for an empty one."""
        return reduce_logprobs(self.token_logprobs(prefixes, continuations), reduce)

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) for the next token after each (chat-formatted) prompt."""
        torch = self._torch
        ids = [
            self.tokenizer(self.format(p), add_special_tokens=not self.has_chat_template)["input_ids"] for p in prompts
        ]
        probs: list[float] = [0.5] * len(ids)
        order = sorted(range(len(ids)), key=ids.__getitem__)  # token order: neighbours share a head
        for batch in self._chunks([len(i) for i in ids], order):
            with self._lock, torch.inference_mode():
                hidden, offset = self._hidden([ids[i] for i in batch], min(len(ids[i]) for i in batch) - 1)
                last = hidden[list(range(len(batch))), [len(ids[i]) - 1 - offset for i in batch]]
                if self.shortlist is None:
                    p = torch.softmax(self._logits(last), dim=-1)
                    yes, no = p[:, self._yes_ids].sum(-1), p[:, self._no_ids].sum(-1)
                else:  # the normalizer cancels in the share: project the yes/no words only
                    logits = self.shortlist.logits(last, self._yes_ids + self._no_ids)
                    p = torch.softmax(torch.as_tensor(logits), dim=-1)
                    yes, no = p[:, : len(self._yes_ids)].sum(-1), p[:, len(self._yes_ids) :].sum(-1)
                share = (yes / (yes + no).clamp_min(1e-12)).tolist()
            for i, s in zip(batch, share, strict=True):
                probs[i] = float(s)
        record(self.usage, Usage(calls=len(ids)))
        return probs
