"""Scored tokens with the normalizer over a shortlist of the vocabulary, not all of it.

A scored token's log-probability is its logit minus a normalizer: ``log p(t | h) = l_t − log Σ_v exp(l_v)``
with ``l = W h``. At the bundled model's 262,144-entry vocabulary, projecting a hidden state on every row
of ``W`` (and summing) is most of a scored token's cost. :class:`Shortlist` projects only the rows of

* a **fixed shortlist** F of :data:`SIZE` tokens: the tokens on which the model itself puts the most
  probability, averaged over the positions of the bundled English text (:func:`derivation_rows`: the
  first :data:`DERIVE_TOKENS` tokens of each passage of the demo collection — the 200 HotpotQA-20
  paragraphs and the handwritten demo passages). That mean next-token distribution is the model's
  estimate of English token frequencies; it covers more of the normalizer than counting tokens of a
  text, or the tokenizer's merge ranks (the comparison is in ``benchmarks/shortlist.py``'s docstring);
* **the row's own tokens** up to and including the scored one: a model copies from its context, so the
  names and rare words it has just read carry much of the mass outside F, and the scored token is always in.

The sum over that subset is below the full one, so a log-probability comes out slightly high (never
low); ``benchmarks/shortlist.py`` measures by how much on the methods' own scored calls, and whether
any choice or ranking changes (its figures: docs/performance.md, "Scored tokens over a shortlist").
Only the normalizer is approximate: a logit itself is the full model's (llama.cpp: reproduced to ~1e-5
from its final hidden state, see :class:`Shortlist`). :meth:`Shortlist.logits` serves scores that need
no normalizer (``yes_probability``'s P(yes)/(P(yes)+P(no))) exactly.

**Off by default**: it would be the default only if its answers agreed with the full softmax's (≥ 99 % of
choices and rankings), and they do not quite: choices keep their best option and P(yes) shares barely move,
but a CIS ranking can change its order, since a passage's log-prob sums the errors of ~40–100 tokens (the
agreement measured: docs/performance.md, "Scored tokens over a shortlist"). ``CAUSALRAG_SHORTLIST=1`` (or a
backend's ``shortlist=True``) turns it on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from causalrag.errors import CausalRAGError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

ENV = "CAUSALRAG_SHORTLIST"
SIZE = 65536
"""Tokens in the fixed shortlist: 1/4 of the bundled model's vocabulary, so a projection 1/4 of the full one.

Half as many tokens err several times more per scored token (the sizes compared: ``benchmarks/shortlist.py``'s
docstring and docs/performance.md, "Scored tokens over a shortlist").
"""
RANKED = 65536
"""Tokens a derived ranking keeps (the shortlist is its first ``size``)."""
DERIVE_TOKENS = 32
"""Tokens of each bundled passage whose next-token distributions are averaged to derive the shortlist."""
CHUNK = 256
"""Scored positions projected together (bounds memory: CHUNK × SIZE floats)."""


def shortlist_wanted(value: bool | None = None) -> bool:
    """``value`` when given, else ``CAUSALRAG_SHORTLIST``: on for ``1``, ``true``, ``on`` or ``yes``; off when unset."""
    if value is not None:
        return value
    text = (os.environ.get(ENV) or "0").strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise CausalRAGError(f"{ENV}={text!r} is not on or off: set it to 1 or 0, or unset it.")


def derivation_rows(tokenize: Callable[[str], list[int]], tokens: int = DERIVE_TOKENS) -> list[list[int]]:
    """Token rows whose positions the shortlist is derived from: the start of every bundled passage."""
    from causalrag.corpus import demo_passages

    return [tokenize(f"{p.title}. {p.text}")[: tokens + 1] for p in demo_passages()]


def derive(mean_probability: np.ndarray, size: int = RANKED) -> np.ndarray:
    """The ``size`` tokens of highest mean probability, most probable first (ties by token id: reproducible)."""
    order = np.lexsort((np.arange(len(mean_probability)), -np.asarray(mean_probability, dtype=np.float64)))
    return order[:size].astype(np.int32)


def ranking(model: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The derived token ranking of ``model`` (a file-name key), most probable token first.

    Shipped in ``causalrag/data`` for the bundled model; for another model ``compute()`` (:func:`derive`)
    runs once and its result is kept in the model cache (``CAUSALRAG_CACHE``).
    """
    from causalrag.config import settings
    from causalrag.corpus import DATA

    shipped = DATA / f"shortlist-{model}.npy"
    path = shipped if shipped.exists() else settings().model_cache / f"{model}-shortlist.npy"
    if path.exists():
        stored: np.ndarray = np.load(path)
        return stored
    log.warning("Deriving the scored-token shortlist of %s once into %s (about a minute).", model, path)
    ids = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npy")
    np.save(tmp, ids)
    tmp.replace(path)
    return ids


def quantize_q8_0(hidden: torch.Tensor) -> torch.Tensor:
    """The activations as llama.cpp's Q8_0 dot products see them.

    Blocks of 32 values, an fp16 scale each, values rounded to the nearest integer of ±127: projecting
    these reproduces llama.cpp's logits to ~1e-5, not ~0.03.
    """
    import torch

    blocks = hidden.reshape(hidden.shape[0], -1, 32)
    amax = blocks.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, 127.0 / torch.where(amax > 0, amax, torch.ones_like(amax)), torch.zeros_like(amax))
    scale = (amax / 127.0).to(torch.float16).to(hidden.dtype)
    return (torch.round(blocks * inverse) * scale).reshape(hidden.shape)


class Shortlist:
    """Log-probs of scored tokens from final hidden states, over the shortlist's and the row's own tokens.

    Only the output matrix's rows of the fixed shortlist and of each row's own tokens are projected.

    ``fixed``: the fixed shortlist's token ids; ``rows(ids)``: those rows of the output matrix as a torch
    tensor (any ids; the fixed ones are fetched once); ``softcap``: the model's final logit soft-capping
    (Gemma 2), if any; ``prepare``: what the backend does to a hidden state before its projection (llama.cpp:
    :func:`quantize_q8_0` for a Q8_0 output matrix).
    """

    def __init__(
        self,
        fixed: npt.ArrayLike,
        rows: Callable[[np.ndarray], torch.Tensor],
        *,
        softcap: float | None = None,
        prepare: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        self.fixed = np.unique(np.asarray(fixed, dtype=np.int64))
        self._rows = rows
        self._fixed_rows = rows(self.fixed)
        self.softcap = softcap
        self.prepare = prepare

    def __len__(self) -> int:
        return len(self.fixed)

    def _project(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        logits = (hidden.to(weight.dtype) @ weight.T).float()
        return (logits / self.softcap).tanh() * self.softcap if self.softcap else logits

    def _hidden(self, hidden: npt.ArrayLike | torch.Tensor) -> torch.Tensor:
        import torch

        states = torch.as_tensor(hidden, device=self._fixed_rows.device)
        return self.prepare(states) if self.prepare is not None else states

    def logits(self, hidden: npt.ArrayLike | torch.Tensor, ids: npt.ArrayLike) -> np.ndarray:
        """The full model's logits of ``ids`` at each hidden state (exact: no normalizer involved)."""
        rows = self._rows(np.asarray(ids, dtype=np.int64))
        return self._project(self._hidden(hidden), rows).cpu().numpy()

    def logprobs(
        self,
        hidden: npt.ArrayLike | torch.Tensor,
        rows: Sequence[Sequence[int]] | Mapping[int, Sequence[int]],
        where: Sequence[tuple[int, int]],
    ) -> list[float]:
        """Log-probs of scored tokens, one per ``where[k] = (r, p)``.

        Each is log p of token ``rows[r][p]`` given the hidden state ``hidden[k]`` (that of position
        ``p − 1``); the normalizer runs over the fixed shortlist and ``rows[r][: p + 1]``.
        """
        import torch

        if not len(where):
            return []
        fixed = set(self.fixed.tolist())
        reach: dict[int, int] = {}
        for r, p in where:
            reach[r] = max(reach.get(r, -1), p)
        first: dict[int, dict[int, int]] = {}  # per row: each token outside the shortlist → its first position
        for r, end in reach.items():
            seen: dict[int, int] = {}
            for p, token in enumerate(rows[r][: end + 1]):
                if token not in fixed and token not in seen:
                    seen[token] = p
            first[r] = seen
        extra = np.array(sorted({t for seen in first.values() for t in seen}), dtype=np.int64)
        column = {int(t): c for c, t in enumerate(extra)}
        extra_rows = self._rows(extra) if len(extra) else None
        at = np.full((len(reach), len(extra)), np.iinfo(np.int64).max, dtype=np.int64)
        row_index = {r: i for i, r in enumerate(reach)}
        for r, seen in first.items():
            for token, p in seen.items():
                at[row_index[r], column[token]] = p
        out: list[float] = []
        hidden = self._hidden(hidden)
        for start in range(0, len(where), CHUNK):
            part = where[start : start + CHUNK]
            targets = np.array([rows[r][p] for r, p in part], dtype=np.int64)
            logits = self._project(hidden[start : start + len(part)], self._fixed_rows)
            norm = torch.logsumexp(logits, dim=-1)
            k = torch.arange(len(part), device=logits.device)
            in_fixed = np.isin(targets, self.fixed)
            target = torch.empty(len(part), device=logits.device)
            target[in_fixed] = logits[
                k[in_fixed], torch.as_tensor(np.searchsorted(self.fixed, targets[in_fixed]), device=logits.device)
            ]
            if extra_rows is not None:
                logits = self._project(hidden[start : start + len(part)], extra_rows)
                reached = at[[row_index[r] for r, _ in part]] <= np.array([p for _, p in part])[:, None]
                logits = logits.masked_fill(~torch.as_tensor(reached, device=logits.device), -torch.inf)
                norm = torch.logaddexp(norm, torch.logsumexp(logits, dim=-1))
                outside = ~in_fixed
                target[outside] = logits[
                    k[outside],
                    torch.as_tensor([column[int(t)] for t in targets[outside]], dtype=torch.long, device=logits.device),
                ]
            out += (target - norm).tolist()
        return out


def mean_probability(log_softmax_rows: Iterable[np.ndarray], vocabulary: int) -> np.ndarray:
    """The mean of ``exp(rows)`` (each a full log-softmax over the vocabulary): the derivation's statistic."""
    total, count = np.zeros(vocabulary, dtype=np.float64), 0
    for row in log_softmax_rows:
        total += np.exp(np.asarray(row, dtype=np.float64))
        count += 1
    if not count:
        raise ValueError("the shortlist needs at least one position to derive from.")
    return total / count
