#!/bin/bash
# holdout3: replay the calibration-mode runs with the default (hand-set rules, as `triage`) and the `bundled`
# policy, then paired reports per style and over the styles. Run with the project venv active.
# Usage: report.sh CLEAN_RUN NEWSWEB_RUN [NEWSWEB_RUN ...]   (defaults: the runs kept here)
set -e
cd "$(dirname "$0")"
clean=${1:-h3-clean}; shift || true
newsweb=("${@:-h3-newsweb-1 h3-newsweb-2}"); newsweb=(${newsweb[@]})
rm -rf replayed clean news web all pool; mkdir -p replayed
for run in "$clean" "${newsweb[@]}"; do
  causalrag replay "$run" --out "replayed/$(basename "$run")" --policy triage=rules --policy bundled=bundled > /dev/null
done
split() {  # split.py-like: keep the rows of one style of some replayed runs, in a folder with their config
  python - "$@" <<'PY'
import json, sys, pathlib
style, out, runs = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
out.mkdir(parents=True, exist_ok=True)
rows = [l for r in runs for l in (pathlib.Path(r) / "results.jsonl").read_text().splitlines()
        if l.strip() and json.loads(l).get("style", "clean") == style]
cfg = json.loads((pathlib.Path(runs[0]) / "config.json").read_text())
cfg["dataset"], cfg["shard"] = "robust?split=holdout3&style=all", None  # one spec, so every style pools
(out / "config.json").write_text(json.dumps(cfg, indent=2))
(out / "results.jsonl").write_text("\n".join(rows) + "\n")
print(style, len(rows))
PY
}
split clean pool/clean "replayed/$(basename "$clean")"
for s in news web; do split $s pool/$s $(for r in "${newsweb[@]}"; do echo "replayed/$(basename "$r")"; done); done
for s in clean news web; do causalrag report pool/$s --out $s --against standard_rag > /dev/null; done
causalrag report pool/clean pool/news pool/web --out all --against standard_rag > /dev/null
for s in clean news web all; do echo "== $s"; for m in "triage[triage]" "triage[bundled]"; do python ../../scripts/style_rows.py $s/paired.csv $m; done; done
echo "== the three styles, resampled by question (triage)"; METHOD="triage[triage]" python ../../scripts/clustered.py pool/clean pool/news pool/web
