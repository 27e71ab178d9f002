"""Generation: seeded reproducibility, resumable runs, prompt sets and their leakage filter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ingest.corpora import open_corpus, register_corpus
from ingest.errors import UserError
from ingest.generate.backends import GenRequest, SamplingConfig, get_backend
from ingest.generate.plan import prompt_units
from ingest.generate.runner import RunSpec, run_generation
from ingest.lake import Lake
from ingest.prompts import settings as S
from ingest.prompts.sentences import length_match, read_sentences

from conftest import run_cli


@pytest.fixture
def stack_lake(mini_stack, home) -> Lake:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    return lake


def test_same_seed_same_sample_regardless_of_batch(mini_stack) -> None:
    be = get_backend("hf", str(mini_stack["model"]), batch_size=4)
    s = SamplingConfig(max_new_tokens=24)
    reqs = [GenRequest(f"k{i}", (be.bos_id,), 42 + i) for i in range(6)]
    a = be.generate(reqs, s)
    b = be.generate(list(reversed(reqs)), s)
    solo = get_backend("hf", str(mini_stack["model"]), batch_size=1).generate([reqs[3]], s)
    assert [o.token_ids for o in a] == [o.token_ids for o in reversed(b)]
    assert solo[0].token_ids == a[3].token_ids
    assert len({o.token_ids for o in a}) > 1  # different seeds give different samples
    assert all(len(o.token_ids) <= 24 and o.finish_reason in ("stop", "length") for o in a)
    greedy = be.generate(reqs[:2], SamplingConfig(temperature=0.0, max_new_tokens=10))
    assert greedy[0].token_ids == greedy[1].token_ids


def test_prompt_sets(mini_stack, stack_lake, tmp_path) -> None:
    corpus = open_corpus(stack_lake, "mini")
    cue = S.minimal_cue(corpus, 20, "en", seed=1)
    assert len(cue.rows) == 20 and all(r["text"][0].isupper() for r in cue.rows)
    assert cue.rows == S.minimal_cue(corpus, 20, "en", seed=1).rows
    pre = S.prefix(corpus, 5, seed=0)
    assert len(pre.rows) == 5
    for r in pre.rows:
        assert len(r["token_ids"]) == 50
        doc_text = next(d["text"] for d in mini_stack["docs"] if d["id"] == r["source_doc"])
        assert doc_text.startswith(r["text"] + r["true_continuation"])
    sents = S.sentences(corpus, "generic", ["The cat sat on the mat.", "Quantum zebras juggle violet pianos."],
                        "en", source="t")
    outcome = {r["text"]: (r["leakage_outcome"], r["leakage_reason"]) for r in sents.rows}
    assert outcome["The cat sat on the mat."][0] == "dropped"
    assert outcome["Quantum zebras juggle violet pianos."] == ("kept", None)
    with pytest.raises(UserError, match="no word list"):
        S.minimal_cue(corpus, 3, "xx")


def test_sentence_files_report_problems(tmp_path) -> None:
    f = tmp_path / "s.txt"
    f.write_text("Hello there, how are you?\n\n" + "x" * 600 + "\nDer Hund ist sehr schön und groß.\n"
                 "Hello there, how are you?\n1\teng\tA tatoeba sentence in English.\n2\tdeu\tEin Satz.\n")
    sf = read_sentences(f, "en")
    assert sf.sentences == ["Hello there, how are you?", "A tatoeba sentence in English."]
    assert sf.dropped["empty line"] == 1 and sf.dropped["duplicate"] == 1
    assert sf.dropped["longer than 500 characters"] == 1 and sf.dropped["not en"] == 1
    assert sf.dropped["other language (tsv column)"] == 1
    (tmp_path / "de.txt").write_text("Der Hund ist sehr schön.\nIch habe keine Zeit.\nDas Wetter ist gut.\n")
    with pytest.raises(UserError, match="do not look like en|no usable en"):
        read_sentences(tmp_path / "de.txt", "en")
    (tmp_path / "bad.txt").write_bytes(b"fine\ncaf\xe9\n")
    with pytest.raises(UserError, match="line 2: not valid UTF-8"):
        read_sentences(tmp_path / "bad.txt")
    assert length_match([3, 12], [("a", 3), ("b", 13), ("c", 30)], seed=0) == ["a", "b"]


def _spec(run_id: str) -> RunSpec:
    return RunSpec(run_id, "mini", "minimal_cue", "hf", None, SamplingConfig(max_new_tokens=12), chunk_size=4)


def test_run_is_resumable_and_never_duplicates(mini_stack, stack_lake) -> None:
    from ingest.prompts.build import build_prompt_set

    build_prompt_set(stack_lake, "mini", "minimal_cue", n=10)  # ten draws, one generation each
    be = get_backend("hf", str(mini_stack["model"]), batch_size=8)
    units = prompt_units(stack_lake, "mini", "minimal_cue", be, n_samples=2, n_generations=0)
    full = run_generation(stack_lake, be, _spec("r"), units, progress=False)
    assert full.n_generations == 10 and full.n_chunks == 3
    rows = sorted(stack_lake.read("generations").to_pylist(), key=lambda r: r["generation_id"])
    # simulate a killed run: drop one finished chunk, re-run, get the identical rows back
    stack_lake.delete("generations", stack_lake.partitions("generations")[1])
    again = run_generation(stack_lake, be, _spec("r"), units, progress=False)
    assert again.n_chunks_skipped == 2
    assert sorted(stack_lake.read("generations").to_pylist(), key=lambda r: r["generation_id"]) == rows
    with pytest.raises(UserError, match="already exists with other parameters"):
        run_generation(stack_lake, be, RunSpec("r", "mini", "minimal_cue", "hf", None, SamplingConfig(top_p=0.5, max_new_tokens=12), chunk_size=4), units, progress=False)


@pytest.mark.slow
def test_killed_generate_command_resumes_to_exact_count(mini_stack, home) -> None:
    """Kill `lmaudit generate` with SIGKILL after its first chunk, re-run it: exact row count, no duplicates."""
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    run_cli("prompts", "build", "--corpus", "mini", "--setting", "unconditional", home=home, check=True)
    args = ["generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--settings", "unconditional",
            "--n-generations", "40", "--max-new-tokens", "8", "--run-prefix", "k"]
    killer = textwrap.dedent(f"""
        import os, sys
        import ingest.generate.runner as r
        real = r.Lake.write
        def write(self, table, part, rows, meta=None):
            out = real(self, table, part, rows, meta)
            if table == "generations":
                os._exit(9)  # dies right after the first chunk is safely written
            return out
        r.Lake.write = write
        sys.argv = ["lmaudit"] + {args!r}
        from ingest.cli.main import run
        run()
    """)
    import os

    env = {**os.environ, "LMAUDIT_HOME": str(home)}
    # a chunk is 256 samples: use 40 generations -> one chunk; kill after it, then force a second run
    proc = subprocess.run([sys.executable, "-c", killer], env=env, capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    assert lake.read("generations").num_rows == 40
    assert lake.read("runs").num_rows == 0  # the runs row is written last: the half run is not committed
    done = run_cli(*args, home=home, check=True)
    assert "1/1 chunks already done" in done.stdout
    assert lake.read("generations").num_rows == 40
    assert lake.read("runs").to_pylist()[0]["finished_at"] is not None


def test_engine_args_parse_numbers_booleans_and_text() -> None:
    from ingest.generate.backends import parse_engine_args

    got = parse_engine_args(["tensor_parallel_size=2", "max_model_len=4096", "gpu_memory_utilization=0.5",
                             "enforce_eager=True", "trust_remote_code=false", "dtype=bfloat16", "seed=none",
                             "allowed_local_media_path=/data/x=y"])
    assert got == {"tensor_parallel_size": 2, "max_model_len": 4096, "gpu_memory_utilization": 0.5,
                   "enforce_eager": True, "trust_remote_code": False, "dtype": "bfloat16", "seed": None,
                   "allowed_local_media_path": "/data/x=y"}
    assert type(got["tensor_parallel_size"]) is int
    for bad in (["no-equals"], ["=3"], ["max-model-len=3"], ["a=1", "a=2"]):
        with pytest.raises(UserError):
            parse_engine_args(bad)


def test_device_and_dtype_resolve_and_refuse_cleanly() -> None:
    import torch

    from ingest.generate.backends import resolve_device, resolve_dtype

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_dtype("auto", "cpu") == "float32"
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16"
    for bad in (lambda: resolve_device("tpu"), lambda: resolve_dtype("int8", "cpu"),
                lambda: resolve_dtype("float16", "cpu")):
        with pytest.raises(UserError):
            bad()
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no GPU"):
            resolve_device("cuda")


def test_hf_backend_on_device_auto_gives_the_cpu_samples(mini_stack) -> None:
    """--device auto / --dtype auto on a CPU machine are exactly the old defaults (cpu, float32)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("on a GPU machine auto means cuda")
    reqs = [GenRequest(f"k{i}", (1, 2, 3), 42 + i) for i in range(3)]
    s = SamplingConfig(max_new_tokens=12)
    old = get_backend("hf", str(mini_stack["model"]), batch_size=4).generate(reqs, s)
    new = get_backend("hf", str(mini_stack["model"]), batch_size=4, device="auto", dtype="auto").generate(reqs, s)
    assert old == new


def test_generate_cli_flags_refuse_in_one_line(home) -> None:
    cases = [
        (["--device", "tpu"], "--device"),
        (["--dtype", "int8"], "--dtype"),
        (["--gpus-per-worker", "1"], "--executor ray"),
        (["--backend", "vllm", "--executor", "ray", "--engine-arg", "tensor_parallel_size=2"], "--gpus-per-worker 2"),
        (["--backend", "vllm", "--executor", "ray", "--gpus-per-worker", "2", "--engine-arg", "tensor_parallel_size=2",
          "--engine-arg", "distributed_executor_backend=ray"], "distributed_executor_backend=ray"),
        (["--backend", "vllm", "--executor", "ray", "--gpus-per-worker", "4", "--engine-arg", "tensor_parallel_size=2"],
         "--gpus-per-worker 2"),
        (["--backend", "vllm", "--executor", "ray", "--gpus-per-worker", "2"], "idle"),
    ]
    for extra, words in cases:
        p = run_cli("generate", "--model", "m", "--corpus", "c", *extra, home=home)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and words in p.stderr, p.stderr


def test_fingerprint_changes_with_what_changes_the_samples() -> None:
    """A resumed run must not mix chunks made on another device, dtype or engine (oracle: equality of keys)."""
    from ingest.generate.backends import SamplingConfig
    from ingest.generate.runner import PromptUnit, RunSpec

    units = [PromptUnit("p0", (1, 2), 3)]
    base = dict(run_id="r", model="m", setting="unconditional", backend="hf", corpus_id="c",
                sampling=SamplingConfig(0.7, 1.0, 20))
    fp = lambda **kw: RunSpec(**{**base, **kw}).fingerprint(units)  # noqa: E731
    assert fp() == fp(engine="{}")
    cpu32 = fp(engine='{"device": "cpu", "dtype": "float32"}')
    assert len({fp(), cpu32, fp(engine='{"device": "cpu", "dtype": "bfloat16"}'),
                fp(engine='{"device": "cuda", "dtype": "float32"}'),
                fp(backend="vllm", engine='{"device": "cpu", "dtype": "float32"}')}) == 5
    assert cpu32 == fp(engine='{"device": "cpu", "dtype": "float32"}')


def test_the_driver_loads_no_model_when_workers_generate(mini_stack, stack_lake, monkeypatch) -> None:
    """Issue 29 item 1: with workers, the driver holds the tokenizer only (no second copy of the model on the
    head node); the samples are the same as an in-process run's."""
    from ingest.generate import backends as B

    built = []
    real_init = B.HFBackend.__init__
    monkeypatch.setattr(B.HFBackend, "__init__", lambda self, *a, **k: (built.append(a), real_init(self, *a, **k))[1])
    drv = B.driver_backend("hf", str(mini_stack["model"]), in_process=False)
    assert built == [] and isinstance(drv, B.TokenizerOnly)
    real = B.driver_backend("hf", str(mini_stack["model"]), in_process=True)
    assert len(built) == 1
    assert drv.bos_id == real.bos_id and drv.encode("def f(x):") == real.encode("def f(x):")
    with pytest.raises(Exception, match="nosuch"):
        B.driver_backend("nosuch", str(mini_stack["model"]), in_process=False)


def test_vllm_placement_under_ray_is_explicit_and_impossible_layouts_are_refused() -> None:
    """The engine arguments a Ray actor hands vllm.LLM (oracle: vLLM 0.32's rules, ingest/generate/placement.py):
    more than one GPU per engine -> workers as local processes (mp), one engine on exactly the actor's GPUs."""
    from ingest.generate.placement import check_ray_placement, engine_kwargs_for

    assert engine_kwargs_for({}, in_actor=True) == {}  # one GPU: vLLM's single-process executor, nothing to place
    assert engine_kwargs_for({"tensor_parallel_size": 2}, in_actor=True) == {
        "tensor_parallel_size": 2, "distributed_executor_backend": "mp"}
    assert engine_kwargs_for({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, in_actor=False)[
        "distributed_executor_backend"] == "mp"
    # outside Ray a user may still run one engine over a Ray cluster of their own (multi-node tensor parallel)
    assert engine_kwargs_for({"tensor_parallel_size": 8, "distributed_executor_backend": "ray"}, in_actor=False)[
        "distributed_executor_backend"] == "ray"
    with pytest.raises(UserError, match="outside the actor's GPUs"):
        engine_kwargs_for({"tensor_parallel_size": 2, "distributed_executor_backend": "ray"}, in_actor=True)
    for ok, gpus in (({}, 0), ({}, 0.5), ({}, 1), ({"tensor_parallel_size": 2}, 2),
                     ({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, 4),
                     ({"tensor_parallel_size": 2, "distributed_executor_backend": "mp"}, 2)):
        check_ray_placement(ok, gpus)
    for bad, gpus, words in (({"tensor_parallel_size": 2}, 1, "--gpus-per-worker 2"),
                             ({"tensor_parallel_size": 2}, 3, "--gpus-per-worker 2"),
                             ({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, 2, "--gpus-per-worker 4"),
                             ({}, 2, "idle"), ({"tensor_parallel_size": 1.5}, 2, "whole number"),
                             ({"tensor_parallel_size": True}, 1, "whole number"),
                             ({"data_parallel_size": 2}, 1, "--workers 2"),
                             ({"tensor_parallel_size": 2, "distributed_executor_backend": "ray"}, 2, "leave it unset")):
        with pytest.raises(UserError, match=words):
            check_ray_placement(bad, gpus)
