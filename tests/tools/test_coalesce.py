"""The coalescer: concurrent calls with equal settings become one batch; rows, errors and usage go back to each
caller."""

import threading
import time

import pytest

from causalrag.tools.coalesce import Coalescer
from causalrag.tools.usage import Usage, metered, record


class RecordingGenerate:
    """A batched generate that echoes its prompts, records each batch it gets, and counts usage."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.total = Usage()
        self.fail = fail

    def __call__(self, prompts, **settings):
        self.batches.append(list(prompts))
        if self.fail:
            raise RuntimeError("model exploded")
        record(self.total, Usage(calls=len(prompts), new_tokens=10 * len(prompts), forward_passes=4))
        return [[f"{p}|{settings.get('max_new_tokens')}"] for p in prompts]


def wait_until_queued(coalesce: Coalescer, calls: int) -> None:
    """Until ``calls`` calls wait in the coalescer's groups (however slowly a loaded machine starts threads)."""
    deadline = time.monotonic() + 60
    while sum(map(len, coalesce._groups.values())) < calls:
        assert time.monotonic() < deadline, "the calls never arrived"
        time.sleep(0.001)


def in_threads(coalesce: Coalescer, jobs: list[tuple[list[str], dict]]):
    """Run each (prompts, settings) in its own thread, each inside its own meter. The test holds the decoding
    turn until every call has arrived, so what is merged never depends on how fast the threads start."""
    results, meters, errors = [None] * len(jobs), [None] * len(jobs), [None] * len(jobs)

    def work(i: int) -> None:
        prompts, settings = jobs[i]
        with metered() as meter:
            try:
                results[i] = coalesce(prompts, **settings)
            except RuntimeError as exc:
                errors[i] = exc
        meters[i] = meter

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    with coalesce._decoding:
        for t in threads:
            t.start()
        wait_until_queued(coalesce, sum(s.get("seed") is None for _, s in jobs))  # seeded calls never queue
    for t in threads:
        t.join(timeout=60)
    return results, meters, errors


def test_concurrent_calls_with_equal_settings_run_as_one_batch_and_get_their_own_rows():
    generate = RecordingGenerate()
    coalesce = Coalescer(generate, window=0.05)
    jobs = [([f"q{i}a", f"q{i}b"] if i == 1 else [f"q{i}"], {"max_new_tokens": 8}) for i in range(3)]
    results, _, _ = in_threads(coalesce, jobs)
    assert len(generate.batches) == 1 and sorted(generate.batches[0]) == ["q0", "q1a", "q1b", "q2"]
    assert results == [[["q0|8"]], [["q1a|8"], ["q1b|8"]], [["q2|8"]]]


def test_different_settings_are_never_merged():
    generate = RecordingGenerate()
    coalesce = Coalescer(generate, window=0.05)
    results, _, _ = in_threads(coalesce, [(["a"], {"max_new_tokens": 8}), (["b"], {"max_new_tokens": 16})])
    assert sorted(map(sorted, generate.batches)) == [["a"], ["b"]]
    assert results == [[["a|8"]], [["b|16"]]]


def test_usage_is_split_over_callers_by_prompt_share_and_counted_once_in_the_total():
    generate = RecordingGenerate()
    coalesce = Coalescer(generate, window=0.05)
    _, meters, _ = in_threads(coalesce, [(["a"], {}), (["b", "c", "d"], {})])
    assert generate.total == Usage(calls=4, new_tokens=40, forward_passes=4)
    assert meters[0] == Usage(calls=1, new_tokens=10, forward_passes=1)
    assert meters[1] == Usage(calls=3, new_tokens=30, forward_passes=3)


def test_an_error_reaches_every_caller_of_the_group():
    coalesce = Coalescer(RecordingGenerate(fail=True), window=0.05)
    _, _, errors = in_threads(coalesce, [(["a"], {}), (["b"], {})])
    assert all(isinstance(e, RuntimeError) and "exploded" in str(e) for e in errors)


def test_a_lone_call_and_an_empty_call():
    generate = RecordingGenerate()
    coalesce = Coalescer(generate)
    with metered() as meter:
        assert coalesce(["only"], max_new_tokens=3) == [["only|3"]]
    assert coalesce([], max_new_tokens=3) == []
    assert generate.batches == [["only"]] and meter.calls == 1


def test_calls_arriving_while_a_batch_decodes_join_the_next_batch():
    release = threading.Event()
    batches: list[list[str]] = []

    def slow_generate(prompts, **settings):
        batches.append(list(prompts))
        if len(batches) == 1:
            release.wait(5)  # the first batch is still decoding while the others arrive
        return [[p] for p in prompts]

    coalesce = Coalescer(slow_generate, window=0.01)
    first = threading.Thread(target=coalesce, args=(["first"],))
    first.start()
    while not batches:
        pass
    later = [threading.Thread(target=coalesce, args=([name],)) for name in ("x", "y", "z")]
    for t in later:
        t.start()
    wait_until_queued(coalesce, 3)
    release.set()
    for t in [first, *later]:
        t.join(timeout=60)
    assert batches[0] == ["first"]
    assert sorted(batches[1]) == ["x", "y", "z"] and len(batches) == 2


@pytest.mark.parametrize("stop", [["\n"], ("\n",)])
def test_list_and_tuple_stop_strings_share_a_group(stop):
    generate = RecordingGenerate()
    coalesce = Coalescer(generate, window=0.05)
    in_threads(coalesce, [(["a"], {"stop": ["\n"]}), (["b"], {"stop": stop})])
    assert len(generate.batches) == 1


def test_seeded_calls_run_alone_so_sampling_stays_reproducible():
    generate = RecordingGenerate()
    coalesce = Coalescer(generate, window=0.05)
    in_threads(coalesce, [(["a"], {"seed": 1}), (["b"], {"seed": 1})])
    assert sorted(map(sorted, generate.batches)) == [["a"], ["b"]]
