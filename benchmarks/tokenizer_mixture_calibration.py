"""bpe_merges, issue 35: calibration cases - many cheap sandbox tokenizers of random mixture, two groups.

    python benchmarks/tokenizer_mixture_calibration.py --out /tmp/tokcal --cases 32 [--n-boot 20] [--level 0.9]

Each case draws a mixture of the four sandbox domains (weights ~ Dirichlet(1), floored at 5 % and renormalised)
and a training size T of 0.33 or 0.5 MB; training files are drawn per domain in a seeded order (whole files,
filling T x w_i bytes; not the corpus builder's hash order, so cases do not share their files), then T / 4 bytes
per domain of *other* files of the same pools as reference text (the protocol of tokenizer_mixture_noise.py).
Files are cut into the sandbox's 600-byte pieces (ids 'file#k'); the tokenizer is the sandbox's trainer (byte-level
BPE, vocab 4096, min frequency 2). A documentation docstring is never taken from a code file the case uses.

Methods, same word table, replay and seed: `paper`, `noise-v1` (k = 4.8 fitted on the 10 tokenizers of
2026-12-04: these cases are out of sample for it), `noise` (the default: files, the training sample, 500 merges)
and `noise` at 300 merges. The noise intervals are scored as z x k x bootstrap SD with k cross-fitted: fitted on
the even cases (group 0) and scored on the odd ones (group 1) and the other way round; never on the cases it
was fitted on. Results are appended to OUT/cases.jsonl (a rerun skips the cases already there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenizer_mixture_noise import covered, fit_k  # noqa: E402

DOMAINS = ("boilerplate", "code", "documentation", "headers")
VARIANTS = (("paper", "paper", None), ("noise", "noise", None))


def pools(max_file_bytes: int = 40_000):
    from ingest.sandbox.corpus import boilerplate_candidates, code_candidates, header_candidates, load_code, read_text

    code = code_candidates(max_file_bytes)
    return {"code": (code, load_code), "boilerplate": (boilerplate_candidates(max_file_bytes), read_text),
            "headers": (header_candidates(max_file_bytes), read_text)}, code


def draw_files(cands, load, rng: random.Random, budgets: list[float]) -> list[list]:
    """Whole files in a seeded order filling each budget in turn; a file larger than what is left is passed
    over (as the corpus builder does) and stays available to the next budget. [(id, source, text)] per budget."""
    order = sorted(cands, key=lambda c: c[0])
    rng.shuffle(order)
    texts: dict[str, str | None] = {}
    out = []
    for budget in budgets:
        got, left, rest = [], budget, []
        for c in order:
            doc_id, source, approx, handle = c
            if left <= min(2000, budget / 100) or approx > left:
                rest.append(c)
                continue
            if doc_id not in texts:
                texts[doc_id] = load(handle)
            text = texts[doc_id]
            if not text or not text.strip():
                continue
            n = len(text.encode("utf-8"))
            if n > left:
                rest.append(c)
                continue
            got.append((doc_id, source, text))
            left -= n
        order = rest
        out.append(got)
    return out


def build_case(i: int, root: Path, pool, code_cands):
    from ingest.sandbox.corpus import Document, documentation_candidates, split_pieces
    from ingest.sandbox.sizes import MIXTURE_CHUNK_BYTES
    from ingest.sandbox.tokenizer import train_tokenizer

    rng = random.Random(f"issue35-calibration-{i}")
    w = np.array([rng.gammavariate(1.0, 1.0) for _ in DOMAINS])
    w = np.maximum(w / w.sum(), 0.05)
    w = w / w.sum()
    total = 0.5 if rng.random() < 0.5 else 0.33
    T, R = total * 1e6, total * 1e6 / len(DOMAINS)
    train, ref = [], []
    files = {}
    for dom in ("code", "boilerplate", "headers"):
        cands, load = pool[dom]
        files[dom] = draw_files(cands, load, random.Random(f"{i}-{dom}"), [T * w[DOMAINS.index(dom)], R])
    used_code = {d for part in files["code"] for d, _, _ in part}
    doc_cands, doc_load = documentation_candidates(code_cands, used_code, 40_000)
    files["documentation"] = draw_files(doc_cands, doc_load, random.Random(f"{i}-documentation"),
                                        [T * w[DOMAINS.index("documentation")], R])
    for dom in DOMAINS:
        for part, out in zip(files[dom], (train, ref)):
            for doc_id, source, text in part:
                for k, piece in enumerate(split_pieces(text, MIXTURE_CHUNK_BYTES)):
                    out.append(Document(f"{doc_id}#{k:04d}", dom, source, piece))
    case = root / f"case{i:03d}"
    tok_json = case / "tokenizer" / "tokenizer.json"
    if not tok_json.exists():
        (case / "corpus").mkdir(parents=True, exist_ok=True)
        corpus = case / "corpus" / "corpus.jsonl"
        corpus.write_text("".join(d.to_json() + "\n" for d in train), encoding="utf-8")
        train_tokenizer(corpus, case / "tokenizer", 4096, 2)
    by = {d: sum(len(x.text.encode()) for x in train if x.domain == d) for d in DOMAINS}
    truth = np.array([by[d] for d in DOMAINS], dtype=float)
    return dict(case=i, group=i % 2, total_mb=total, weights=w.round(4).tolist(), truth=(truth / truth.sum()).tolist(),
                train_bytes=int(truth.sum()), ref_bytes={d: sum(len(x.text.encode()) for x in ref if x.domain == d)
                                                         for d in DOMAINS}), tok_json, ref


def main() -> None:
    from ingest.mixture.tokenizer import ReferenceText, estimate_tokenizer_mixture, load_bpe, replay, word_table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", type=int, default=32)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=20)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--results", default="cases.jsonl", help="file under OUT the rows are appended to")
    ap.add_argument("--variants", nargs="+", default=[v[0] for v in VARIANTS],
                    help="run only these (a case run without one is left out of its rows in the report)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / args.results
    done = {json.loads(x)["case"] for x in path.read_text().splitlines()} if path.exists() else set()
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t_all = time.perf_counter()
    pool = code_cands = None
    for i in range(args.first, args.first + args.cases):
        if args.report_only or i in done:
            continue
        if pool is None:
            pool, code_cands = pools()
        c0 = time.process_time()
        meta, tok_json, ref = build_case(i, args.out, pool, code_cands)
        tok = load_bpe(tok_json)
        refs = [ReferenceText(d.domain, d.text, d.id) for d in ref]
        table = word_table(tok, refs)
        log = replay(table.symbols, tok.merges, tok.merged)
        meta["prep_cpu_s"] = time.process_time() - c0
        t = np.array(meta["truth"])
        meta["methods"] = {}
        for name, method, merges in VARIANTS:
            if name not in args.variants:
                continue
            c1 = time.process_time()
            est = estimate_tokenizer_mixture(tok, refs, method=method, max_merges=merges, n_boot=args.n_boot,
                                             seed=i, level=args.level, log=log)
            assert est.domains == DOMAINS, est.domains
            err = est.estimate - t
            lp = est.params.get("lp_point")
            meta["methods"][name] = dict(
                est=est.estimate.round(5).tolist(), err=err.tolist(), mae=float(np.abs(err).mean()),
                sd=est.params.get("bootstrap_sd"), lo=est.ci_low.tolist(), hi=est.ci_high.tolist(),
                cover=int(np.sum((est.ci_low <= t) & (t <= est.ci_high))), merges=est.n_merges_used,
                lp_mae=None if lp is None else float(np.abs(np.array(lp) - t).mean()), lp_point=lp,
                cpu_s=time.process_time() - c1, training_scale=est.params.get("training_scale"),
                doc_mean=est.params.get("document_mean"), doc_sd=est.params.get("document_sd"))
        meta["cpu_s"] = time.process_time() - c0
        with open(path, "a") as f:
            f.write(json.dumps(meta) + "\n")
        print(json.dumps({k: meta[k] for k in ("case", "total_mb", "weights", "cpu_s")}),
              {k: round(v["mae"], 4) for k, v in meta["methods"].items()}, flush=True)
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; {time.perf_counter() - t_all:.0f}s wall; "
          f"{os.cpu_count()} CPUs; --n-boot {args.n_boot}, level {args.level}\n")
    report([json.loads(x) for x in path.read_text().splitlines()], args.level)


def with_variants(cases: list[dict], z: float) -> list[str]:
    """Derive, from every `noise` row, the rows of what it computes on the way (same replicates, same seed):
    'noise-v1' (the mean of the document replicates, their SD: exactly the first noise method, k = 4.8) and
    'noise+lp' (the LP's own point, with the noise method's SD); returns the variant names."""
    names = [v[0] for v in VARIANTS]
    for c in cases:
        t = np.array(c["truth"])
        m = c["methods"].get("noise")
        if m is None or m.get("doc_mean") is None:
            continue
        for name, e, sd in (("noise-v1", m["doc_mean"], m["doc_sd"]), ("noise+lp", m["lp_point"], m["sd"])):
            e = np.array(e)
            lo, hi = (e - z * 4.8 * np.array(sd), e + z * 4.8 * np.array(sd)) if name == "noise-v1" else (t, t)
            c["methods"][name] = dict(m, est=e.tolist(), err=(e - t).tolist(), mae=float(np.abs(e - t).mean()), sd=sd,
                                      cover=int(np.sum((lo <= t) & (t <= hi))) if name == "noise-v1" else 0,
                                      lp_mae=None)
    return names + ["noise-v1", "noise+lp"]


def report(cases: list[dict], level: float) -> None:
    z = NormalDist().inv_cdf((1 + level) / 2)
    names = with_variants(cases, z)
    print(f"{len(cases)} cases ({sum(c['group'] == 0 for c in cases)} in group 0), "
          f"{sum(len(c['truth']) for c in cases)} (tokenizer, domain) pairs\n")
    print("| method | mean MAE | median MAE | MAE of the LP point | cover (own interval) | CPU s / case |")
    print("|---|---|---|---|---|---|")
    for name in names:
        ms = [c["methods"][name] for c in cases if name in c["methods"]]
        lp = [m["lp_mae"] for m in ms if m["lp_mae"] is not None]
        h, n = sum(m["cover"] for m in ms), sum(len(m["err"]) for m in ms)
        print(f"| {name} | {np.mean([m['mae'] for m in ms]):.4f} | {np.median([m['mae'] for m in ms]):.4f} | "
              f"{np.mean(lp) if lp else float('nan'):.4f} | "
              f"{'-' if '+' in name else f'{h}/{n} = {100 * h / max(n, 1):.0f} %'} | "
              f"{np.mean([m['cpu_s'] for m in ms]):.1f} |")
    print(f"\ncross-fitted k for {100 * level:.0f} % intervals (z x k x SD), coverage on the other group:")
    for name in [n for n in names if n != "paper"]:
        rows = {g: [c["methods"][name] for c in cases if c["group"] == g and name in c["methods"]] for g in (0, 1)}
        out = []
        hits = tot = 0
        for fit, test in ((0, 1), (1, 0)):
            k = fit_k(rows[fit], z, level)
            h, n = covered(rows[test], z, k)
            hits, tot = hits + h, tot + n
            out.append(f"k({fit}) = {k:.2f} -> group {test}: {h}/{n}")
        h1, n1 = covered(rows[0] + rows[1], z, 1.0)
        k_all = fit_k(rows[0] + rows[1], z, level)
        print(f"- {name}: " + "; ".join(out) + f"; out of sample {hits}/{tot} = {100 * hits / max(tot, 1):.0f} %; "
              f"k = 1: {h1}/{n1} = {100 * h1 / max(n1, 1):.0f} %; k fitted on all: {k_all:.2f}")


if __name__ == "__main__":
    main()
