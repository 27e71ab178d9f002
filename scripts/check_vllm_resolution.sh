#!/usr/bin/env bash
# CI check: the [vllm] extra resolves together with the project's pins, without installing anything.
#
# Why: vllm pins torch exactly and caps transformers and (through mistral-common) numpy; a pin moved in
# pyproject.toml can make `pip install -e '.[vllm]'` impossible on every GPU machine while the CPU test
# suite stays green. pip's resolver runs with --dry-run and --prefer-binary (it fetches wheel metadata only,
# PEP 658; no CUDA wheel is downloaded or built), then the report must hold vllm and exactly the project's
# pins of torch, transformers and numpy. Needs the package index (as `pip install` in CI does).
# Usage: scripts/check_vllm_resolution.sh [EXTRAS]   (default: test,ray,bi,vllm: every extra at once)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test,ray,bi,vllm}"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! "$python" -m pip install --dry-run --ignore-installed --prefer-binary --only-binary vllm,torch,flashinfer-python \
    --report "$work/report.json" ".[$extras]" >"$work/pip.log" 2>&1; then
  grep -v "is ignored" "$work/pip.log" | grep -E "ERROR|conflict|depends on|requested" | head -20 >&2 || true
  echo "error: '.[$extras]' does not resolve with the pins in pyproject.toml (pip output above)" >&2
  exit 1
fi

"$python" - "$work/report.json" "$extras" <<'EOF'
import json
import re
import sys
import tomllib

report, extras = json.load(open(sys.argv[1])), sys.argv[2]
got = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"] for i in report["install"]}
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
pins = {}
for dep in project["dependencies"] + [d for e in extras.split(",") for d in project["optional-dependencies"][e]]:
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;#]+)", dep)
    if m:
        pins[m.group(1).lower().replace("_", "-")] = m.group(2)
bad = [f"{n}: pinned {v}, resolved {got.get(n)}" for n, v in pins.items()
       if got.get(n) is None or got[n].split("+")[0] != v]
if bad:
    sys.exit("error: the resolution moved pins: " + "; ".join(bad))
print(f"ok: '.[{extras}]' resolves: vllm {got.get('vllm')}, torch {got['torch']}, transformers {got['transformers']}, "
      f"numpy {got['numpy']} ({len(got)} packages, none installed)")
EOF
