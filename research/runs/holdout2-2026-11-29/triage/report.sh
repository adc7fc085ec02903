#!/bin/bash
# per-style and pooled paired reports of the holdout2 runs
set -e
# run with the project venv active
cd "$(dirname "$0")"
for pair in "clean:h2-clean" "news:h2-newsweb" "web:h2-newsweb" "long:h2-long"; do
  s=${pair%%:*}; run=${pair#*:}
  [ -f $run/results.jsonl ] || continue
  rm -rf $s; mkdir -p $s
  python - "$run" "$s" <<'PY' || true
import json, sys, pathlib
run, s = pathlib.Path(sys.argv[1]), sys.argv[2]
out = pathlib.Path(s)
cfg = json.loads((run / "config.json").read_text())
rows = [l for l in (run / "results.jsonl").read_text().splitlines() if l.strip() and json.loads(l).get("style") == s]
(out / "config.json").write_text(json.dumps(cfg, indent=2))
(out / "results.jsonl").write_text("\n".join(rows) + "\n")
print(s, len(rows))
if not rows: sys.exit(3)
PY
  [ -s $s/results.jsonl ] && [ $(wc -l < $s/results.jsonl) -gt 1 ] || { rm -rf $s; continue; }
  causalrag report $s --against standard_rag > /dev/null
done
rm -rf all pool; mkdir pool
for s in $(ls -d clean news web long 2>/dev/null); do  # one dataset spec, so the four styles merge
  mkdir pool/$s; cp $s/results.jsonl pool/$s/
  python -c "import json,sys; c=json.load(open('$s/config.json')); c['dataset']='robust?split=holdout2&style=all'; c['shard']=None; json.dump(c,open('pool/$s/config.json','w'),indent=2)"
done
causalrag report pool/* --out all --against standard_rag > /dev/null
for s in clean news web long all; do [ -f $s/paired.csv ] && { echo "== $s"; python ../../../scripts/style_rows.py $s/paired.csv triage; }; done
