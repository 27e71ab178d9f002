"""The trace explorer (`lmaudit explore`) and `lmaudit docs`, on a hand-built lake with real dbt.

Oracles: the lake below is written by hand, so every expected value (which span is where, which document
holds the matched text, how many generations pass a filter and in which order) is known without the code;
span placement is checked against a brute-force search over all placements. The browser test drives the
system Chromium (Debian's `chromium` + `chromium-driver`, installed by .ci/run) through Selenium with an
explicit driver path, so nothing is downloaded; it skips, naming what is missing, only without them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from conftest import run_cli
from ingest.build import build
from ingest.explore.spans import locate_spans, segments, window_match
from ingest.lake import Lake

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

EVIL = "<img src=x onerror=\"window.__xss=1\"></script><script>window.__xss=2</script>"
G1 = "The quick brown fox " + EVIL + " jumps over the lazy dog."
G2 = "Permission is hereby granted, free of charge."
PREFIX_GENS = [  # generation id, text, longest span, nv-recall of its documents, full match, domain of documents
    ("g1", G1, 6, [0.5, 0.25], False, "prose"),
    ("g3", "nothing here matches", 0, [], False, None),
    ("g4", "a b c d e f g h", 3, [0.9], False, "code"),
]
WINDOW_A = "quick brown fox, and later the quick brown fox slept at the end of the day"


def write_lake(home: Path) -> None:
    lake = Lake(home)
    lake.write("corpora", "c", [{"corpus_id": "c1", "name": "c1"}])
    lake.write("runs", "r", [{"run_id": "r_pre", "model": "m/model", "corpus_id": "c1", "setting": "prefix"},
                             {"run_id": "r_unc", "model": "m/model", "corpus_id": "c1", "setting": "unconditional"}])
    lake.write("prompts", "p", [{"prompt_id": "p1", "setting": "prefix", "text": "<b>Tell</b> me & more",
                                 "corpus_id": "c1"}])
    lake.write("trace_runs", "t", [{"trace_id": "t1", "corpus_id": "c1", "mode": "mixed"}])
    gens = [{"generation_id": gid, "run_id": "r_pre", "prompt_id": "p1", "sample_idx": i, "text": text}
            for i, (gid, text, *_) in enumerate(PREFIX_GENS)]
    gens.append({"generation_id": "g2", "run_id": "r_unc", "prompt_id": None, "sample_idx": 0, "text": G2})
    spans = [
        # g1: "quick brown fox" (3 tokens, 2 documents), " jumps over the lazy dog." (6 tokens, 1 document)
        {"span_id": "s_a", "generation_id": "g1", "start_tok": 1, "end_tok": 4, "text": "quick brown fox", "count": 7,
         "unigram_logprob": -30.0},
        {"span_id": "s_b", "generation_id": "g1", "start_tok": 20, "end_tok": 26, "text": " jumps over the lazy dog.",
         "count": 2, "unigram_logprob": -12.0},
        {"span_id": "s_c", "generation_id": "g4", "start_tok": 0, "end_tok": 3, "text": "a b c", "count": 50},
        {"span_id": "s_full", "generation_id": "g2", "start_tok": 0, "end_tok": 9, "text": G2, "count": 3,
         "is_full": True},
    ]
    for s in spans:
        s.update(trace_id="t1", length=s["end_tok"] - s["start_tok"], kept=True, is_full=s.get("is_full", False))
    docs = [
        {"span_document_id": "d1", "span_id": "s_a", "shard": 0, "doc_ix": 11, "doc_id": "story-1", "domain": "prose",
         "source": "tales", "metadata": json.dumps({"id": "story-1", "title": "<i>Fox</i>"}), "window_text": WINDOW_A,
         "match_tier": "partial", "nv_recall": 0.5, "nv_matched_words": 3, "nv_generation_words": 6},
        {"span_document_id": "d2", "span_id": "s_a", "shard": 0, "doc_ix": 12, "doc_id": "story-2", "domain": "prose",
         "window_text": "a quick brown fox", "match_tier": "partial", "nv_recall": 0.25},
        {"span_document_id": "d3", "span_id": "s_b", "shard": 1, "doc_ix": 3, "doc_id": "code-1", "domain": "code",
         "window_text": "x = 1 # jumps over the lazy dog.", "match_tier": "partial", "nv_recall": None},
        {"span_document_id": "d4", "span_id": "s_c", "shard": 0, "doc_ix": 5, "domain": "code",
         "window_text": "a b c", "match_tier": "partial", "nv_recall": 0.9},
        {"span_document_id": "d5", "span_id": "s_full", "shard": 0, "doc_ix": 1, "domain": "license",
         "window_text": "MIT. " + G2, "match_tier": "exact_full_raw", "nv_recall": 1.0},
    ]
    traced = [{"traced_generation_id": f"t1:{g['generation_id']}", "trace_id": "t1",
               "generation_id": g["generation_id"], "text_hash": hashlib.md5(g["text"].encode()).hexdigest(),
               "n_index_tokens": 30} for g in gens]
    lake.write("generations", "g", gens)
    lake.write("spans", "s", spans)
    lake.write("span_documents", "s", docs)
    lake.write("traced_generations", "tg", traced)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("explore") / "warehouse"
    write_lake(home)
    res = build(home, select=["+fct_setting_metrics", "+fct_explore_generations", "stg_corpora", "stg_span_counts"],
                vars_="{propme_bootstrap_resamples: 20}", progress=False)
    assert res.success, res.failures
    return home


@pytest.fixture(scope="module")
def served(warehouse):
    from ingest.explore.queries import Explorer
    from ingest.explore.server import make_server

    explorer = Explorer(warehouse)
    server = make_server(explorer, 0, page_size=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    explorer.close()


def get(url: str):
    with urllib.request.urlopen(url) as r:
        return json.loads(r.read())


# the explorer's start-up summary before issue 32 (aggregated over every retrieved document at start): the oracle of
# the fct_explore_generations mart the explorer now copies
SUMMARY_BEFORE = """
with facts as (
    select * from int_generation_facts
    qualify row_number() over (partition by generation_id order by is_traced desc nulls last, trace_id) = 1
),
span_domains as (
    select spans.generation_id, spans.trace_id, docs.domain, count(*) as n
    from stg_spans as spans inner join stg_span_documents as docs on spans.span_id = docs.span_id
    where docs.domain is not null group by all
),
top_domain as (
    select generation_id, trace_id, first(domain order by n desc, domain) as domain from span_domains group by all
)
select
    row_number() over (order by g.run_id, g.prompt_id nulls first, g.sample_idx, g.generation_id) - 1 as ordinal,
    g.generation_id, g.run_id, runs.model, runs.setting, g.prompt_id, g.sample_idx, facts.trace_id,
    coalesce(facts.is_traced, false) as is_traced, facts.n_tokens, facts.n_spans, facts.longest_span,
    case when facts.n_nv_docs > 0 then facts.nv_sum / facts.n_nv_docs end as nv_recall,
    facts.full_match_normalized as full_match, facts.full_match_raw, facts.is_blank, top_domain.domain,
    left(g.text, 160) as preview
from stg_generations as g
inner join stg_runs as runs on g.run_id = runs.run_id
left join facts on g.generation_id = facts.generation_id
left join top_domain on facts.generation_id = top_domain.generation_id and facts.trace_id = top_domain.trace_id
order by ordinal
"""


def test_startup_reads_the_mart_equal_to_the_aggregate_at_start(warehouse) -> None:
    """The explorer's generations table comes from fct_explore_generations (written by the build); it equals,
    row for row, the aggregate the explorer computed at start before (domains of every retrieved document)."""
    from ingest.explore.queries import SUMMARY_SQL, Explorer

    assert "span_documents" not in SUMMARY_SQL and "fct_explore_generations" in SUMMARY_SQL
    ex = Explorer(warehouse)
    try:
        got = ex.con.execute("select * from explore_generations order by ordinal").fetchall()
        want = ex.con.execute(SUMMARY_BEFORE).fetchall()
    finally:
        ex.close()
    assert got == want
    assert {r[1]: r[16] for r in got} == {gid: dom for gid, *_, dom in PREFIX_GENS} | {"g2": "license"}


# ------------------------------------------------------------------------------------ span placement
def _brute_force(text: str, spans: list[dict]) -> list[tuple[int, int]] | None:
    """The placement whose starts follow start_tok order, leftmost first (all occurrences enumerated)."""
    order = sorted(spans, key=lambda s: (s["start_tok"], s["end_tok"], s["span_id"]))
    options = [[i for i in range(len(text)) if text.startswith(s["text"], i)] for s in order]
    for combo in itertools.product(*options):  # product enumerates lexicographically: leftmost first
        ok = all(combo[k] < combo[k + 1] if order[k + 1]["start_tok"] > order[k]["start_tok"]
                 else combo[k] <= combo[k + 1] for k in range(len(combo) - 1))
        if ok:
            return [(a, a + len(s["text"])) for a, s in zip(combo, order)]
    return None


def test_span_placement_matches_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(rng.choice("ab ") for _ in range(rng.randint(4, 14)))
        spans, tok = [], 0
        for k in range(rng.randint(1, 3)):
            a = rng.randint(0, len(text) - 2)
            b = rng.randint(a + 1, len(text))
            tok += rng.randint(0, 2)
            spans.append({"span_id": f"s{k}", "start_tok": tok, "end_tok": tok + b - a, "text": text[a:b]})
        # real spans start at increasing characters when their tokens do: keep only consistent cases
        spans.sort(key=lambda s: s["start_tok"])
        want = _brute_force(text, spans)
        if want is None:
            continue
        got = locate_spans(text, spans)
        order = sorted(spans, key=lambda s: (s["start_tok"], s["end_tok"], s["span_id"]))
        assert [got[s["span_id"]] for s in order] == want, (text, spans)


def test_segments_and_windows() -> None:
    placed = {"a": (0, 5), "b": (3, 8), "x": None}
    segs = segments("0123456789", placed)
    assert [(s["start"], s["end"], sorted(s["spans"])) for s in segs] == [
        (0, 3, ["a"]), (3, 5, ["a", "b"]), (5, 8, ["b"]), (8, 10, [])]
    assert locate_spans("abc", [{"span_id": "z", "start_tok": 0, "end_tok": 1, "text": "\ufffd"}]) == {"z": None}
    # the occurrence nearest the middle of the window (the tracer centres windows on the match)
    assert window_match(WINDOW_A, "quick brown fox") == (31, 46)  # not the first occurrence, at 0
    assert WINDOW_A[31:46] == "quick brown fox" and WINDOW_A.find("quick brown fox") == 0
    assert window_match("abc", "zz") is None and window_match(None, "a") is None


# ------------------------------------------------------------------------------------------ the server
@pytest.mark.slow
def test_json_pages_filters_and_sorts(served) -> None:
    runs = get(served + "api/runs")
    assert [r["run_id"] for r in runs["runs"]] == ["r_pre", "r_unc"]
    assert {r["run_id"]: r["n_generations"] for r in runs["runs"]} == {"r_pre": 3, "r_unc": 1}
    assert set(runs["facets"]["domains"]) == {"prose", "code", "license"}
    # sorted by longest span, two per page: g1 (6), g2 (9, full) ... every page holds at most `size` rows
    p0 = get(served + "api/generations?sort=longest_span&desc=1&page=0&size=2")
    p1 = get(served + "api/generations?sort=longest_span&desc=1&page=1&size=2")
    assert p0["total"] == 4 and [r["generation_id"] for r in p0["rows"] + p1["rows"]] == ["g2", "g1", "g4", "g3"]
    assert [r["longest_span"] for r in p0["rows"] + p1["rows"]] == [9, 6, 3, 0]
    pre = get(served + "api/generations?run=r_pre&sort=nv_recall&desc=1&size=10")
    # nv-recall of a generation: mean over its (span, document) pairs with a value (as the NVR metric)
    assert [(r["generation_id"], r["nv_recall"]) for r in pre["rows"]] == [("g4", 0.9), ("g1", 0.375), ("g3", None)]
    assert [r["domain"] for r in pre["rows"]] == ["code", "prose", None]  # g1: 2 prose documents, 1 code
    assert [r["generation_id"] for r in get(served + "api/generations?full=yes")["rows"]] == ["g2"]
    assert get(served + "api/generations?domain=code&min_longest=1")["total"] == 1
    assert get(served + "api/generations?min_nvr=0.4")["total"] == 2
    bad = urllib.request.Request(served + "api/generations?sort=nope")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad)
    assert e.value.code == 400
    g = get(served + "api/generation?id=g1")
    assert g["prompt"] == "<b>Tell</b> me & more" and g["text"] == G1
    where = {s["span_id"]: (s["char_start"], s["char_end"]) for s in g["spans"]}
    assert where == {"s_a": (4, 19), "s_b": (G1.index(" jumps"), len(G1))}
    docs = get(served + "api/span?id=s_a")["documents"]
    assert [d["doc_id"] for d in docs] == ["story-1", "story-2"]
    assert WINDOW_A[docs[0]["match_start"]:docs[0]["match_end"]] == "quick brown fox"


@pytest.mark.slow
def test_cli_modes_and_errors(warehouse, tmp_path) -> None:
    p = run_cli("explore", "--serve", "--out", str(tmp_path / "x"), home=warehouse)
    assert p.returncode == 2 and "either --serve or --out" in p.stderr
    p = run_cli("explore", "--run", "nope", "--out", str(tmp_path / "x"), home=warehouse)
    assert p.returncode == 2 and "unknown run(s) nope" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("explore", "--out", str(tmp_path / "x"), home=tmp_path / "empty")  # a mistyped folder
    assert p.returncode == 2 and "no warehouse at" in p.stderr and not (tmp_path / "empty").exists()
    from ingest.lake import Lake

    Lake(tmp_path / "unbuilt").init()
    p = run_cli("explore", "--out", str(tmp_path / "x"), home=tmp_path / "unbuilt")  # a warehouse not built yet
    assert p.returncode == 2 and "lmaudit build" in p.stderr
    p = run_cli("explore", "--run", "r_pre", "--out", str(tmp_path / "site"), home=warehouse, check=True)
    assert "3 generations" in p.stdout
    assert (tmp_path / "site" / "index.html").exists()


# ------------------------------------------------------------------------------------------ the browser
def _driver():
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("no system Chromium/chromedriver (apt-get install chromium chromium-driver; .ci/run does)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[test]')")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--no-first-run", "--window-size=1300,900"):
        opts.add_argument(a)
    # an explicit driver path: selenium-manager (which would download a driver) never runs
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)


def _open_generation_and_select_span(driver, base: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 30)

    def go(h: str) -> None:
        driver.get(base + h)
        wait.until(lambda d: d.find_element(By.ID, "app").get_attribute("data-ready") == h)

    go("#/")
    assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr td:first-child")] == ["r_pre", "r_unc"]
    go("#/gens?run=r_pre")
    rows = driver.find_elements(By.CSS_SELECTOR, "#generations tbody tr")
    assert [r.get_attribute("data-generation") for r in rows][:1] == ["g1"]  # longest span first
    href = rows[0].find_element(By.TAG_NAME, "a").get_attribute("href")
    go("#" + href.split("#", 1)[1])
    # the generation's text is shown as text: its markup neither renders nor runs
    assert driver.find_element(By.ID, "gen-text").text.strip() == G1
    assert driver.find_element(By.ID, "prompt").text == "<b>Tell</b> me & more"
    assert driver.execute_script("return window.__xss === undefined")
    assert not driver.find_elements(By.CSS_SELECTOR, "#gen-text img, #gen-text script")
    marks = driver.find_elements(By.CSS_SELECTOR, "#gen-text mark.seg")
    assert [m.text.strip() for m in marks] == ["quick brown fox", "jumps over the lazy dog."]
    marks[0].click()  # select the span in the text
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#docs .doc"))
    docs = driver.find_elements(By.CSS_SELECTOR, "#docs .doc")
    assert len(docs) == 2
    assert [d.find_element(By.TAG_NAME, "mark").text.strip() for d in docs] == ["quick brown fox", "quick brown fox"]
    first = docs[0]
    assert "partial" in first.text and "nv-recall 0.500" in first.text and "prose" in first.text
    assert "story-1" in first.text
    assert "corpus count: 7" in driver.find_element(By.ID, "span-facts").text
    # the other span, from the spans list: one document, from the code domain, no nv-recall
    driver.find_element(By.CSS_SELECTOR, ".span-item[data-span='s_b']").click()
    wait.until(lambda d: "code" in d.find_element(By.ID, "docs").text)
    assert driver.find_element(By.CSS_SELECTOR, "#docs .doc mark").text.strip() == "jumps over the lazy dog."


@pytest.mark.slow
def test_browser_served(served) -> None:
    driver = _driver()
    try:
        _open_generation_and_select_span(driver, served)
    finally:
        driver.quit()


@pytest.mark.slow
def test_browser_static_files(warehouse, tmp_path) -> None:
    from ingest.explore.queries import Explorer
    from ingest.explore.static import write_static

    explorer = Explorer(warehouse)
    try:
        res = write_static(explorer, tmp_path / "site", page_size=2)
    finally:
        explorer.close()
    assert res.n_generations == 4
    driver = _driver()
    try:
        _open_generation_and_select_span(driver, res.index.as_uri())
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        # a sort the export holds: position order (ascending, the one direction written), two per page
        driver.get(res.index.as_uri() + "#/gens?run=r_pre")
        wait = WebDriverWait(driver, 30)
        wait.until(lambda d: d.find_element(By.ID, "app").get_attribute("data-ready") == "#/gens?run=r_pre")
        driver.find_element(By.CSS_SELECTOR, "th[data-sort='position']").click()
        wait.until(lambda d: "sort=position" in (d.find_element(By.ID, "app").get_attribute("data-ready") or ""))
        rows = driver.find_elements(By.CSS_SELECTOR, "#generations tbody tr")
        assert [r.get_attribute("data-generation") for r in rows] == ["g1", "g3"]
        assert "page 1 of 2 (3 generations)" in driver.find_element(By.ID, "page-info").text
    finally:
        driver.quit()


# ------------------------------------------------------------------------------------------ dbt docs
@pytest.mark.slow
def test_docs_site(warehouse, served, tmp_path) -> None:
    # dbt writes the catalog through a read-write connection: refused while the explorer holds the file
    p = run_cli("docs", "--out", str(tmp_path / "docs"), home=warehouse)
    assert p.returncode == 2 and "open in another process" in p.stderr and "Traceback" not in p.stderr
    home = tmp_path / "copy"
    shutil.copytree(warehouse, home)
    p = run_cli("docs", "--out", str(tmp_path / "docs"), home=home, check=True)
    assert "models" in p.stdout
    page = (tmp_path / "docs" / "index.html").read_text()
    manifest = json.loads((tmp_path / "docs" / "manifest.json").read_text())
    models = {n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    assert {"stg_spans", "int_generation_facts", "fct_setting_metrics"} <= models
    assert "int_generation_facts" in page  # the static page carries the manifest (lineage, descriptions)
    catalog = json.loads((tmp_path / "docs" / "catalog.json").read_text())
    assert "model.lmaudit.fct_setting_metrics" in catalog["nodes"]


@pytest.mark.slow
def test_report_links_into_the_explorer(warehouse, tmp_path) -> None:
    from ingest.explore.links import report_section
    from ingest.explore.queries import open_warehouse

    con = open_warehouse(warehouse)
    try:
        section = report_section(con, warehouse, tmp_path)
    finally:
        con.close()
    assert "http://127.0.0.1:8765/#/gens?run=r_pre" in section and "#/gens?run=r_unc" in section
    assert "files</a>" not in section  # no static export in <warehouse>/explore yet


@pytest.mark.slow
def test_startup_without_the_mart_aggregates_at_start(tmp_path) -> None:
    """A warehouse built without fct_explore_generations (an older build, or a --select that left it out) still
    opens: the explorer aggregates the same rows at start."""
    from ingest.explore.queries import Explorer

    home = tmp_path / "warehouse"
    write_lake(home)
    res = build(home, select=["+fct_setting_metrics", "stg_corpora", "stg_span_counts"],
                vars_="{propme_bootstrap_resamples: 20}", progress=False)
    assert res.success, res.failures
    ex = Explorer(home)
    try:
        assert ex.summary_source == "aggregated at start"
        got = ex.con.execute("select * from explore_generations order by ordinal").fetchall()
        assert got == ex.con.execute(SUMMARY_BEFORE).fetchall()
    finally:
        ex.close()
