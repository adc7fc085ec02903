"""Astute RAG prompts (Wang et al., 2024, Appendix A), in our own words, and their tolerant parsers.

Four prompts, one per stage of the paper:

* :func:`internal_prompt` — §3.3 adaptive generation of internal knowledge: at most m̂ passages
  from the model's memory, or "I don't know" when unsure (the paper's constitutional principle);
* :func:`consolidate_prompt` — §3.4 source-aware consolidation ``p_con``: group agreeing passages,
  separate conflicting ones, drop irrelevant ones, keep the source labels;
* :func:`propose_prompt` and :func:`select_prompt` — §3.5 answer finalization ``p_ans``, split in
  two: one answer with a confidence per group, then the most reliable answer between markers;
* :func:`combined_prompt` — the paper's merged last step (consolidate + answer + select in one
  call; with t = 1 it runs on the initial passages only).

Shared prefix: the consolidation rounds and the combined step all start with :func:`pool_block` (task,
worked example, D₀, the last groups), so each round after the first reads D₀ from the cache.

The default model is a 270M *base* model, so every output format is short and line-based
(``Group 1 [ext 2, int 1]: claim``) and taught by one tiny worked example; instruct models get
the same text through their chat template. Retrieved passages are data: :func:`passage_text`
collapses whitespace and turns brackets and angle brackets into parentheses, so a passage can
neither open a prompt line of its own nor forge a source label (``[ext 1]``) or an answer marker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from causalrag.prompts.common import inert
from causalrag.state.astute import Candidate, Group
from causalrag.text import between, clean_answer, one_line, parse_float

EXTERNAL, INTERNAL = "ext", "int"
"""Source labels: a retrieved passage is ``ext i``, a passage from the model's memory ``int i`` (§3.4, S₀)."""
OPEN, CLOSE = "<answer>", "</answer>"
"""Markers around the final answer (§4.1: the exact answer is enclosed in special tokens)."""
ABSTAIN = "I don't know"
BLOCK_STOP = ("\n\n", "\nQuestion:", "\nPassages:")
LINE_STOP = ("\n",)

def passage_text(text: str) -> str:
    """A passage (or a model-written claim) as inert data: one line, no labels, brackets or markers."""
    return inert(text)


def label_of(doc: Document) -> str:
    """The passage's source label (``ext 2``, ``int 1``), empty when it has none."""
    label: str = doc.metadata.get("label", "")
    return label


def format_pool(pool: Sequence[Document]) -> str:
    """``[ext 2] Title: text`` / ``[int 1] memory: text`` lines, in the order given."""
    lines = []
    for doc in pool:
        title = doc.metadata.get("title") or ("memory" if label_of(doc).startswith(INTERNAL) else "")
        body = passage_text(doc.page_content)
        lines.append(f"[{label_of(doc)}] {passage_text(title)}: {body}" if title else f"[{label_of(doc)}] {body}")
    return "\n".join(lines)


def format_groups(groups: Sequence[Group], *, answers: bool = False) -> str:
    """``Group i [labels]: claim`` lines (with ``| answer: a | confidence: c`` when ``answers``)."""
    lines = []
    for i, g in enumerate(groups, 1):
        line = f"Group {i} [{', '.join(g['sources'])}]: {passage_text(g.get('claim', ''))}"
        if answers:
            line += f" | answer: {passage_text(g.get('answer') or '')} | confidence: {confidence_out_of_10(g)}"
        lines.append(line)
    return "\n".join(lines)


def confidence_out_of_10(group: Group) -> int:
    """The group's confidence share in [0, 1] as the 0-10 score the prompts show (0 when missing)."""
    return round(10 * float(group.get("confidence") or 0.0))


# --------------------------------------------------------------------------- §3.3 internal knowledge
_INTERNAL_EXAMPLE = (  # the abstention first, so a base model does not simply copy the last example
    "Question: What is the population of the village of Brackwell "
    f"Minor?\n{ABSTAIN}.\n\nQuestion: Who painted the Mona Lisa?\nPassage: The Mona Lisa is a "
    "portrait painted by the Italian artist Leonardo da Vinci in the early 1500s.\n\n"
)


def internal_prompt(question: str, max_passages: int) -> str:
    """Ask for at most ``max_passages`` (m̂) passages from memory, fewer or none when unsure."""
    most = "one short passage" if max_passages == 1 else f"at most {max_passages} short passages, one per line"
    return (
        f"From your own memory, write {most} with accurate facts that answer the question, "
        f'each line starting with "Passage:". Write fewer when unsure; if you do not know, write "{ABSTAIN}" '
        f"instead of guessing.\n\n{_INTERNAL_EXAMPLE}Question: {one_line(question)}\n"
    )


def parse_internal(text: str, max_passages: int) -> list[str]:
    """Passages from memory: ``Passage:`` lines (or plain lines), abstentions dropped, at most m̂.

    An empty list is a valid outcome (the model abstained), not a parse failure.
    """
    passages = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:passage|document)\s*\d*\s*[:.\-]\s*", "", line, flags=re.IGNORECASE).strip()
        if len(line.split()) < 3 or "don't know" in line.lower() or "do not know" in line.lower():
            continue
        passages.append(line)
    return passages[:max_passages]


# --------------------------------------------------------------------------- §3.4 consolidation
_POOL_EXAMPLE = (
    "[ext 4] Skiing: Norway is known for cross-country skiing.\n"
    "[ext 3] Fjord cruises: A cruise site claims that Bergen is the capital of Norway.\n"
    "[ext 2] Oslo: Oslo is the capital and most populous city of Norway.\n"
    "[ext 1] Norway: Norway's capital, Oslo, lies at the head of the Oslofjord.\n"
    "[int 1] memory: The capital of Norway is Oslo."
)
# agreeing sources in one group, the conflicting one apart, the irrelevant one (ext 4) left out
_GROUPS_EXAMPLE: tuple[Candidate, ...] = (
    {"sources": ["ext 1", "ext 2", "int 1"], "claim": "Oslo is the capital", "answer": "Oslo", "confidence": 0.9},
    {"sources": ["ext 3"], "claim": "a cruise site says Bergen", "answer": "Bergen", "confidence": 0.3},
)
_EXAMPLE_QUESTION = "What is the capital of Norway?"



def echoes_example(group: Mapping[str, object], passages: str) -> bool:
    """True when a group (or its answer) repeats the worked example instead of the real passages.

    Small base models copy few-shot examples verbatim; a claim equal to an example claim, or an
    example answer ("Oslo", "Bergen") in the answer or claim while no passage mentions it
    ("a cruise site says Bergen is the capital" over a passage about films), is such a copy and
    is dropped by the caller.
    """
    claims = {words(g["claim"]) for g in _GROUPS_EXAMPLE}
    answers = {words(g["answer"]) for g in _GROUPS_EXAMPLE}
    texts = (str(group.get("claim") or ""), str(group.get("answer") or ""), passages)
    claim, answer, source = (f" {words(t)} " for t in texts)
    foreign = {a for a in answers if f" {a} " not in source}  # example answers these passages never mention
    return claim.strip() in claims or answer.strip() in foreign or any(f" {a} " in claim for a in foreign)


def words(text: str) -> str:
    """Lower-cased word tokens joined by single spaces (for comparing answers and claims)."""
    return " ".join(re.findall(r"\w+", text.lower()))


_CONSOLIDATE_TASK = (
    "Consolidate the passages (ext = retrieved, int = from memory). Put passages that agree in one group "
    "and passages that conflict in separate groups; leave out passages that do not help answer the question. "
    "Write one line per group: its passage labels in brackets, then what they say in a few words."
)


def pool_block(pool: Sequence[Document], last: Sequence[Group] = ()) -> str:
    """The head every consolidation round and the combined last step share.

    It holds the task, the worked example, the initial passages D₀ (§3.4 and §3.5 both read ⟨D₀,S₀⟩),
    then the last groups Dⱼ when there are any.

    D₀ is the same in every round, so from the second round on (and in the combined step) the cache
    already holds everything up to the earlier groups.
    """
    example = (
        f"Passages:\n{_POOL_EXAMPLE}\nQuestion: {_EXAMPLE_QUESTION}\nGroups:\n{format_groups(_GROUPS_EXAMPLE)}\n\n"
    )
    earlier = f"Earlier groups:\n{format_groups(last)}\n" if last else ""
    return f"{_CONSOLIDATE_TASK}\n\n{example}Passages:\n{format_pool(pool)}\n{earlier}"


def consolidate_prompt(question: str, pool: Sequence[Document], last: Sequence[Group] = ()) -> str:
    """``p_con``: regroup the initial passages D₀ (and the last groups Dⱼ, from the second round on)."""
    return f"{pool_block(pool, last)}Question: {one_line(question)}\nGroups:\n"


_GROUP_LINE = re.compile(r"^\W*(?:group\s*\d*\s*)?\[([^\]\n]*)\]\s*[:\-]?\s*(.*)$", re.IGNORECASE)
_LABEL = re.compile(rf"\b({EXTERNAL}|{INTERNAL})\w*\s*#?\s*(\d+)", re.IGNORECASE)


@dataclass
class GroupParse:
    """The groups parsed from a consolidation reply, and how many labels named no passage."""

    groups: list[Group]
    unknown_labels: int
    """Labels the model wrote that name no passage of the pool (dropped)."""


def parse_groups(text: str, known: Sequence[str]) -> GroupParse:
    """``Group i [labels]: claim`` lines → groups; labels outside ``known`` and label-less groups dropped.

    Tolerates extra text between lines, missing ``Group i`` prefixes, ``ext1``/``Ext #1`` spellings
    and a trailing ``| answer: … | confidence: …`` (the combined prompt's fields).
    """
    groups: list[Group] = []
    unknown = 0
    for line in text.splitlines():
        m = _GROUP_LINE.match(line)
        if not m:
            continue
        labels: list[str] = []
        for kind, num in _LABEL.findall(m.group(1)):
            label = f"{kind.lower()} {int(num)}"
            if label not in known:
                unknown += 1
            elif label not in labels:
                labels.append(label)
        if not labels:
            continue
        claim, *fields = (part.strip() for part in m.group(2).split("|"))
        group: Group = {"sources": labels, "claim": claim}
        for field in fields:
            name, _, value = field.partition(":")
            if name.strip().lower() == "answer" and clean_answer(value):
                group["answer"] = clean_answer(value)
            elif name.strip().lower() == "confidence":
                group["confidence"] = parse_confidence(value)
        groups.append(group)
    return GroupParse(groups, unknown)


def parse_confidence(text: str) -> float | None:
    """A 0-10 score (``8``, ``8/10``, ``0.8``, ``80%``) as a share in [0, 1]."""
    value = parse_float(text)  # already a share for "80%"
    if value is None:
        return None
    share = value if "%" in text or ("." in text and value <= 1) else value / 10
    return min(1.0, max(0.0, share))


# --------------------------------------------------------------------------- §3.5 finalization
_PROPOSE_TASK = (
    "Answer the question with a short phrase from the passages, then rate from 0 to 10 how reliable "
    "the answer is: sources that agree, retrieved and from memory, make it more reliable."
)


def propose_prompt(question: str, group: Group, members: Sequence[Document]) -> str:
    """One group's answer and confidence (§3.5: an answer per group of passages, with a confidence)."""
    g = _GROUPS_EXAMPLE[0]
    example_members = "\n".join(line for line in _POOL_EXAMPLE.splitlines() if line.split("]")[0][1:] in g["sources"])
    example = (
        f"Passages:\n{example_members}\nSummary: {g['claim']}\nQuestion: {_EXAMPLE_QUESTION}\n"
        f"Answer: {g['answer']}\nConfidence: {confidence_out_of_10(g)}\n\n"
    )
    return (
        f"{_PROPOSE_TASK}\n\n{example}Passages:\n{format_pool(members)}\nSummary: "
        f"{passage_text(group.get('claim', ''))}\n"
        f"Question: {one_line(question)}\nAnswer:"
    )


def parse_proposal(text: str) -> tuple[str, float | None]:
    r"""``" Oslo\nConfidence: 9"`` → ("Oslo", 0.9); the confidence is None when missing."""
    answer = clean_answer(text.split("\n")[0])
    rest = text[len(text.split("\n")[0]) :]
    m = re.search(r"confidence\s*[:=]?\s*([^\n]*)", rest, re.IGNORECASE)
    return answer, parse_confidence(m.group(1)) if m else None


_SELECT_TASK = (
    "Each group of sources proposes an answer. Choose the most reliable one: prefer answers that several sources "
    f"confirm, retrieved and from memory alike, and a higher confidence. Write it between {OPEN} and {CLOSE}."
)


def select_prompt(question: str, candidates: Sequence[Candidate]) -> str:
    """Compare the groups' answers and pick one (§3.5), answer between markers."""
    example = (
        f"Question: {_EXAMPLE_QUESTION}\n{format_groups(_GROUPS_EXAMPLE, answers=True)}\n"
        f"Final: {OPEN}{_GROUPS_EXAMPLE[0]['answer']}{CLOSE}\n\n"
    )
    return (
        f"{_SELECT_TASK}\n\n{example}Question: {one_line(question)}\n{format_groups(candidates, answers=True)}\nFinal:"
    )


_COMBINED_TASK = (
    "This time, after each group's claim, give the group's answer and a 0-10 confidence (sources that agree, "
    "retrieved and from memory, raise it). Then choose the most reliable answer and write it between "
    f"{OPEN} and {CLOSE}. For the example above:\n{format_groups(_GROUPS_EXAMPLE, answers=True)}\n"
    f"Final: {OPEN}{_GROUPS_EXAMPLE[0]['answer']}{CLOSE}"
)


def combined_prompt(question: str, pool: Sequence[Document], last: Sequence[Group] = ()) -> str:
    """The merged last step ``a = M(p_ans, q, ⟨D₀,S₀⟩, ⟨Dₜ,Sₜ⟩)``; with no ``last`` groups it is the t = 1 shortcut.

    It starts with the consolidation rounds' :func:`pool_block` (the cache holds it from the last round) and
    only then asks for answers, confidences and the final choice, with the worked example's answers.
    """
    return f"{pool_block(pool, last)}{_COMBINED_TASK}\nQuestion: {one_line(question)}\nGroups:\n"


def parse_final(text: str) -> str | None:
    """The answer between the markers (closing marker optional); None when the opening marker is missing."""
    inside = between(text, OPEN, CLOSE)
    return (clean_answer(inside) or None) if inside is not None else None


def parse_choice(text: str) -> str | None:
    """The selection's answer: between the markers, else an ``answer:`` field.

    Small models answer in the group-line format they just read:
    ``Laleli Mosque | answer: Yes | confidence: 10``.
    """
    field = re.search(r"\banswer\s*[:=]\s*([^|\n]*)", text, re.IGNORECASE)
    return parse_final(text) or (clean_answer(field.group(1)) or None if field else None)
