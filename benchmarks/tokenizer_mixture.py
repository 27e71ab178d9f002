"""The training mixture from the tokenizer's merge list (bpe_merges, issue 18) on sandbox tokenizers trained
on known mixtures.

    python benchmarks/tokenizer_mixture.py --out /tmp/tokbench [--size tiny] [--steps 1200]
        [--mixtures balanced code-heavy docs-heavy] [--per-domain 150 600] [--merges 300] [--n-boot 20]
        [--slack pair|step]

For each mixture: the corpus and tokenizer stages of `lmaudit sandbox build --size SIZE --mixture M` (the same
functions, so the same corpus and merges as the models in BENCHMARKS.md's "sandbox models trained on known
mixtures"; no model is trained: the tokenizer does not depend on it), held-out reference pieces of the four
domains (files none of the benchmarked corpora used, `ingest.sandbox.reference.held_out_documents`), and
`estimate_tokenizer_mixture` with a bootstrap over reference documents. Truth: the corpus's share of bytes
(what the tokenizer trainer counts) and of documents (what `mixtures_documented` holds for the sandbox).
`--merges`: replay the first N merges (0 = all); the bootstrap runs for the first value only (with pair slack
an LP over all 3839 merges of held-out text did not finish in 15 minutes; the 2026-12-02 table in BENCHMARKS.md
is `--slack step --merges 800 0`, 10-20 s per all-merge LP). An "oracle" row uses the training corpus itself as reference text (the LP is then
exact: every merge is the most frequent pair at the true weights). Then robustness: each domain left out of the
reference set in turn (truth renormalised over the rest).
Prints markdown tables for BENCHMARKS.md, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def build_tokenizer(size, root: Path, seed: int = 0) -> tuple[Path, Path]:
    """Corpus + tokenizer of a sandbox size, cached in `root` (no model)."""
    from ingest.sandbox.corpus import collect_corpus
    from ingest.sandbox.tokenizer import train_tokenizer

    corpus, tok = root / "corpus", root / "tokenizer"
    if not (corpus / "corpus.jsonl").exists():
        collect_corpus(size, corpus, seed)
    if not (tok / "tokenizer.json").exists():
        train_tokenizer(corpus / "corpus.jsonl", tok, size.vocab_size, size.min_frequency)
    return corpus / "corpus.jsonl", tok / "tokenizer.json"


def truth(corpus_jsonl: Path) -> dict[str, dict[str, float]]:
    from ingest.sandbox.corpus import mixture_of, read_corpus

    m = mixture_of(read_corpus(corpus_jsonl))
    out = {}
    for basis in ("docs", "bytes"):
        total = sum(v[basis] for v in m.values())
        out[basis] = {d: v[basis] / total for d, v in m.items()}
    return out


def errors(domains, est, ref: dict[str, float]) -> tuple[float, float]:
    t = np.array([ref.get(d, 0.0) for d in domains])
    t = t / t.sum()
    ae = np.abs(np.asarray(est) - t)
    return float(ae.mean()), float(1 - 0.5 * ae.sum())


def main() -> None:
    from ingest.mixture.tokenizer import ReferenceText, estimate_tokenizer_mixture, load_bpe
    from ingest.sandbox.reference import held_out_documents
    from ingest.sandbox.sizes import sandbox_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--steps", type=int, default=1200, help="only names the variant (the tokenizer ignores it)")
    ap.add_argument("--mixtures", nargs="+", default=["balanced", "code-heavy", "docs-heavy"])
    ap.add_argument("--per-domain", type=int, nargs="+", default=[150, 600])
    ap.add_argument("--merges", type=int, nargs="+", default=[300], help="first N merges (0 = all)")
    ap.add_argument("--n-boot", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-robustness", action="store_true")
    ap.add_argument("--method", default="paper", help="bpe_merges method (its BENCHMARKS.md tables were measured with paper; "
                                                      "benchmarks/tokenizer_mixture_noise.py compares both)")
    ap.add_argument("--slack", choices=["pair", "step"], default="pair",
                    help="the paper's LP (slack per step and per pair) or per step only (the 2026-12-02 table)")
    args = ap.parse_args()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t_all = time.perf_counter()

    built = {}
    for mix in args.mixtures:
        size = sandbox_size(args.size, mix, steps=args.steps)
        t0 = time.perf_counter()
        built[mix] = (size, *build_tokenizer(size, args.out / f"{size.name}-seed{args.seed}", args.seed))
        print(f"{mix}: corpus + tokenizer in {time.perf_counter() - t0:.1f}s", flush=True)
    corpora = [b[1] for b in built.values()]

    results = []
    for mix, (size, corpus_jsonl, tok_json) in built.items():
        from ingest.sandbox.corpus import read_corpus

        tok = load_bpe(tok_json)
        tr = truth(corpus_jsonl)
        oracle = list(read_corpus(corpus_jsonl))
        sets = [(str(p), held_out_documents(size, corpus_jsonl, per_domain=p, seed=args.seed, exclude=corpora))
                for p in args.per_domain]
        sets.append(("oracle", oracle))
        for per_domain, docs in sets:
            refs = [ReferenceText(d.domain, d.text, d.id) for d in docs]
            for merges in (args.merges if per_domain != "oracle" else [0]):
                n_boot = args.n_boot if merges == args.merges[0] and per_domain != "oracle" else 0
                t0 = time.perf_counter()
                est = estimate_tokenizer_mixture(tok, refs, method=args.method, max_merges=merges, n_boot=n_boot,
                                                 seed=args.seed, pair_slack=args.slack == "pair")
                mae_b, oa_b = errors(est.domains, est.estimate, tr["bytes"])
                mae_d, oa_d = errors(est.domains, est.estimate, tr["docs"])
                tb = np.array([tr["bytes"][d] for d in est.domains])
                cover = float(np.mean((est.ci_low <= tb) & (tb <= est.ci_high))) if n_boot else None
                row = dict(mixture=mix, per_domain=per_domain, n_docs=sum(est.n_docs.values()),
                           ref_bytes=sum(est.n_bytes.values()), merges=est.n_merges_used, n_boot=n_boot,
                           mae_bytes=mae_b, oa_bytes=oa_b, mae_docs=mae_d, oa_docs=oa_d, coverage=cover,
                           seconds=time.perf_counter() - t0, constraints=est.solution.n_constraints,
                           rounds=est.solution.iterations, objective=est.solution.objective,
                           est={d: round(float(x), 4) for d, x in zip(est.domains, est.estimate)},
                           ci={d: [round(float(lo), 4), round(float(hi), 4)]
                               for d, lo, hi in zip(est.domains, est.ci_low, est.ci_high)},
                           truth_bytes={d: round(v, 4) for d, v in tr["bytes"].items()},
                           truth_docs={d: round(v, 4) for d, v in tr["docs"].items()})
                results.append(row)
                print(json.dumps(row), flush=True)
        if args.no_robustness:
            continue
        refs = [ReferenceText(d.domain, d.text, d.id) for d in sets[0][1]]
        for missing in sorted(tr["bytes"]):
            keep = [r for r in refs if r.domain != missing]
            e2 = estimate_tokenizer_mixture(tok, keep, method=args.method, max_merges=args.merges[0], n_boot=0,
                                            seed=args.seed, pair_slack=args.slack == "pair")
            m2, o2 = errors(e2.domains, e2.estimate, {d: tr["bytes"][d] for d in e2.domains})
            rob = dict(mixture=mix, per_domain=sets[0][0], missing=missing, missing_share=tr["bytes"][missing],
                       mae_bytes_rest=m2, oa_bytes_rest=o2, objective=e2.solution.objective,
                       est={d: round(float(x), 4) for d, x in zip(e2.domains, e2.estimate)})
            results.append(rob)
            print(json.dumps(rob), flush=True)

    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; {time.perf_counter() - t_all:.0f}s; "
          f"{os.cpu_count()} CPUs\n")
    print("| mixture | reference docs / domain | merges | MAE (bytes) | MAE (docs) | OA % (docs) | coverage | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        if "missing" in r:
            continue
        cov = "" if r["coverage"] is None else f"{100 * r['coverage']:.0f}%"
        print(f"| {r['mixture']} | {r['per_domain']} | {r['merges']} | {r['mae_bytes']:.4f} | {r['mae_docs']:.4f} | "
              f"{100 * r['oa_docs']:.1f} | {cov} | {r['seconds']:.1f} |")
    print("\n| mixture | left out (its share) | MAE over the rest (bytes) | estimate |")
    print("|---|---|---|---|")
    for r in results:
        if "missing" in r:
            est = ", ".join(f"{d} {100 * v:.1f}" for d, v in r["est"].items())
            print(f"| {r['mixture']} | {r['missing']} ({100 * r['missing_share']:.1f}%) | {r['mae_bytes_rest']:.4f} | "
                  f"{est} |")


if __name__ == "__main__":
    main()
