"""benchmarks/shortlist.py's agreement half only, for CIS rankings on more questions (no speed half, no answers half)."""
import sys, tempfile
from pathlib import Path
sys.path.insert(0, "benchmarks")
import shortlist as bench  # noqa: E402
from cost import machine  # noqa: E402
conflict, hotpot = int(sys.argv[1]), int(sys.argv[2])
llm = bench.load("llamacpp", True)
kept, llm.shortlist = llm.shortlist, None
out = Path(tempfile.mkdtemp(prefix="causalrag-shortlist-"))
recorder = bench.record(llm, ["cis"], conflict, hotpot, out)
llm.shortlist = kept
bench.replay(llm, recorder, 3, [65536])
print(machine())
