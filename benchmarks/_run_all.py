"""``make bench``: every benchmark script with its defaults, one after another, then one summary of
which ran, which were skipped (a missing extra: the script's own ``skipped:`` line) and which failed.
Exits 1 when any failed.

Usage: ``python benchmarks/_run_all.py [SCRIPT ...]`` (default: every ``benchmarks/*.py`` not starting with ``_``)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from _needs import SKIPPED

HERE = Path(__file__).resolve().parent


def run(script: Path) -> tuple[str, str]:
    """Run ``script``, echoing its output; its outcome (ran, skipped, failed) and a short reason."""
    print(f"\n=== {script.name}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last, skipped = "", ""
    for line in proc.stdout:
        print(line, end="", flush=True)
        last = line.strip() or last
        if line.startswith(SKIPPED):
            skipped = line[len(SKIPPED):].strip()
    code = proc.wait()
    seconds = f"{time.monotonic() - start:.0f} s"
    if code != 0:
        return "failed", f"exit {code} after {seconds}: {last[:160]}"
    return ("skipped", skipped) if skipped else ("ran", seconds)


def main(argv: list[str]) -> int:
    scripts = [Path(a) for a in argv] or sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))
    outcomes = [(script.name, *run(script)) for script in scripts]
    print("\n=== summary")
    for kind in ("ran", "skipped", "failed"):
        chosen = [(name, why) for name, outcome, why in outcomes if outcome == kind]
        print(f"{kind}: {len(chosen)}")
        for name, why in chosen:
            print(f"  {name}: {why}")
    return 1 if any(outcome == "failed" for _, outcome, _ in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
