"""bpe_merges, issue 35 step 1: is the error the reference files' shift, or the method? An oracle experiment.

    python benchmarks/tokenizer_mixture_oracle.py --out /tmp/tok36 [--only NAME ...] [--merges 300 500]

Same tokenizers as `tokenizer_mixture_noise.py` (cached under --out). For each, reference sets of equal size per
domain, half of the domain's *training* bytes (T x w_i / 2):

* `train-A`, `train-B`: the two halves of the tokenizer's own training files (a seeded split of whole files);
  no shift between reference and training files, only sampling (half of the very text the merges were counted on);
* `held-A`, `held-B`: two disjoint sets of whole held-out files of the same size per domain (the pool the
  benchmarks' references come from);
* `held-R`: the benchmarks' protocol, T / (number of domains) bytes of held-out files per domain.

If the method is sound and only the shift limits it, train-* is far better than held-*. If the files were
exchangeable (no shift beyond sampling), the error of a count per byte, reference minus training, has variance
proportional to 1/S - 1/D for a half S of the training text D (= 1/D) and 1/S + 1/D for held-out files (= 3/D):
held-* would be sqrt(3) = 1.7x train-*, not more. The script prints both MAEs and their ratio.

Estimators (points only, no interval): the paper's LP over the first N merges, and the noise-weighted LP (the
`noise` method's constraints in bootstrap standard errors, 20 replicates, unbagged point) over the first N.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenizer_mixture import build_tokenizer, truth  # noqa: E402
from tokenizer_mixture_noise import CONFIGS, size_of  # noqa: E402


def by_file(docs) -> dict[str, dict[str, list]]:
    """domain -> file id -> its pieces (ids 'file#piece')."""
    out: dict[str, dict[str, list]] = {}
    for d in docs:
        out.setdefault(d.domain, {}).setdefault(d.id.split("#", 1)[0], []).append(d)
    return out


def take(files: dict[str, list], order: list[str], budget: float) -> tuple[list, list[str]]:
    """Whole files in `order` until `budget` bytes; the docs and the files left."""
    out, taken, used = [], 0, 0
    for k in order:
        if taken >= budget:
            break
        out += files[k]
        taken += sum(len(d.text.encode()) for d in files[k])
        used += 1
    return out, order[used:]


def main() -> None:
    from ingest.mixture.tokenizer import ReferenceText, load_bpe, per_byte, replay, solve_mixture, word_table
    from ingest.mixture.tokenizer.estimate import bootstrap_replicates
    from ingest.mixture.tokenizer.noise import noise_scale
    from ingest.sandbox.corpus import read_corpus
    from ingest.sandbox.reference import held_out_documents

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--merges", type=int, nargs="+", default=[300, 500])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t_all = time.perf_counter()
    rows = []
    for label, weights, totals, _group in CONFIGS:
        for total in totals:
            size = size_of(weights, total)
            if args.only and size.name not in args.only:
                continue
            corpus_jsonl, tok_json = build_tokenizer(size, args.out / size.name, args.seed)
            tok = load_bpe(tok_json)
            tr = truth(corpus_jsonl)["bytes"]
            train = by_file(read_corpus(corpus_jsonl))
            held = by_file(held_out_documents(size, corpus_jsonl, per_domain=10**9, pieces_per_file=0,
                                              bytes_per_domain=int(total * 1e6), seed=args.seed))
            sets: dict[str, list] = {"train-A": [], "train-B": [], "held-A": [], "held-B": [], "held-R": []}
            short = []
            for dom, files in sorted(train.items()):
                n_bytes = sum(len(d.text.encode()) for fs in files.values() for d in fs)
                order = sorted(files)
                random.Random(f"oracle-{args.seed}-{dom}").shuffle(order)
                a, rest = take(files, order, n_bytes / 2)
                sets["train-A"] += a
                sets["train-B"] += [d for k in rest for d in files[k]]
                h = held.get(dom, {})
                horder = list(h)  # held_out_documents' own order
                ha, hrest = take(h, horder, n_bytes / 2)
                hb, _ = take(h, hrest, n_bytes / 2)
                hr, _ = take(h, horder, total * 1e6 / len(weights))
                sets["held-A"] += ha
                sets["held-B"] += hb
                sets["held-R"] += hr
                if sum(len(d.text.encode()) for d in hb) < 0.9 * n_bytes / 2:
                    short.append(dom)
            for name, docs in sets.items():
                c0 = time.process_time()
                refs = [ReferenceText(d.domain, d.text, d.id) for d in docs]
                table = word_table(tok, refs)
                full = replay(table.symbols, tok.merges, tok.merged)
                F = per_byte(table.freqs(), table.word_bytes)
                t = np.array([tr.get(d, 0.0) for d in table.domains])
                t = t / t.sum()
                ref_mb = {d: round(float(table.word_bytes @ table.freqs()[:, i]) / 1e6, 3)
                          for i, d in enumerate(table.domains)}
                reps = bootstrap_replicates(table, args.seed)(20)
                for n in args.merges:
                    log = full.first(n)
                    a0 = solve_mixture(log, F).alpha
                    an = solve_mixture(log, F, noise=noise_scale(log, reps, a0)).alpha
                    for method, a in (("paper", a0), ("noise-lp", an)):
                        row = dict(mixture=label, total_mb=total, name=size.name, reference=name, merges=n,
                                   method=method, domains=list(table.domains), ref_mb=ref_mb,
                                   truth=t.round(4).tolist(), est=a.round(4).tolist(),
                                   mae=float(np.abs(a - t).mean()), missing=sorted(set(tr) - set(table.domains)),
                                   short=short)
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                print(f"# {size.name} {name}: {time.process_time() - c0:.1f} CPU s", flush=True)
            (args.out / "oracle_results.json").write_text(json.dumps(rows, indent=1))
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; {time.perf_counter() - t_all:.0f}s wall; "
          f"{os.cpu_count()} CPUs\n")
    summarize(rows, args.merges)


def summarize(rows: list[dict], merges: list[int]) -> None:
    by = {(r["name"], r["reference"], r["merges"], r["method"]): r for r in rows}
    names = list(dict.fromkeys(r["name"] for r in rows))
    for method in ("paper", "noise-lp"):
        for n in merges:
            print(f"\n{method}, first {n} merges: MAE (bytes)")
            print("| mixture | training MB | train-A | train-B | held-A | held-B | held-R | held / train |")
            print("|---|---|---|---|---|---|---|---|")
            tr_all, he_all = [], []
            for nm in names:
                g = {s: by.get((nm, s, n, method)) for s in ("train-A", "train-B", "held-A", "held-B", "held-R")}
                if any(v is None for v in g.values()):
                    continue
                tr_m = (g["train-A"]["mae"] + g["train-B"]["mae"]) / 2
                he_m = (g["held-A"]["mae"] + g["held-B"]["mae"]) / 2
                flag = " (held pool short: " + ", ".join(g["held-B"]["short"]) + ")" if g["held-B"]["short"] else ""
                if not flag:
                    tr_all.append(tr_m)
                    he_all.append(he_m)
                r0 = g["train-A"]
                print(f"| {r0['mixture']}{flag} | {r0['total_mb']:g} | " + " | ".join(
                    f"{g[s]['mae']:.4f}" for s in ("train-A", "train-B", "held-A", "held-B", "held-R"))
                    + f" | {he_m / max(tr_m, 1e-9):.2f} |")
            if tr_all:
                print(f"| **mean** ({len(tr_all)} with full held-out halves) | | {np.mean(tr_all):.4f} (A+B) | | "
                      f"{np.mean(he_all):.4f} (A+B) | | | {np.mean(he_all) / np.mean(tr_all):.2f} |")


if __name__ == "__main__":
    main()
