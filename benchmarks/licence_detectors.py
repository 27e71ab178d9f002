"""Licence detection: lmaudit's detectors (license-expression + licenseclassifier) against ScanCode, the peer,
on the non-canary documents of the tiny sandbox corpus, in the same run (issue 30 item 2: "measure before
choosing").

    python benchmarks/licence_detectors.py [--size tiny] [--scancode-python /tmp/scvenv/bin/python]

ScanCode runs in its own virtual environment (it is not a dependency of lmaudit: 75 packages, a 126 MB wheel):
    python -m venv /tmp/scvenv && /tmp/scvenv/bin/pip install scancode-toolkit-mini==32.5.0 pluggy==1.5.0
(pluggy 1.6+ breaks its plugin loader: `did not find any 'plugincode.location_provider' hooks`). Prints CPU
seconds, peak memory and the agreement of the two SPDX answers per document, as markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import tempfile
import time
from pathlib import Path

_WORKER = r'''
import json, resource, sys, time
paths = json.load(open(sys.argv[1]))
t0 = time.process_time()
from scancode.api import get_licenses
out, first = {}, None
for p in paths:
    t = time.process_time()
    out[p] = get_licenses(p, include_text=False).get("detected_license_expression_spdx")
    first = time.process_time() - t if first is None else first
print(json.dumps({"results": out, "cpu_s": time.process_time() - t0, "first_cpu_s": first,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def _ids(expr: str | None) -> frozenset[str]:
    from license_expression import get_spdx_licensing

    if not expr:
        return frozenset()
    try:
        return frozenset(get_spdx_licensing().license_keys(get_spdx_licensing().parse(expr)))
    except Exception:  # noqa: BLE001 - ScanCode's LicenseRef-scancode-* keys are not SPDX ids
        return frozenset(expr.replace("(", " ").replace(")", " ").replace(" AND ", " ").replace(" OR ", " ").split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--scancode-python", type=Path, default=None)
    args = ap.parse_args()

    from ingest.provenance.licences import detect_licence
    from ingest.sandbox.corpus import collect_documents

    docs = [d for d in collect_documents(args.size, 0)[0] if d.domain != "canary"]
    t0 = time.process_time()
    ours = {d.id: detect_licence(d.text).expression for d in docs}
    ours_cpu = time.process_time() - t0
    ours_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"documents: {len(docs)}; load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"| lmaudit (license-expression + licenseclassifier) | {ours_cpu:.2f} CPU s | peak RSS {ours_rss:.0f} MB "
          f"(whole process) | {sum(1 for v in ours.values() if v)} with a licence |")
    if args.scancode_python is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, d in enumerate(docs):
            p = Path(tmp) / f"doc{i:04d}.txt"
            p.write_text(d.text, encoding="utf-8")
            paths.append(str(p))
        (Path(tmp) / "paths.json").write_text(json.dumps(paths))
        (Path(tmp) / "worker.py").write_text(_WORKER)
        proc = subprocess.run([str(args.scancode_python), str(Path(tmp) / "worker.py"), str(Path(tmp) / "paths.json")],
                              capture_output=True, text=True, check=True)
        sc = json.loads(proc.stdout)
    theirs = {d.id: sc["results"][p] for d, p in zip(docs, paths)}
    agree = sum(1 for k in ours if _ids(ours[k]) == _ids(theirs[k]))
    print(f"| ScanCode toolkit-mini 32.5.0 (get_licenses) | {sc['cpu_s']:.2f} CPU s (first document "
          f"{sc['first_cpu_s']:.2f}) | peak RSS {sc['max_rss_mb']:.0f} MB | "
          f"{sum(1 for v in theirs.values() if v)} with a licence |")
    print(f"same SPDX ids on {agree} of {len(docs)} documents; CPU ratio ScanCode / lmaudit "
          f"{sc['cpu_s'] / max(ours_cpu, 1e-9):.0f}x")
    for k in sorted(ours):
        if _ids(ours[k]) != _ids(theirs[k]):
            print(f"  differs: {k}: lmaudit {ours[k]!r}, ScanCode {theirs[k]!r}")


if __name__ == "__main__":
    main()
