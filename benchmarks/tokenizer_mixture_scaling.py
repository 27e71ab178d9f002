"""How the tokenizer-merge mixture estimate (bpe_merges) falls with the amount of training and reference text.

    python benchmarks/tokenizer_mixture_scaling.py --out /tmp/tokscale [--totals 0.33 1 4 16]
        [--domains code headers] [--weights 0.7 0.3] [--merges 300 1000 0] [--vocab 4096] [--denom bytes|pairs]

One tokenizer per total size T (MB of training text): the sandbox's corpus builder with the given byte budget
per domain (T x weight; documents cut into 600-byte pieces, no canary, files of at most 40 KB) and the sandbox's
tokenizer trainer (byte-level BPE, vocab `--vocab`, min frequency 2). Reference text per domain R = T / (number
of domains), whole held-out files (files the corpus did not use, in the reverse of its hash order, every piece),
so a domain's reference is as large as its training text would be at equal weights. Rows per tokenizer:

* held-out R        - the estimate a user gets with R bytes of other files of each domain;
* held-out R/2      - the same with half as much;
* training R/2      - R/2 bytes per domain of the *training files themselves* (whole files): the same amount
                      of text as held-out R/2, but no shift between the reference files and the training files;
                      the gap to held-out R/2 is what the shift between files costs;
* oracle            - all training text (every merge is the argmax: the LP is exact).

Every row is solved with the first N merges for each `--merges` (0 = all), with the per-step slack only and
with the paper's per-pair slack as well (`--pair-slack-max` merges at most: that LP is slower). Prints JSON lines
and a markdown table (MAE against the corpus's byte shares); the domain pools limit T: boilerplate has
~0.9 MB of distinct text and documentation ~1.8 MB on this machine, code and headers tens of MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenizer_mixture import build_tokenizer, errors, truth  # noqa: E402


def training_sample(docs, per_domain_bytes: float, seed: int):
    """Whole training files (all their pieces) per domain, in a seeded order, up to `per_domain_bytes`."""
    import random

    by_file: dict[tuple[str, str], list] = {}
    for d in docs:
        by_file.setdefault((d.domain, d.id.split("#", 1)[0]), []).append(d)
    out = []
    for domain in sorted({k[0] for k in by_file}):
        files = sorted(k for k in by_file if k[0] == domain)
        random.Random(f"train-sample-{seed}-{domain}").shuffle(files)
        taken = 0
        for k in files:
            if taken >= per_domain_bytes:
                break
            out += by_file[k]
            taken += sum(len(d.text.encode()) for d in by_file[k])
    return out


def main() -> None:
    from ingest.mixture.tokenizer import ReferenceText, load_bpe, per_byte, replay, solve_mixture, word_table
    from ingest.sandbox.corpus import read_corpus
    from ingest.sandbox.reference import held_out_documents
    from ingest.sandbox.sizes import MIXTURE_CHUNK_BYTES, get_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--totals", type=float, nargs="+", default=[0.33, 1, 4, 16], help="MB of training text")
    ap.add_argument("--domains", nargs="+", default=["code", "headers"])
    ap.add_argument("--weights", type=float, nargs="+", default=[0.7, 0.3])
    ap.add_argument("--merges", type=int, nargs="+", default=[300, 1000, 0], help="first N merges (0 = all)")
    ap.add_argument("--pair-slack-max", type=int, default=1000, help="solve with pair slack up to this many merges")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--sets", nargs="+", default=["held-out", "held-out-half", "training-half", "oracle"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--denom", choices=["bytes", "pairs"], default="bytes",
                    help="divide each domain's counts by its reference bytes (lmaudit) or by its initial number of "
                         "pairs (the authors' default), converting the pair shares to byte shares after the solve")
    args = ap.parse_args()
    assert len(args.domains) == len(args.weights)
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t_all = time.perf_counter()
    z = sum(args.weights)
    weights = {d: w / z for d, w in zip(args.domains, args.weights)}
    results = []
    for total in args.totals:
        tb = int(total * 1e6)
        budgets = {f"{d}_bytes": int(round(tb * weights.get(d, 0.0))) for d in ("code", "boilerplate",
                                                                                  "documentation", "headers")}
        label = "-".join(f"{d}{round(100 * w)}" for d, w in weights.items())
        size = get_size("tiny").replace(name=f"scale-{label}-{total:g}MB-v{args.vocab}", **budgets,
                                        max_file_bytes=40_000, chunk_bytes=MIXTURE_CHUNK_BYTES, canary_copies=0,
                                        vocab_size=args.vocab)
        t0 = time.perf_counter()
        corpus_jsonl, tok_json = build_tokenizer(size, args.out / size.name, args.seed)
        t_build = time.perf_counter() - t0
        tok = load_bpe(tok_json)
        tr = truth(corpus_jsonl)["bytes"]
        train_docs = list(read_corpus(corpus_jsonl))
        R = tb / len(weights)
        sets = {}
        if "held-out" in args.sets:
            sets["held-out"] = held_out_documents(size, corpus_jsonl, per_domain=10**9, pieces_per_file=0,
                                                  bytes_per_domain=int(R), seed=args.seed)
        if "held-out-half" in args.sets:
            sets["held-out-half"] = held_out_documents(size, corpus_jsonl, per_domain=10**9, pieces_per_file=0,
                                                       bytes_per_domain=int(R / 2), seed=args.seed)
        if "training-half" in args.sets:
            sets["training-half"] = training_sample(train_docs, R / 2, args.seed)
        if "oracle" in args.sets:
            sets["oracle"] = train_docs
        print(f"{size.name}: corpus + tokenizer {t_build:.1f}s, {len(tok.merges)} merges, truth {tr}", flush=True)
        for name, docs in sets.items():
            t0 = time.perf_counter()
            table = word_table(tok, [ReferenceText(d.domain, d.text, d.id) for d in docs])
            full = replay(table.symbols, tok.merges, tok.merged)
            if args.denom == "pairs":  # the authors' normalisation: alpha is a share of pairs until converted
                pairs_per_word = np.array([max(len(sym) - 1, 0) for sym in table.symbols], dtype=float)
                F = per_byte(table.freqs(), pairs_per_word)
                to_bytes = (table.word_bytes @ table.freqs()) / (pairs_per_word @ table.freqs())
            else:
                F = per_byte(table.freqs(), table.word_bytes)
                to_bytes = np.ones(len(table.domains))
            t_replay = time.perf_counter() - t0
            ref_bytes = {dom: int(table.word_bytes @ table.freqs()[:, i]) for i, dom in enumerate(table.domains)}
            for merges in (args.merges if name != "oracle" else [0]):
                log = full.first(merges) if merges else full
                for ps in (False, True):
                    if ps and (log.n_steps > args.pair_slack_max or name == "oracle"):
                        continue
                    t1 = time.perf_counter()
                    sol = solve_mixture(log, F, pair_slack=ps)
                    alpha = sol.alpha * to_bytes / (sol.alpha @ to_bytes)
                    mae, oa = errors(table.domains, alpha, tr)
                    row = dict(total_mb=total, name=size.name, reference=name, ref_bytes=ref_bytes,
                               merges=log.n_steps, pair_slack=ps, mae_bytes=mae, oa_bytes=oa,
                               denom=args.denom,
                               est={d: round(float(x), 4) for d, x in zip(table.domains, alpha)},
                               truth={d: round(v, 4) for d, v in tr.items()}, constraints=sol.n_constraints,
                               rounds=sol.iterations, status=sol.status, lp_seconds=time.perf_counter() - t1,
                               replay_seconds=t_replay, words=len(table.words))
                    results.append(row)
                    print(json.dumps(row), flush=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; {time.perf_counter() - t_all:.0f}s; "
          f"{os.cpu_count()} CPUs\n")
    print("| training MB | reference | ref MB / domain | merges | slack | MAE (bytes) | estimate | LP s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        est = " / ".join(f"{100 * v:.1f}" for v in r["est"].values())
        mb = np.mean(list(r["ref_bytes"].values())) / 1e6
        print(f"| {r['total_mb']:g} | {r['reference']} | {mb:.2f} | {r['merges']} | "
              f"{'step + pair' if r['pair_slack'] else 'step'} | {r['mae_bytes']:.4f} | {est} | {r['lp_seconds']:.1f} |")


if __name__ == "__main__":
    main()
