"""`lmaudit import generations`: validation (nothing written on a bad file) and idempotence."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.errors import UserError
from ingest.importers.generations import import_generations
from ingest.lake import Lake, make_key

from conftest import run_cli


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


ROWS = [{"prompt_id": "p0", "prompt": "Hello", "sample_idx": 0, "text": "world"},
        {"prompt_id": "p0", "prompt": "Hello", "sample_idx": 1, "text": "there"},
        {"prompt_id": 7, "prompt": "Once", "text": "upon a time"}]


def test_import_writes_run_prompts_and_generations(lake: Lake, tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "g.jsonl", ROWS)
    s = import_generations(lake, f, run_id="r1", model="m", setting="generic")
    assert (s.n_generations, s.n_new_prompts, s.replaced) == (3, 2, False)
    gens = sorted(lake.read("generations").to_pylist(), key=lambda r: r["text"])
    assert [g["text"] for g in gens] == ["there", "upon a time", "world"]
    assert {(g["prompt_id"], g["sample_idx"]) for g in gens} == {("p0", 0), ("p0", 1), ("7", 0)}
    assert gens[2]["generation_id"] == make_key("r1", "p0", 0)
    assert {p["prompt_id"]: p["text"] for p in lake.read("prompts").to_pylist()} == {"p0": "Hello", "7": "Once"}
    (run,) = lake.read("runs").to_pylist()
    assert (run["run_id"], run["model"], run["setting"], run["n_samples"]) == ("r1", "m", "generic", 2)


def test_importing_twice_keeps_the_same_rows(lake: Lake, tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "g.jsonl", ROWS)
    import_generations(lake, f, run_id="r1", model="m", setting="generic")
    first = lake.read("generations").sort_by("generation_id")
    s = import_generations(lake, f, run_id="r1", model="m", setting="generic")
    assert s.replaced and s.n_new_prompts == 0
    assert lake.read("generations").sort_by("generation_id").equals(first)
    assert lake.read("runs").num_rows == 1 and lake.read("prompts").num_rows == 2
    # a second run on the same prompts adds generations, not prompts
    import_generations(lake, f, run_id="r2", model="other", setting="generic")
    assert lake.read("generations").num_rows == 6 and lake.read("prompts").num_rows == 2


def test_prompt_free_rows_are_numbered_in_file_order(lake: Lake, tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "u.jsonl", [{"text": "a"}, {"text": "b"}, {"text": "c"}])
    import_generations(lake, f, run_id="u", model="m", setting="unconditional")
    got = {r["text"]: r["sample_idx"] for r in lake.read("generations").to_pylist()}
    assert got == {"a": 0, "b": 1, "c": 2}


def test_parquet_and_gzip_inputs(lake: Lake, tmp_path: Path) -> None:
    pq.write_table(pa.table({"text": ["x", "y"], "sample_idx": [0, 1]}), tmp_path / "g.parquet")
    import_generations(lake, tmp_path / "g.parquet", run_id="pq", model="m", setting="unconditional")
    with gzip.open(tmp_path / "g.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"text": "z"}) + "\n")
    import_generations(lake, tmp_path / "g.jsonl.gz", run_id="gz", model="m", setting="unconditional")
    assert lake.read("generations").num_rows == 3


BAD = [
    ([{"text": "ok"}, {"prompt": "no text"}], "row 2: missing 'text'"),
    ([{"text": "ok"}, {"text": 5}], "row 2: 'text' must be a string"),
    ([{"text": "ok"}, "{not json"], "row 2: invalid JSON"),
    ([{"text": "ok"}, "[1, 2]"], "row 2: expected a JSON object"),
    ([{"text": "ok", "sample_idx": "one"}], "row 1: 'sample_idx' must be a non-negative integer"),
    ([{"text": "a", "sample_idx": 0}, {"text": "b", "sample_idx": 0}], "row 2: duplicate"),
    ([{"text": "a", "prompt_id": "p", "prompt": "x"}, {"text": "b", "prompt_id": "p", "prompt": "y"}],
     "two different prompt texts"),
    ([], "no generations found"),
    ([{"text": "ok", "seed": 1e23}], "row 1: 'seed' is 99999999999999991611392, larger than the warehouse stores"),
    ([{"text": "ok", "sample_idx": 2**31}], "row 1: 'sample_idx' is 2147483648, larger"),
    ([{"text": "ok"}, '{"text": "lone \\ud800 surrogate"}'], "row 2: 'text' has a character with no UTF-8 form"),
    (['{"text": "ok", "prompt": "\\udfff"}'], "row 1: 'prompt' has a character with no UTF-8 form"),
    (['{"text": "ok", "prompt_id": "\\ud83d"}'], "row 1: 'prompt_id' has a character with no UTF-8 form"),
]


@pytest.mark.parametrize("rows,message", BAD)
def test_bad_files_write_nothing(lake: Lake, tmp_path: Path, rows, message) -> None:
    f = _jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")):
        import_generations(lake, f, run_id="bad", model="m", setting="generic")
    for table in ("runs", "prompts", "generations"):
        assert lake.read(table).num_rows == 0


def test_empty_and_whitespace_outputs_import_by_default(lake: Lake, tmp_path: Path) -> None:
    """A model's empty output is a result (`lmaudit generate` writes it too), not a bad row."""
    f = _jsonl(tmp_path / "e.jsonl", [{"text": "words"}, {"text": ""}, {"text": " \n\t"}])
    s = import_generations(lake, f, run_id="e", model="m", setting="unconditional", purpose="mixture")
    assert (s.n_generations, s.n_blank) == (3, 2)
    assert sorted(r["text"] for r in lake.read("generations").to_pylist()) == ["", " \n\t", "words"]
    assert lake.read("runs").to_pylist()[0]["purpose"] == "mixture"
    with pytest.raises(UserError, match="unknown purpose"):
        import_generations(lake, f, run_id="e2", model="m", setting="unconditional", purpose="fun")


def test_non_utf8_line_is_named(lake: Lake, tmp_path: Path) -> None:
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(UserError, match=r"row 2: not valid UTF-8"):
        import_generations(lake, f, run_id="x", model="m", setting="generic")
    assert lake.read("generations").num_rows == 0


def test_unknown_setting_and_corpus(lake: Lake, tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "g.jsonl", [{"text": "a"}])
    with pytest.raises(UserError, match="unknown setting"):
        import_generations(lake, f, run_id="x", model="m", setting="chat")
    with pytest.raises(UserError, match="corpus 'nope' is not registered"):
        import_generations(lake, f, run_id="x", model="m", setting="generic", corpus="nope")


def test_cli_reports_one_line_without_traceback(home: Path, tmp_path: Path) -> None:
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b'{"text": "caf\xe9"}\n')
    proc = run_cli("import", "generations", str(f), "--run-id", "r", "--model", "m", "--setting", "generic", home=home)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "row 1: not valid UTF-8" in proc.stderr
    ok = _jsonl(tmp_path / "ok.jsonl", ROWS)
    proc = run_cli("import", "generations", str(ok), "--run-id", "r", "--model", "m", "--setting", "generic",
                   home=home, check=True)
    assert "imported run r: 3 generations" in proc.stdout
