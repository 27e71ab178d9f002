"""`lmaudit contamination` (issue 31 item 1) on the mini stack: hand-built items whose status is known.

Oracles are independent of the code under test: n-grams, covered tokens and longest spans by brute force
over the corpus tokenized with the index's tokenizer (substring search on the token ids), the prefix attack
against transformers' own greedy `generate`, the bootstrap against scipy's, rates counted by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ingest.home import db_path
from ingest.lake import Lake

from conftest import run_cli

N = 13  # the default of var contamination_ngram


def _tok(stack):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(stack["model"] / "tokenizer.json"))


def _s(ids) -> str:
    return "".join(chr(0x1000 + i) for i in ids)


class Corpus:
    """The corpus as strings of token ids, one per document (a match never crosses documents)."""

    def __init__(self, stack):
        self.tok = _tok(stack)
        self.docs = [_s(self.tok.encode(d["text"]).ids) for d in stack["docs"]]

    def occurs(self, ids) -> bool:
        q = _s(ids)
        return any(q in d for d in self.docs)

    def measure(self, text: str) -> dict:
        ids = self.tok.encode(text).ids
        L = len(ids)
        found = [i for i in range(L - N + 1) if self.occurs(ids[i:i + N])]
        covered = {t for i in found for t in range(i, i + N)}
        longest = 0
        for b in range(L):  # longest substring that occurs, by brute force (grow while it occurs)
            e = b + longest + 1
            while e <= L and self.occurs(ids[b:e]):
                longest = e - b
                e += 1
        return {"L": L, "n_ngrams": max(L - N + 1, 0), "found": len(found), "covered": len(covered),
                "longest": longest}


FRESH = ("Quillon zebras negotiate turquoise ladders while seventeen violins hum beneath marmalade clouds; "
         "the harbourmaster counts every obsidian pebble twice before breakfast.")
FRESH_ANSWER = "Nine lanterns, said the cartographer of the upside-down orchard."


@pytest.fixture(scope="module")
def items(mini_stack):
    """Verbatim, half-copied and fresh items, plus one whose answer is the model's own greedy continuation."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    doc = next(d["text"] for d in mini_stack["docs"] if d["id"] == "py-3")
    start = doc.index("\n", 200) + 1
    verbatim_in, verbatim_ans = doc[start:start + 400], doc[start + 400:start + 520]
    half_in = doc[start + 600:start + 760] + " " + FRESH
    tok = AutoTokenizer.from_pretrained(mini_stack["model"])
    model = AutoModelForCausalLM.from_pretrained(mini_stack["model"]).eval()
    echo_in = "The cat sat on the"
    ids = torch.tensor([[tok.eos_token_id, *tok.encode(echo_in, add_special_tokens=False)]])
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=6,
                             pad_token_id=tok.eos_token_id)
    echo_ans = tok.decode(out[0, ids.shape[1]:ids.shape[1] + 3].tolist())  # the first 3 greedy tokens
    return [
        {"id": "verbatim", "input": verbatim_in, "answer": verbatim_ans, "score": 1},
        {"id": "half", "input": half_in, "answer": FRESH_ANSWER, "score": 1},
        {"id": "fresh", "input": FRESH, "answer": FRESH_ANSWER, "score": 0},
        {"id": "fresh2", "input": FRESH_ANSWER + " " + FRESH, "answer": "Quartz.", "score": 0},
        {"id": "echo", "input": echo_in, "answer": echo_ans},
    ]


@pytest.fixture(scope="module")
def warehouse(mini_stack, items, tmp_path_factory):
    home = tmp_path_factory.mktemp("contam") / "warehouse"
    Lake(home).init()
    bench = home.parent / "mybench.jsonl"
    bench.write_text("".join(json.dumps(i) + "\n" for i in items))
    proc = run_cli("contamination", str(bench), "--index", str(mini_stack["index"]), "--model",
                   str(mini_stack["model"]), home=home, check=True)
    proc_b = run_cli("build", "-s", "+fct_contamination_benchmarks", "-s", "+fct_contamination_scores",
                     home=home, check=True)
    return {"home": home, "bench": bench, "out": proc.stdout + proc_b.stdout}


def _rows(home: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


@pytest.mark.slow  # a real `lmaudit contamination` and `lmaudit build` (module fixture, ~25 s)
def test_items_match_brute_force_ngrams_and_spans(mini_stack, items, warehouse) -> None:
    corpus = Corpus(mini_stack)
    got = {r["item_id"]: r for r in _rows(warehouse["home"], "select * from fct_contamination_items")}
    assert set(got) == {i["id"] for i in items}
    for it in items:
        a, b = corpus.measure(it["input"]), corpus.measure(it["answer"])
        r = got[it["id"]]
        assert (r["input_tokens"], r["answer_tokens"]) == (a["L"], b["L"]), it["id"]
        assert r["input_longest_span"] == a["longest"] and r["answer_longest_span"] == b["longest"], it["id"]
        assert r["n_ngrams"] == a["n_ngrams"] + b["n_ngrams"], it["id"]
        assert r["ngrams_found"] == a["found"] + b["found"], it["id"]
        assert r["covered_share"] == pytest.approx((a["covered"] + b["covered"]) / (a["L"] + b["L"])), it["id"]
        share = (a["covered"] + b["covered"]) / (a["L"] + b["L"])
        expected = "clean" if a["found"] + b["found"] == 0 else "contaminated" if share >= 0.8 else "partly"
        assert r["status"] == expected, it["id"]
    # and the statuses the items were built to have
    assert got["verbatim"]["status"] == "contaminated" and got["verbatim"]["covered_share"] > 0.95
    assert got["half"]["status"] == "partly"
    assert got["fresh"]["status"] == got["fresh2"]["status"] == "clean"


@pytest.mark.slow  # a real `lmaudit contamination` and `lmaudit build` (module fixture, ~25 s)
def test_prefix_attack_matches_greedy_generate(items, warehouse) -> None:
    att = {r["item_id"]: r for r in _rows(warehouse["home"], "select * from stg_contamination_attacks")}
    assert set(att) == {i["id"] for i in items}
    assert att["echo"]["reproduced"] is True and att["echo"]["answer_prefix_share"] == 1.0
    # a random 1-layer model writes none of the other answers
    assert [k for k, r in att.items() if r["reproduced"]] == ["echo"]
    assert "1/5 answers reproduced" in warehouse["out"]


@pytest.mark.slow  # a real `lmaudit contamination` and `lmaudit build` (module fixture, ~25 s)
def test_benchmark_rates_by_hand(warehouse) -> None:
    got = {r["item_id"]: r["status"] for r in _rows(warehouse["home"], "select * from fct_contamination_items")}
    att = {r["item_id"]: r["reproduced"] for r in _rows(warehouse["home"], "select * from stg_contamination_attacks")}
    (b,) = _rows(warehouse["home"], "select * from fct_contamination_benchmarks")
    n = len(got)
    n_cont = sum(s == "contaminated" for s in got.values())
    assert (b["benchmark"], b["n_items"], b["n_attacked"]) == ("mybench", 5, 5)
    assert b["contamination_rate"] == pytest.approx(n_cont / n)
    assert b["overlap_rate"] == pytest.approx(sum(s != "clean" for s in got.values()) / n)
    assert b["reproduction_rate"] == pytest.approx(sum(att.values()) / n)
    clean = [k for k, s in got.items() if s == "clean"]
    assert b["reproduction_rate_clean"] == pytest.approx(sum(att[k] for k in clean) / len(clean))
    (s,) = _rows(warehouse["home"], "select * from fct_contamination_scores")
    assert (s["n_scored"], s["n_clean"], s["n_contaminated"]) == (4, 2, 1)  # echo has no score
    assert (s["score_clean"], s["score_contaminated"], s["gap"]) == (0.0, 1.0, 1.0)
    assert (s["gap_lower"], s["gap_upper"]) == (1.0, 1.0)  # no spread in either group: a zero-width interval
    assert s["score_not_clean"] == 1.0


@pytest.mark.slow  # uses the module's built warehouse
def test_report_section_shows_the_benchmark(warehouse, tmp_path) -> None:
    from ingest.export import connect_marts
    from ingest.report.contamination import contamination_section

    con = connect_marts(warehouse["home"])
    try:
        page, images, skipped = contamination_section(con, tmp_path)
    finally:
        con.close()
    assert "<h2>Benchmark contamination</h2>" in page and "<td>mybench</td>" in page and not skipped
    assert images["contamination_classes"].stat().st_size > 1000


def test_score_gap_interval_agrees_with_scipy() -> None:
    from scipy import stats

    from ingest.contamination.scores import score_gap

    rng = np.random.default_rng(5)
    a, b = rng.binomial(1, 0.4, 60).astype(float), rng.binomial(1, 0.7, 40).astype(float)
    g = score_gap(a, b, 4000, 1, 0.95)
    assert g.mean_a == pytest.approx(a.mean()) and g.gap == pytest.approx(b.mean() - a.mean())
    ref = stats.bootstrap((a, b), lambda x, y: y.mean() - x.mean(), n_resamples=4000, method="percentile",
                          vectorized=False, paired=False, random_state=2).confidence_interval
    assert g.gap_lower == pytest.approx(ref.low, abs=0.03) and g.gap_upper == pytest.approx(ref.high, abs=0.03)
    empty = score_gap(a, [], 10, 0, 0.95)
    assert empty.mean_b is None and empty.gap is None and empty.gap_lower is None


def test_prefix_share_by_hand() -> None:
    from ingest.contamination.attack import prefix_share

    assert prefix_share("  Paris  is big", "Paris") == 1.0
    assert prefix_share("Pa ris", "Paris") == 2 / 5
    assert prefix_share("The answer\n\nis 4", "The answer is 4") == 1.0


@pytest.mark.parametrize("rows, message", [
    ([{"id": "a", "input": "x", "answer": "y"}, {"id": "b", "input": "", "answer": "y"}], "row 2: 'input' is empty"),
    ([{"id": "a", "input": "x"}], "row 1: no 'answer'"),
    ([{"id": "a", "input": "x", "answer": "y"}, {"id": "a", "input": "z", "answer": "w"}], "id 'a' appears again"),
    ([{"input": "x", "answer": "y"}], "row 1: needs an 'id'"),
])
def test_bad_benchmarks_are_one_line_exit_2_nothing_written(mini_stack, tmp_path, rows, message) -> None:
    home = tmp_path / "warehouse"
    Lake(home).init()
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    bench = tmp_path / "bad.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli("contamination", str(bench), "--index", str(mini_stack["index"]), home=home)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], proc.stderr
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before


def test_sampled_benchmark_copies_and_invents_as_it_says(mini_stack) -> None:
    from ingest.contamination.sample import ANSWER_CHARS, INPUT_CHARS, sample_benchmark
    from ingest.index.engine import IndexEngine
    from ingest.index.tokenizer import load_tokenizer

    engine = IndexEngine([str(mini_stack["index"])])
    items = sample_benchmark(engine, load_tokenizer(str(mini_stack["model"] / "tokenizer.json")), 2, seed=1)
    texts = [d["text"] for d in mini_stack["docs"]]
    kinds = [i.item_id.split("-")[0] for i in items]
    assert kinds == ["copied"] * 2 + ["half"] * 2 + ["fresh"] * 2
    for it in items:
        whole = it.input + it.answer
        if it.item_id.startswith("copied"):  # input then answer, cut from one document as they are
            assert any(whole in t for t in texts) and len(whole) == INPUT_CHARS + ANSWER_CHARS
        elif it.item_id.startswith("half"):
            assert any(it.input[:INPUT_CHARS // 2] in t for t in texts) and not any(it.answer in t for t in texts)
        else:
            assert not any(it.input[:40] in t for t in texts) and not any(it.answer[:40] in t for t in texts)


def test_score_table_does_not_depend_on_row_order() -> None:
    import pyarrow as pa

    from ingest.contamination.scores import scores_table

    rng = np.random.default_rng(0)
    rows = [{"benchmark": "b", "trace_id": "t", "item_id": f"i{k:02d}", "status": s, "score": float(rng.normal())}
            for k, s in enumerate(["clean"] * 12 + ["partly"] * 5 + ["contaminated"] * 9)]
    params = pa.Table.from_pylist([{"bootstrap_resamples": 200, "bootstrap_seed": 0, "ci_level": 0.9, "params": "{}"}])
    first = scores_table(pa.Table.from_pylist(rows), params).to_pylist()
    rng.shuffle(rows)
    assert scores_table(pa.Table.from_pylist(rows), params).to_pylist() == first
    clean = [r["score"] for r in rows if r["status"] == "clean"]
    assert first[0]["score_clean"] == pytest.approx(sum(clean) / len(clean))
    assert (first[0]["n_clean"], first[0]["n_partly"], first[0]["n_contaminated"]) == (12, 5, 9)
