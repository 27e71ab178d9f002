"""Findings of a newcomer's review (2026-12-04): what a first-time user was told, or not told, by the CLI and the
README. Each test failed before its fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from conftest import REPO, run_cli
from ingest.errors import UserError


def _leaf_commands():
    from ingest.cli.main import app

    def walk(cmd, name=""):
        subs = getattr(cmd, "commands", None)
        if subs:
            for sub_name, sub in subs.items():
                yield from walk(sub, f"{name} {sub_name}".strip())
        else:
            yield name, cmd

    return list(walk(typer.main.get_command(app)))


def _help_at_100(capsys, monkeypatch, *args: str) -> str:
    """`COLUMNS=100 lmaudit ARGS --help`, in this process (fast enough to do for every command)."""
    from ingest.cli.main import run

    monkeypatch.setenv("COLUMNS", "100")
    capsys.readouterr()
    assert run([*args, "--help"]) == 0
    return capsys.readouterr().out


# -- finding 3: `sandbox reference` built a whole sandbox without a word ------------------------------------


def test_sandbox_reference_shows_the_build_progress_as_sandbox_build_does(home: Path, monkeypatch) -> None:
    """It trained the model (10+ minutes for small) with progress=False: nothing on the screen."""
    from ingest.cli import sandbox_cmds
    from ingest.cli.main import run

    calls = []

    def fake_build(lake, home, size, seed=0, progress=True, index_tokenizer="model"):
        calls.append(progress)
        raise UserError("stopped by the test before anything is built")

    monkeypatch.setattr(sandbox_cmds, "build_and_register", fake_build)
    assert run(["-w", str(home), "sandbox", "reference", "--size", "tiny"]) == 2
    assert run(["-w", str(home), "sandbox", "build", "--size", "tiny"]) == 2
    assert calls == [True, True]


# -- finding 4: an unknown sandbox corpus pointed at `index build` / `index attach` ---------------------------


@pytest.mark.parametrize("name,command", [
    ("sandbox-tiny", "lmaudit sandbox build --size tiny"),
    ("sandbox-small-seed3", "lmaudit sandbox build --size small --seed 3"),
    ("sandbox-default-llama", "lmaudit sandbox build --size default --index-tokenizer llama-style"),
    ("sandbox-tiny-seed2-llama", "lmaudit sandbox build --size tiny --seed 2 --index-tokenizer llama-style"),
    ("sandbox-tiny-code-heavy-1200steps", "lmaudit sandbox build --size tiny --mixture code-heavy --steps 1200"),
    ("sandbox-tiny-canary5", "lmaudit sandbox build --size tiny --canary-copies 5"),
])
def test_an_unknown_sandbox_corpus_says_to_build_the_sandbox(lake, name: str, command: str) -> None:
    from ingest.corpora import corpus_row

    with pytest.raises(UserError) as e:
        corpus_row(lake, name)
    assert f"`{command}`" in str(e.value)
    assert "index attach" not in str(e.value)


def test_an_unknown_corpus_of_another_name_keeps_the_index_hint(lake) -> None:
    from ingest.corpora import corpus_row

    with pytest.raises(UserError) as e:
        corpus_row(lake, "pile-dedup")
    assert "lmaudit index build ... --name pile-dedup" in str(e.value) and "index attach" in str(e.value)
    with pytest.raises(UserError) as e:
        corpus_row(lake, "sandbox-huge")  # no such size: not a sandbox name
    assert "sandbox build" not in str(e.value)


def test_prompts_build_and_import_name_the_sandbox_command(home: Path, tmp_path: Path) -> None:
    p = run_cli("prompts", "build", "--corpus", "sandbox-tiny", "--setting", "unconditional", home=home)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "`lmaudit sandbox build --size tiny`" in p.stderr and "index attach" not in p.stderr
    gens = tmp_path / "g.jsonl"
    gens.write_text('{"text": "x"}\n')
    p = run_cli("import", "generations", str(gens), "--run-id", "r", "--model", "m", "--setting", "unconditional",
                "--corpus", "sandbox-small-seed1", home=home)
    assert p.returncode == 2 and "`lmaudit sandbox build --size small --seed 1`" in p.stderr, p.stderr


# -- finding 5: a mistyped --warehouse was told to `lmaudit build` (which built an empty warehouse there) ----


@pytest.mark.parametrize("args", [("sql", "select 1"), ("explore",), ("report",), ("export",), ("docs",)])
def test_a_warehouse_folder_that_does_not_exist_is_named_not_built(tmp_path: Path, args) -> None:
    typo = tmp_path / "typo"
    p = run_cli("-w", str(typo), *args)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = " ".join(p.stderr.split())
    assert str(typo) in line and "no warehouse at" in line, line
    assert "--warehouse" in line and "LMAUDIT_HOME" in line and "lmaudit demo" in line
    assert "run `lmaudit build` first" not in line
    assert not typo.exists()  # report and export made their output folders there first


def test_a_folder_without_a_lake_is_not_a_warehouse(tmp_path: Path) -> None:
    p = run_cli("-w", str(tmp_path), "sql", "select 1")
    assert p.returncode == 2 and "no warehouse at" in p.stderr and "run `lmaudit build` first" not in p.stderr


def test_a_warehouse_not_built_yet_keeps_the_build_hint(home: Path) -> None:
    p = run_cli("sql", "select 1", home=home)
    assert p.returncode == 2 and "run `lmaudit build` first" in p.stderr, p.stderr


# -- finding 8: `@sql/...` query files worked from the repository root only ---------------------------------


def test_sql_files_of_the_project_are_found_from_any_folder(tmp_path: Path, monkeypatch) -> None:
    from ingest.sql_files import read_query_file

    monkeypatch.chdir(tmp_path)
    assert read_query_file("sql/run_overview.sql") == (REPO / "sql" / "run_overview.sql").read_text()
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "run_overview.sql").write_text("select 42")
    assert read_query_file("sql/run_overview.sql") == "select 42"  # the working directory's own file wins
    with pytest.raises(UserError) as e:
        read_query_file("sql/no_such_query.sql")
    assert "sql/no_such_query.sql" in str(e.value) and str(REPO / "sql") in str(e.value)


def test_the_demos_last_hint_is_a_query_that_works_anywhere(tmp_path: Path) -> None:
    from ingest.cli.demo_cmds import next_steps

    lines = next_steps(tmp_path / "w")
    assert not any(line.startswith("explore:") and " sql " in line for line in lines)
    sql_hint = next(line for line in lines if " sql @sql/" in line)
    assert f"--warehouse {tmp_path / 'w'}" in sql_hint
    assert any(" explore" in line for line in lines)


# -- finding 9: --help gaps ----------------------------------------------------------------------------------


def test_every_option_says_what_it_does() -> None:
    missing = [f"{name} --{p.name.replace('_', '-')}" for name, cmd in _leaf_commands() for p in cmd.params
               if not getattr(p, "help", None) and p.name != "help"]
    assert not missing, f"options without help: {missing}"


def test_no_help_is_cut_at_100_columns(capsys, monkeypatch) -> None:
    cut = []
    for name, _ in _leaf_commands():
        if "…" in _help_at_100(capsys, monkeypatch, *name.split()):
            cut.append(name)
    assert not cut, f"help cut with '…' at 100 columns: {cut}"


def test_no_option_reads_no_no(capsys, monkeypatch) -> None:
    bad = [name for name, _ in _leaf_commands() if "--no-no-" in _help_at_100(capsys, monkeypatch, *name.split())]
    assert not bad, bad


def test_export_publish_is_a_normal_flag_pair_and_no_publish_still_works() -> None:
    from ingest.cli.main import app

    export = typer.main.get_command(app).commands["export"]
    ctx = export.make_context("export", ["--no-publish"])
    assert ctx.params["publish"] is False
    assert export.make_context("export", [])
    ctx = export.make_context("export", ["--publish"])
    assert ctx.params["publish"] is True


def test_mixture_help_is_true_about_generations() -> None:
    from ingest.cli.main import app

    mixture = typer.main.get_command(app).commands["mixture"]
    assert "need no generations" not in (mixture.help or "")


def test_help_paragraphs_flow_instead_of_breaking_mid_sentence(capsys, monkeypatch) -> None:
    """typer's rich help keeps a docstring's line breaks after the first paragraph: at 100 columns
    `contamination --help` showed 'its continuation' alone on a line, then 'is checked against the answer'."""
    text = _help_at_100(capsys, monkeypatch, "contamination")
    assert "continuation is checked" in " ".join(text.split())
    assert not re.search(r"continuation\s*\n\s*is checked", text), text
    broken = [name for name, cmd in _leaf_commands()
              if any("\n" in para for para in (cmd.help or "").strip().split("\n\n")[1:])]
    assert not broken, f"help paragraphs with hard line breaks: {broken}"


def test_score_device_defaults_to_auto_as_generate_does() -> None:
    commands = dict(_leaf_commands())
    for name in ("score", "generate", "mia-benchmark score", "contamination"):
        device = next(p for p in commands[name].params if p.name == "device")
        assert device.default == "auto", name


def test_the_readme_command_table_has_every_command() -> None:
    rows = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `lmaudit")]
    missing = [name for name, _ in _leaf_commands()
               if not any(f"`lmaudit {name}" in r or f"/ `{name}" in r for r in rows)]
    assert not missing, f"commands missing from the README's command table: {missing}"


# -- finding 10: the README's set-up section -----------------------------------------------------------------


def test_readme_setup_says_how_long_and_that_the_tests_are_optional() -> None:
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    first, rest = setup.split("```bash", 2)[1], setup.split("```bash", 2)[2]
    intro = setup.split("```bash", 1)[0]
    assert re.search(r"~9 minutes", intro) and "2.5" in intro and "6.5" in intro, intro
    between = setup.split("```bash", 2)[1].split("```", 1)[1]
    assert "optional" in between and "19 min" in between, between
    assert ". .venv/bin/activate && python -m pytest\n" in rest  # the command CI reads stays as it was
    assert "lmaudit demo" in first


def test_build_report_called_with_a_mistyped_warehouse_makes_no_folder(tmp_path: Path) -> None:
    """The report's Python entry (what the CLI calls) names the missing warehouse before making its folder."""
    from ingest.report.build import build_report

    typo = tmp_path / "wharehouse"
    with pytest.raises(UserError, match="no warehouse at"):
        build_report(typo)
    assert not typo.exists()
