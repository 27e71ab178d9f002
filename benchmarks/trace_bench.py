"""Benchmark: SimpleTrace (`ingest.trace`) against infini-gram's C++ `engine.attribute` + document fetch.

    python benchmarks/trace_bench.py [--corpus-mb 240] [--n 60] [--repeats 3] [--sets ...] [--json FILE]
    python benchmarks/trace_bench.py --dump FILE     # canonical trace outputs only (before/after checks)
    python benchmarks/trace_bench.py --scaling --index IDX --inputs INPUTS.json --old SRC [--rounds 3]
                                                     # threads 1 vs 2, old code vs this one, in one run

Same index, same inputs, one process, single-threaded tracer (what one worker of `lmaudit trace` does).
Results and their reading: BENCHMARKS.md, "SimpleTrace vs attribute".

* index: >= 50M tokens of real local text (Python sources, licenses, the sandbox corpus), byte-level BPE with
  8192 tokens, 2 shards, built once (~9 min on 2 cores) and cached under /tmp/lmaudit-bench
  (trace_bench_data.py);
* inputs (seeded), 256 index tokens each unless noted: `verbatim` (slices of indexed documents), `edited`
  (a word substituted, deleted or repeated every ~12 words), `stitched` (four 64-token pieces of different
  documents), `shuffled` (the lines of a slice in random order), `respaced` (whitespace-only edits of a
  slice: tabs for 4 spaces or doubled spaces, some CRLF; more tokens, and the exact_full_normalized tier)
  and, when a sandbox model exists under /tmp/wh2/sandbox/*/model, `model` (its unconditional samples);
* ours: `Tracer.trace` (every step of docs/propme-method.md section 2: full match, longest match per start, filters, K rare
  spans, merging, 10 documents per kept span with tiers and nv-recall, anchors, duplication counts);
  nv-recall (difflib and word normalization) is timed separately;
* theirs: `attribute(ids, delim_ids=[], min_len=4, max_cnt=2**62, enforce_bow=False)` (all maximal spans of
  >= 4 tokens, like mixed mode), the same K rarest spans by our unigram scores, 10 sampled occurrences per
  kept span fetched with `get_docs_by_ptrs_2` (window 5L as ours) and decoded. No tiers, no nv-recall;
* timing on a warm index (one untimed pass of both first), `repeats` alternating passes, medians of wall
  time and process CPU time (attribute runs one thread per start position, so on several cores its wall
  time hides CPU); generations per CPU second is the per-core rate;
* agreement: our n(b) against the definition count(s[b:b+n]) > 0, count(s[b:b+n+1]) == 0 (C++ counts) and
  against attribute's (`creativity` gives its per-start lengths); maximal spans, longest span and mixed-mode
  spans against `attribute`; the longest span with OLMoTrace's delimiters ("\\n", "."); plus constructed
  token sequences at insertion rank 0 of a shard. Every difference is classified (rank 0, whitespace-only
  spans, delimiters) or listed under `examples`.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import json
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from trace_bench_data import BENCH_DIR, ensure_index  # noqa: E402

MAXCNT = 2 ** 62
GEN_TOKENS = 256


# ------------------------------------------------------------------------------------------------ inputs


def _doc_slices(eng, rng: random.Random, n: int, length: int, min_doc: int) -> list[list[int]]:
    out = []
    tries = 0
    while len(out) < n and tries < 100 * n:
        tries += 1
        d = eng.doc(rng.randrange(eng.n_docs))
        if d.doc_len < min_doc:
            continue
        start = rng.randrange(0, d.doc_len - length + 1)
        out.append(d.tokens[start:start + length])
    return out


def _cut(tok, text: str, n: int = GEN_TOKENS) -> str:
    return tok.decode(tok.encode(text)[:n])


def make_inputs(eng, tok, n: int, seed: int = 0) -> dict[str, list[str]]:
    rng = random.Random(seed)
    sets: dict[str, list[str]] = {}
    sets["verbatim"] = [tok.decode(s) for s in _doc_slices(eng, rng, n, GEN_TOKENS, 400)]
    pool = [tok.decode(s) for s in _doc_slices(eng, rng, 20, 400, 500)]
    words = [w for t in pool for w in t.split() if w.isidentifier()]
    edited = []
    for s in _doc_slices(eng, rng, n, 360, 500):
        parts = re.split(r"(\s+)", tok.decode(s))
        for i in range(0, len(parts), 2):
            if parts[i] and rng.random() < 1 / 12:
                op = rng.choice(("sub", "del", "dup"))
                parts[i] = rng.choice(words) if op == "sub" else "" if op == "del" else parts[i] + " " + parts[i]
        edited.append(_cut(tok, "".join(parts)))
    sets["edited"] = edited
    sets["stitched"] = [_cut(tok, "".join(tok.decode(p) for p in _doc_slices(eng, rng, 4, 64, 200)))
                        for _ in range(n)]
    shuffled = []
    for s in _doc_slices(eng, rng, n, 360, 500):
        lines = tok.decode(s).split("\n")
        rng.shuffle(lines)
        shuffled.append(_cut(tok, "\n".join(lines)))
    sets["shuffled"] = shuffled
    # whitespace-only edits (indents as tabs, doubled spaces, CRLF): the exact_full_normalized tier
    respaced = []
    for s in _doc_slices(eng, rng, n, GEN_TOKENS, 400):
        t = tok.decode(s)
        t = re.sub(r" {4}", "\t", t) if rng.random() < 0.5 else re.sub(r" (?=\S)", "  ", t)
        respaced.append(t.replace("\n", "\r\n") if rng.random() < 0.3 else t)
    sets["respaced"] = respaced
    model = _model_samples(n)
    if model:
        sets["model"] = model
    return sets


def _model_samples(n: int) -> list[str]:
    """Unconditional samples of the sandbox model (cached); [] when there is none."""
    models = sorted(glob.glob("/tmp/wh2/sandbox/*/model/config.json"))
    if not models:
        return []
    model = str(Path(models[0]).parent)
    cache = BENCH_DIR / f"model-samples-{hashlib.sha256(model.encode()).hexdigest()[:8]}-{n}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from ingest.generate.backends import GenRequest, SamplingConfig, get_backend

    be = get_backend("hf", model, threads=1)
    reqs = [GenRequest(f"g{g}", (be.bos_id,), 42 + g) for g in range(n)]
    outs = be.generate(reqs, SamplingConfig(temperature=0.7, top_p=0.95, max_new_tokens=256))
    texts = [o.text for o in outs if o.text.strip()]
    cache.write_text(json.dumps(texts))
    return texts


# ------------------------------------------------------------------------------------------------ pipelines


class Timer:
    """Wall and CPU seconds spent inside the wrapped functions (not re-entrant: nested calls count once)."""

    def __init__(self):
        self.s = self.cpu = 0.0
        self.calls = 0
        self._depth = 0

    def wrap(self, fn):
        def inner(*a, **k):
            self._depth += 1
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.s += time.perf_counter() - t
                    self.cpu += time.process_time() - c
                self.calls += 1
        return inner


@contextlib.contextmanager
def timed_nv(timer: Timer):
    """Time nv-recall inside the tracer (difflib and the word normalization of both texts), whichever
    helpers the tracer calls."""
    import ingest.trace.tracer as tr

    saved = {}
    for name in ("nv_recall", "nv_recall_words", "nv_recall_window", "normalize_words"):
        if hasattr(tr, name):
            saved[name] = getattr(tr, name)
            setattr(tr, name, timer.wrap(saved[name]))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(tr, name, fn)


def run_ours(tracer, gens: list[tuple[str, str]]) -> tuple[float, float, float, float]:
    """(wall s, cpu s, nv-recall wall s, nv-recall cpu s) for tracing `gens`."""
    nv = Timer()
    with timed_nv(nv):
        c0, t0 = time.process_time(), time.perf_counter()
        for gid, text in gens:
            tracer.trace(gid, text)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, nv.s, nv.cpu


def attribute_trace(eng, tok, logp, floor, text: str, rng: random.Random, max_docs: int = 10,
                    window_factor: int = 5, min_len: int = 4) -> list[tuple[int, int, list]]:
    ids = tok.encode(text)
    L = len(ids)
    if not L:
        return []
    cpp = eng._cpp()
    res = cpp.attribute(input_ids=ids, delim_ids=[], min_len=min_len, max_cnt=MAXCNT, enforce_bow=False)
    nlp = len(logp)
    scored = []
    for s in res.spans:
        score = sum(logp[t] if t < nlp else floor for t in ids[s.l:s.r])
        scored.append((score, s.l, s))
    scored.sort(key=lambda x: (x[0], x[1]))
    k = max(1, (5 * L + 99) // 100)
    ctx = (window_factor - 1) * L // 2
    out = []
    for _, _, s in scored[:k]:
        docs = s.docs
        pick = docs if len(docs) <= max_docs else [docs[i] for i in sorted(rng.sample(range(len(docs)), max_docs))]
        raws = cpp.get_docs_by_ptrs_2(requests=[(d.s, d.ptr, s.r - s.l, ctx) for d in pick])
        windows = [(tok.decode(r.token_ids), json.loads(r.metadata) if r.metadata else {}) for r in raws]
        out.append((s.l, s.r, windows))
    return out


def run_attribute(eng, tok, logp, floor, gens: list[tuple[str, str]]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    for gid, text in gens:
        attribute_trace(eng, tok, logp, floor, text, random.Random(gid))
    return time.perf_counter() - t0, time.process_time() - c0


# ------------------------------------------------------------------------------------------------ agreement


def rank0_inputs(eng, tok, sets: dict[str, list[str]], n: int = 40, seed: int = 1) -> list[list[int]]:
    """Token sequences (not texts: they need not survive decode + encode) whose suffixes sort before every
    suffix of a shard: the smallest suffix of the shard (rank 0), cut after k tokens and followed by a token
    whose bytes sort lower than the one that follows there; embedded in the middle of a verbatim input.
    Also the mirror image at the top of the shard (insertion rank = size), which attribute handles."""
    rng = random.Random(seed)
    order = sorted(range(min(eng.separator_id, eng.vocab_size)), key=lambda t: eng.ids_bytes([t]))
    pos = {t: i for i, t in enumerate(order)}
    verb = [tok.encode(t) for t in sets["verbatim"]]
    out = []
    for i in range(n):
        s = i % eng.num_shards
        top = i % 4 == 3
        size = eng.tok_cnt(s) - eng._shards[s][2].n_docs  # real suffixes; separators sort last
        base = eng.suffix_tokens(s, size - 1 - rng.randrange(3) if top else rng.randrange(3), 12)
        k = rng.randint(1, max(1, len(base) - 1))
        if k >= len(base):
            continue
        nxt = pos[base[k]]
        cand = order[nxt + 1:] if top else order[:nxt]
        if not cand:
            continue
        q = base[:k] + [cand[-1] if top else cand[0]]
        v = verb[i % len(verb)]
        cut = rng.randrange(20, 200)
        out.append(v[:cut] + q + v[cut:cut + 40])
    return out


def _attr_spans(eng, ids, delim_ids=()) -> list[tuple[int, int]]:
    r = eng._cpp().attribute(input_ids=ids, delim_ids=list(delim_ids), min_len=1, max_cnt=MAXCNT, enforce_bow=False)
    return [(int(s.l), int(s.r)) for s in r.spans]


def _rank0_explains(eng, q, n: int) -> bool:
    """True when a shard's insertion rank for q is 0 and its rank-0 suffix shares n tokens with q: the
    neighbour attribute never looks at (it skips both neighbours at rank 0)."""
    res = eng.find(q)
    return any(lo == 0 and eng.lcp_at_rank(s, 0, q) == n for s, (lo, _) in enumerate(res["segment_by_shard"]))


def agreement(eng, tok, tracer, sets: dict[str, list[str]]) -> dict:
    """Per start: our n(b) vs the definition and vs attribute's (`creativity` returns b + its n(b) for every
    b); maximal spans and longest span vs `attribute(min_len=1)`; mixed-mode spans vs `attribute(min_len=4)`;
    longest span with OLMoTrace's delimiters."""
    from ingest.trace.matching import longest_matches, maximal_spans

    delims = sorted({i for d in ("\n", ".") for i in tok.encode(d)})
    rep: dict = {"delim_ids": delims, "sets": {}}
    examples = []
    cpp = eng._cpp()
    for name, texts in sets.items():
        st = Counter()
        for text in texts:
            ids = tok.encode(text) if isinstance(text, str) else list(text)
            if not ids:
                continue
            st["generations"] += 1
            n = longest_matches(eng, ids)
            for b, nb in enumerate(n):  # the definition, with the engine's counts
                ok = ((nb == 0 or eng.count(ids[b:b + nb]) > 0)
                      and (b + nb == len(ids) or eng.count(ids[b:b + nb + 1]) == 0))
                st["starts"] += 1
                st["definition_ok" if ok else "definition_FAIL"] += 1
            a = [int(r) - b for b, r in enumerate(cpp.creativity(input_ids=ids).rs)]
            had_rank0 = False
            for b, (nb, ab) in enumerate(zip(n, a)):
                if nb == ab:
                    st["start_equal"] += 1
                elif ab < nb and _rank0_explains(eng, ids[b:], nb):
                    st["start_attr_shorter_rank0"] += 1
                    if not had_rank0 and sum(1 for e in examples if "rank0" in e) < 3:
                        examples.append({"set": name, "start": b, "ours": nb, "attribute": ab, "rank0": True,
                                         "tokens": tok.decode(ids[b:b + nb + 1])})
                    had_rank0 = True
                else:
                    st["start_differs_unexplained"] += 1
                    examples.append({"set": name, "start": b, "ours": nb, "attribute": ab})
            ours = maximal_spans(n)
            theirs = _attr_spans(eng, ids)
            st["spans_ours"] += len(ours)
            st["spans_attr"] += len(theirs)
            st["span_sets_equal" if ours == theirs else "span_sets_differ"] += 1
            lo_, lt = max((e - b for b, e in ours), default=0), max((e - b for b, e in theirs), default=0)
            st["longest_equal" if lo_ == lt else "longest_differs"] += 1
            if lo_ != lt:
                examples.append({"set": name, "longest_ours": lo_, "longest_attribute": lt,
                                 "text": tok.decode(ids[:40])})
            mixed = tracer._filter(ids, ours)
            attr4 = [(int(s.l), int(s.r)) for s in cpp.attribute(input_ids=ids, delim_ids=[], min_len=4,
                                                               max_cnt=MAXCNT, enforce_bow=False).spans]
            st["mixed_equal" if mixed == attr4 else "mixed_differs"] += 1
            if mixed != attr4:
                only = set(attr4) - set(mixed)
                ws = all(not tok.decode(ids[b:e]).strip() for b, e in only) and set(mixed) <= set(attr4)
                st["mixed_differs_whitespace_only" if ws else "mixed_differs_rank0" if had_rank0
                   else "mixed_differs_other"] += 1
            dl = _attr_spans(eng, ids, delims)  # OLMoTrace's delimiters
            ld = max((e - b for b, e in dl), default=0)
            st["delim_longest_" + ("equal" if ld == lo_ else "shorter" if ld < lo_ else "longer")] += 1
            st["delim_longest_sum"] += ld
            st["ours_longest_sum"] += lo_
        rep["sets"][name] = dict(st)
    rep["examples"] = examples[:10]
    return rep


# ------------------------------------------------------------------------------------------------ dump


def dump(tracer, gens: list[tuple[str, str]], path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "w", encoding="utf-8") as f:
        for gid, text in gens:
            o = tracer.trace(gid, text)
            line = json.dumps({"g": gid, "spans": o.spans, "documents": o.documents, "counts": o.counts},
                              sort_keys=True, default=str) + "\n"
            f.write(line)
            h.update(line.encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ scaling

SCALING_DOC = """`--scaling`: thread scaling and per-class rates of this code against another checkout (`--old`, e.g.
`git worktree add /tmp/trace_old <commit>`), in one run. Each round starts one child process per code tree,
alternating which goes first; a child imports `ingest` from its tree, opens the index as `lmaudit trace` does
(`open_tracer`), traces every input once untimed (numba cache load, page faults), then traces all inputs with
1 and 2 threads sharing the tracer (as `TraceWorker`: a ThreadPoolExecutor over the batch), twice each in
alternating order, then three times per input class single-threaded (the median pass per class). Reported: wall and process CPU seconds, the
2-thread wall speedup, generations per CPU second per class, the share of CPU spent in the GIL-free compiled
kernels and, apart, in the tokenizer's encode (Rust, releases the GIL) (a single-threaded pass with those
timed: Amdahl's bound for 2 threads follows from it), a
digest of every output row (spans, documents, counts) of both thread counts, and the process's memory from
/proc/self/smaps_rollup and, per mapped index file, /proc/self/smaps. Inputs: a JSON object class -> texts,
e.g. the `trace_inputs.json` of `benchmarks/cost_growth.py trace`."""


def _smaps() -> dict:
    """Memory of this process: smaps_rollup (kB fields) and resident kB per mapped file under the index."""
    out: dict = {"rollup": {}, "files": {}}
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    out["rollup"][k] = int(v.split()[0])
        cur = None
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split()
                if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    cur = head[5] if len(head) > 5 else "[anon]"
                elif head and head[0] in ("Rss:", "Pss:", "Private_Clean:", "Private_Dirty:") and cur:
                    if cur.startswith("/") and "/idx" in cur:
                        name = Path(cur).name
                    elif cur.startswith("/"):
                        name = "[other files]"
                    else:
                        name = "[anon, heap, stacks]"
                    d = out["files"].setdefault(name, {"maps": 0, "Rss": 0, "Pss": 0, "Private_Clean": 0,
                                                       "Private_Dirty": 0})
                    d[head[0][:-1]] += int(head[1])
                    if head[0] == "Rss:":
                        d["maps"] += 1
    except OSError:
        pass
    return out


def _scaling_child(src: str, idx: str, inputs: str) -> None:
    """One code tree's measurements (runs with `src` first on sys.path); prints one JSON line."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, src)
    for m in [m for m in sys.modules if m == "ingest" or m.startswith("ingest.")]:
        del sys.modules[m]
    import ingest
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    assert Path(ingest.__file__).resolve().is_relative_to(Path(src).resolve()), ingest.__file__
    sets = json.loads(Path(inputs).read_text())
    gens = [(f"{k}-{i:03d}", t) for k, v in sets.items() for i, t in enumerate(v)]
    tracer = open_tracer(TraceJob((idx,), TraceParams()), "scaling")

    def run(threads: int, batch) -> tuple[float, float, list]:
        c0, t0 = time.process_time(), time.perf_counter()
        if threads > 1:
            with ThreadPoolExecutor(threads) as ex:
                outs = list(ex.map(lambda g: tracer.trace(*g), batch))
        else:
            outs = [tracer.trace(*g) for g in batch]
        return time.perf_counter() - t0, time.process_time() - c0, outs

    def digest(outs) -> str:
        h = hashlib.sha256()
        for o in outs:
            h.update(json.dumps({"spans": o.spans, "documents": o.documents, "counts": o.counts},
                                sort_keys=True, default=str).encode())
        return h.hexdigest()

    load0 = os.getloadavg()
    run(1, gens)  # warm-up
    res: dict = {"src": src, "threads": {1: [], 2: []}, "digests": {}}
    for order in ((1, 2), (2, 1)):
        for t in order:
            w, c, outs = run(t, gens)
            res["threads"][t].append({"wall_s": round(w, 3), "cpu_s": round(c, 3)})
            res["digests"][t] = digest(outs)
    # per class: 3 single-threaded passes (classes interleaved), the median CPU of each class: one short pass
    # swings by 20-30% on a loaded machine
    per_class: dict = {}
    for _ in range(3):
        for name in sets:
            batch = [g for g in gens if g[0].startswith(name + "-")]
            w, c, _ = run(1, batch)
            d = per_class.setdefault(name, {"n": len(batch), "cpu_s_passes": [], "wall_s_passes": []})
            d["cpu_s_passes"].append(round(c, 3))
            d["wall_s_passes"].append(round(w, 3))
    for d in per_class.values():
        d["cpu_s"] = statistics.median(d["cpu_s_passes"])
        d["wall_s"] = statistics.median(d["wall_s_passes"])
        d["gen_per_cpu_s"] = round(d["n"] / d["cpu_s"], 1)
    res["per_class"] = per_class
    # the GIL-free share: time inside the compiled kernels on one thread
    nogil = Timer()
    patched = []
    import importlib

    # module attributes called from Python (a kernel calling another inside compiled code is timed once, by
    # its caller); names a tree lacks are skipped
    for mod_name, names in (("ingest.index.sa_search", ("longest_matches", "find_range", "occurs", "longest_prefix",
                                                        "find_many", "plan_rows")),
                            ("ingest.index.doc_windows", ("windows",)),
                            ("ingest.trace.nvkernel", ("nv_counts",)),
                            ("ingest.trace.tierkernel", ("normalize_ascii",)),
                            ("ingest.trace.windowkernel", ("scan_windows", "decode_pieces")),
                            ("ingest.trace.keykernel", ("blake2b_pair_keys",)),
                            ("ingest.trace.spankernel", ("maximal_spans", "span_scores", "spans_with_scores")),
                            ("ingest.trace.rngkernel", ("sample_ranges",))):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        for n in names:
            if hasattr(mod, n):
                patched.append((mod, n, getattr(mod, n)))
                setattr(mod, n, nogil.wrap(getattr(mod, n)))
    # the tokenizer's Rust encode releases the GIL too (a thread spinning in Python keeps running during a
    # long encode_batch_fast call): timed apart, reported as a second share
    tok_t = Timer()
    enc = getattr(tracer.tok, "_encode", None)
    if enc is not None:
        tracer.tok._encode = tok_t.wrap(enc)
    w, c, _ = run(1, gens)
    for mod, n, f in patched:
        setattr(mod, n, f)
    if enc is not None:
        tracer.tok._encode = enc
    both = nogil.cpu + tok_t.cpu
    res["nogil"] = {"cpu_s_total": round(c, 3), "cpu_s_in_kernels": round(nogil.cpu, 3),
                    "share": round(nogil.cpu / c, 3), "calls": nogil.calls,
                    "amdahl_2_threads": round(1 / ((1 - nogil.cpu / c) + nogil.cpu / c / 2), 2),
                    "cpu_s_in_tokenizer": round(tok_t.cpu, 3), "share_with_tokenizer": round(both / c, 3),
                    "amdahl_2_threads_with_tokenizer": round(1 / ((1 - both / c) + both / c / 2), 2)}
    res["memory"] = _smaps()
    import resource

    res["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res["load_before"] = [round(x, 2) for x in load0]
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(res))


def scaling(a) -> None:
    """Parent of `--scaling`: alternate the code trees' children, summarise."""
    import os
    import subprocess

    trees = {"old": str(Path(a.old).resolve()), "new": str(REPO)}
    runs: dict[str, list] = {"old": [], "new": []}
    loads = [os.getloadavg()]
    for r in range(a.rounds):
        for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
            p = subprocess.run([sys.executable, __file__, "--scaling-child", trees[which], str(a.index), str(a.inputs)],
                               capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(f"{which} child failed:\n{p.stderr[-3000:]}")
            runs[which].append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f"round {r} {which}: done", file=sys.stderr)
        loads.append(os.getloadavg())
    summary = {}
    for which, rs in runs.items():
        t1 = [x for r in rs for x in r["threads"]["1"]]
        t2 = [x for r in rs for x in r["threads"]["2"]]
        med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
        classes = rs[0]["per_class"]
        summary[which] = {
            "threads1_wall_s": med(t1, "wall_s"), "threads1_cpu_s": med(t1, "cpu_s"),
            "threads2_wall_s": med(t2, "wall_s"), "threads2_cpu_s": med(t2, "cpu_s"),
            "speedup_wall_2_threads": round(med(t1, "wall_s") / med(t2, "wall_s"), 2),
            "speedups_per_pair": [round(x["wall_s"] / y["wall_s"], 2) for x, y in zip(t1, t2)],
            "cores_busy_2_threads": round(med(t2, "cpu_s") / med(t2, "wall_s"), 2),
            "gen_per_cpu_s": {c: round(statistics.median(r["per_class"][c]["gen_per_cpu_s"] for r in rs), 1)
                              for c in classes},
            "nogil_share": statistics.median(r["nogil"]["share"] for r in rs),
            "amdahl_2_threads": statistics.median(r["nogil"]["amdahl_2_threads"] for r in rs),
            "nogil_share_with_tokenizer": statistics.median(r["nogil"].get("share_with_tokenizer", 0) for r in rs),
            "amdahl_2_threads_with_tokenizer": statistics.median(r["nogil"].get("amdahl_2_threads_with_tokenizer", 0)
                                                                 for r in rs),
            "cpu_s_per_pass_1_thread": [x["cpu_s"] for x in t1],
            "digests": sorted({d for r in rs for d in r["digests"].values()}),
            "memory_kb": rs[-1]["memory"],
            "peak_rss_kb": [r.get("peak_rss_kb") for r in rs],
        }
    summary["same_outputs"] = summary["old"]["digests"] == summary["new"]["digests"] and \
        len(summary["new"]["digests"]) == 1
    summary["load_averages"] = [[round(x, 2) for x in lo] for lo in loads]
    out = {"index": str(a.index), "inputs": str(a.inputs), "summary": summary, "runs": runs}
    print(json.dumps(summary, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--scaling-child":
        _scaling_child(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=SCALING_DOC)
    ap.add_argument("--corpus-mb", type=int, default=240)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--n", type=int, default=60, help="generations per input set")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sets", nargs="*", help="only these input sets")
    ap.add_argument("--dump", type=Path, help="write canonical trace outputs here and exit")
    ap.add_argument("--no-agreement", action="store_true")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--pure-python-search", action="store_true",
                    help="suffix-array searches in pure Python, not compiled (the before of issue 19)")
    ap.add_argument("--search-ab", action="store_true",
                    help="also time the pure-Python searches in every repeat (before/after ratios in one run)")
    ap.add_argument("--scaling", action="store_true", help="threads 1 vs 2, --old code vs this (see below)")
    ap.add_argument("--index", type=Path, help="--scaling: the index folder")
    ap.add_argument("--inputs", type=Path, help="--scaling: JSON object class -> texts")
    ap.add_argument("--old", type=Path, help="--scaling: a checkout of the code to compare with")
    ap.add_argument("--rounds", type=int, default=3, help="--scaling: children per code tree")
    a = ap.parse_args()
    if a.scaling:
        if not (a.index and a.inputs and a.old):
            ap.error("--scaling needs --index, --inputs and --old")
        scaling(a)
        return

    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    idx, tok_path = ensure_index(a.corpus_mb, a.shards)
    tracer = open_tracer(TraceJob((str(idx),), TraceParams()), "bench")
    eng, tok = tracer.engine, tracer.tok
    if a.pure_python_search:
        eng.compiled_search = False
    m = eng.manifest
    sets = make_inputs(eng, tok, a.n)
    if a.sets:
        sets = {k: v for k, v in sets.items() if k in a.sets}
    gens_by_set = {k: [(f"{k}-{i:03d}", t) for i, t in enumerate(v)] for k, v in sets.items()}
    all_gens = [g for v in gens_by_set.values() for g in v]
    info = {"index": str(idx), "n_tokens": m.n_tokens, "n_docs": m.n_docs, "shards": eng.num_shards,
            "vocab": m.vocab_size, "python": platform.python_version(), "machine": platform.machine(),
            "search": "pure Python" if a.pure_python_search else "compiled",
            "inputs": {k: {"n": len(v), "mean_tokens": round(statistics.mean(len(tok.encode(t)) for _, t in v), 1)}
                       for k, v in gens_by_set.items()}}
    print(json.dumps(info, indent=1), file=sys.stderr)
    if a.dump:
        t0 = time.perf_counter()
        digest = dump(tracer, all_gens, a.dump)
        print(json.dumps({"dump": str(a.dump), "sha256": digest, "seconds": round(time.perf_counter() - t0, 1)}))
        return

    logp, floor = tracer.logprobs, tracer.floor
    # warm-up: touch the pages both pipelines need
    run_ours(tracer, all_gens)
    run_attribute(eng, tok, logp, floor, all_gens)
    pipelines = ("ours", "attr", "py") if a.search_ab else ("ours", "attr")
    per_set: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in range(a.repeats):
        for name, gens in gens_by_set.items():
            order = pipelines if r % 2 == 0 else pipelines[::-1]
            for which in order:
                if which == "py":
                    eng.compiled_search = False
                    w, c, nv, nvc = run_ours(tracer, gens)
                    eng.compiled_search = None
                    per_set[name]["py_wall"].append(w)
                    per_set[name]["py_cpu"].append(c)
                    per_set[name]["py_nv_cpu"].append(nvc)
                elif which == "ours":
                    w, c, nv, nvc = run_ours(tracer, gens)
                    per_set[name]["ours_wall"].append(w)
                    per_set[name]["ours_cpu"].append(c)
                    per_set[name]["ours_nv"].append(nv)
                    per_set[name]["ours_nv_cpu"].append(nvc)
                else:
                    w, c = run_attribute(eng, tok, logp, floor, gens)
                    per_set[name]["attr_wall"].append(w)
                    per_set[name]["attr_cpu"].append(c)
    results = {}
    for name, d in per_set.items():
        n = len(gens_by_set[name])
        med = {k: statistics.median(v) for k, v in d.items()}
        rw = [aw / max(ow - nv, 1e-9) for aw, ow, nv in zip(d["attr_wall"], d["ours_wall"], d["ours_nv"])]
        rc = [ac / max(oc - nv, 1e-9) for ac, oc, nv in zip(d["attr_cpu"], d["ours_cpu"], d["ours_nv_cpu"])]
        rw_nv = [aw / ow for aw, ow in zip(d["attr_wall"], d["ours_wall"])]
        rc_nv = [ac / oc for ac, oc in zip(d["attr_cpu"], d["ours_cpu"])]
        ms = lambda x: round(1000 * x / n, 2)  # noqa: E731
        results[name] = {
            "n": n,
            "ours_wall_ms": ms(med["ours_wall"]), "ours_cpu_ms": ms(med["ours_cpu"]),
            "ours_nv_wall_ms": ms(med["ours_nv"]), "ours_nv_cpu_ms": ms(med["ours_nv_cpu"]),
            "attr_wall_ms": ms(med["attr_wall"]), "attr_cpu_ms": ms(med["attr_cpu"]),
            "ratio_wall_no_nv": round(statistics.median(rw), 2), "ratio_cpu_no_nv": round(statistics.median(rc), 2),
            "ratio_wall_with_nv": round(statistics.median(rw_nv), 2),
            "ratio_cpu_with_nv": round(statistics.median(rc_nv), 2),
            # per core: generations per CPU second of this (single-threaded) process
            "gen_per_cpu_s": round(n / med["ours_cpu"], 1),
            "gen_per_cpu_s_no_nv": round(n / (med["ours_cpu"] - med["ours_nv_cpu"]), 1),
            "gen_per_wall_s": round(n / med["ours_wall"], 1),
            "repeats_ratio_wall_no_nv": [round(x, 2) for x in rw],
            "repeats_ratio_cpu_no_nv": [round(x, 2) for x in rc],
        }
        if "py_cpu" in d:  # pure-Python searches, same repeats
            results[name].update({
                "py_cpu_ms": ms(med["py_cpu"]), "py_gen_per_cpu_s": round(n / med["py_cpu"], 1),
                "py_ratio_cpu_with_nv": round(statistics.median(
                    [ac / pc for ac, pc in zip(d["attr_cpu"], d["py_cpu"])]), 2),
                "compiled_speedup_cpu": round(statistics.median(
                    [pc / oc for pc, oc in zip(d["py_cpu"], d["ours_cpu"])]), 2),
                "compiled_speedup_cpu_no_nv": round(statistics.median(
                    [(pc - pn) / max(oc - on, 1e-9) for pc, pn, oc, on in
                     zip(d["py_cpu"], d["py_nv_cpu"], d["ours_cpu"], d["ours_nv_cpu"])]), 2),
            })
    try:
        load = [round(x, 1) for x in __import__("os").getloadavg()]
    except OSError:
        load = None
    info["load_average_after"] = load
    out = {"info": info, "timing": results}
    if not a.no_agreement:
        t0 = time.perf_counter()
        adversarial = {"rank0 (constructed ids)": rank0_inputs(eng, tok, sets)} if "verbatim" in sets else {}
        out["agreement"] = agreement(eng, tok, tracer, {**sets, **adversarial})
        out["agreement"]["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
