"""A deterministic fake LLM for unit tests of graph logic (routing, thresholds, loops, parsing)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence

from causalrag.tools.backends.base import Judge, regroup, truncate_at_stop
from causalrag.tools.usage import Usage, record

Reply = str | list[str] | Callable[[str], str]


class FakeLLM(Judge):
    """Replies by rules on the prompt text; records every prompt for assertions.

    ``replies`` maps a substring (or regex, with ``regex=True``) of the prompt to a reply: a
    string, a list (successive calls/samples cycle through it) or a function of the prompt.
    The first matching rule wins; ``default`` answers the rest. ``logprob`` and ``yes`` are
    functions of (prefix, continuation) and of the prompt; ``option`` scores an option of a
    scored choice, ``option(prompt, option) -> log-prob`` (default: the ``logprob`` rule), and
    ``choose`` records every (prompt, options) it is asked in ``choices``. A token is a punctuation
    mark or up to 8 letters of a word (``count_tokens``), and ``context_window`` bounds prompt + reply like a real
    model's; with ``enforce_window`` a prompt that overflows it raises, as llama.cpp's full context does.
    """

    name = "fake"

    def __init__(
        self,
        replies: dict[str, Reply] | None = None,
        *,
        default: Reply = "unknown",
        logprob: Callable[[str, str], float] | None = None,
        yes: Callable[[str], float] | None = None,
        option: Callable[[str, str], float] | None = None,
        regex: bool = False,
        context_window: int = 8192,
        enforce_window: bool = False,
    ) -> None:
        self.rules = list((replies or {}).items())
        self.default = default
        self._logprob = logprob or (lambda prefix, cont: -float(len(cont.split())))
        self._yes = yes or (lambda prompt: 0.5)
        self._option = option
        self.choices: list[tuple[str, tuple[str, ...]]] = []
        self.regex = regex
        self.context_window = context_window
        self.enforce_window = enforce_window
        self.prompts: list[str] = []
        self.scored: list[tuple[str, str]] = []
        self.exact_streams: list[bool] = []  # the ``exact`` flag of each stream call
        self.usage = Usage()
        self._cycles: dict[int, Iterator[str]] = {}

    def _reply(self, prompt: str) -> str:
        reply = next(
            (reply for key, reply in self.rules if (re.search(key, prompt) if self.regex else key in prompt)),
            self.default,
        )
        if callable(reply):
            return reply(prompt)
        if isinstance(reply, list):
            cycle = self._cycles.setdefault(id(reply), itertools.cycle(reply))
            return next(cycle)
        return reply

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [
            sum(-(-len(w) // 8) for w in re.findall(r"\w+|[^\w\s]", t)) for t in texts
        ]  # a long word is several tokens

    def _check_window(self, texts: Sequence[str], reply_tokens: int = 0) -> None:
        if self.enforce_window:
            for tokens in self.count_tokens(texts):
                if tokens + reply_tokens > self.context_window:
                    raise ValueError(
                        f"A prompt of {tokens} tokens does not fit the {self.context_window}-token context."
                    )

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 64, temperature: float = 0.0,
                 n: int = 1, stop: Sequence[str] | None = None, seed: int | None = None) -> list[list[str]]:
        self._check_window(prompts, max_new_tokens)
        self.prompts += list(prompts)
        record(self.usage, Usage(calls=len(prompts) * n, forward_passes=1))
        return [[truncate_at_stop(self._reply(p), stop) for _ in range(n)] for p in prompts]

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        self.exact_streams.append(exact)
        text = self.generate([prompt], max_new_tokens=max_new_tokens, stop=stop)[0][0]
        yield from re.findall(r"\s*\S+", text) or (
            [text] if text else []
        )  # an empty completion yields nothing, as on real backends

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: str = "sum") -> list[float]:
        self._check_window([p + c for p, c in zip(prefixes, continuations, strict=True)])
        self.scored += list(zip(prefixes, continuations, strict=True))
        record(self.usage, Usage(calls=len(prefixes), forward_passes=1))
        values = [self._logprob(p, c) for p, c in zip(prefixes, continuations, strict=True)]
        if reduce == "mean":
            values = [v / max(1, len(c.split())) for v, c in zip(values, continuations, strict=True)]
        return values

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        self._check_window(prompts, 1)
        self.prompts += list(prompts)
        record(self.usage, Usage(calls=len(prompts), forward_passes=1))
        return [self._yes(p) for p in prompts]

    def option_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[list[list[float]]]:
        """One pseudo token per word of the option, sharing the rule's log-prob evenly."""
        self._check_window(
            [p + " " + max(map(str, o), key=len, default="") for p, o in zip(prompts, options, strict=True)]
        )
        self.choices += [(p, tuple(o)) for p, o in zip(prompts, options, strict=True)]
        record(self.usage, Usage(calls=len(prompts), forward_passes=1))
        rule = self._option or self._logprob
        flat = []
        for p, opts in zip(prompts, options, strict=True):
            for o in opts:
                words = len(str(o).split())
                flat.append([rule(p, o) / words] * words if words else [])
        return regroup(flat, [len(o) for o in options])
