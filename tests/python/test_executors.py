"""The same generation and tracing code on Ray: byte-identical lake rows to the local path; GPUs declared to a
CPU-only Ray cluster reach each actor as its own CUDA_VISIBLE_DEVICES; a killed actor is replaced and its batch
run again, nothing lost or repeated (issue 29 item 2)."""

from __future__ import annotations

import sys

import pytest

from ingest.corpora import register_corpus
from ingest.executors import get_executor
from ingest.generate.backends import SamplingConfig, get_backend
from ingest.generate.plan import prompt_units
from ingest.generate.runner import RunSpec, run_generation
from ingest.lake import Lake
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, trace_generations

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_local():
    # GPUs declared on a machine without any: Ray schedules them as logical resources and sets each actor's
    # CUDA_VISIBLE_DEVICES exactly as on a GPU node (the scheduling path `--gpus-per-worker` takes)
    ray.init(num_cpus=4, num_gpus=4, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _rows(lake: Lake, table: str, key: str) -> list[dict]:
    return sorted(lake.read(table).to_pylist(), key=lambda r: r[key])


def _generate(lake: Lake, mini_stack, executor) -> None:
    from ingest.prompts.build import build_prompt_set

    register_corpus(lake, "mini", [mini_stack["index"]])
    build_prompt_set(lake, "mini", "minimal_cue", n=4, seed=3)
    kwargs = {"batch_size": 8, "threads": 1}
    be = get_backend("hf", str(mini_stack["model"]), **kwargs)
    units = prompt_units(lake, "mini", "minimal_cue", be, n_samples=3, n_generations=0)
    spec = RunSpec("r", str(mini_stack["model"]), "minimal_cue", "hf", None, SamplingConfig(max_new_tokens=16),
                   chunk_size=4)
    run_generation(lake, be, spec, units, progress=False, executor=executor, backend_kwargs=kwargs)


def test_ray_gives_identical_generations_and_traces(ray_local, mini_stack, tmp_path) -> None:
    lakes = {}
    for name, ex in (("local", None), ("ray", get_executor("ray", workers=2))):
        lake = Lake(tmp_path / name)
        _generate(lake, mini_stack, ex)
        gens = [(g["generation_id"], g["text"]) for g in lake.read("generations").to_pylist()]
        gens += [(f"doc{i}", d["text"][:300]) for i, d in enumerate(mini_stack["docs"][:4])]  # verbatim text
        job = TraceJob((str(mini_stack["index"]),), TraceParams())
        trace_generations(lake, job, gens, "run:r", workers=1, batch_size=5, progress=False,
                          executor=ex or get_executor("local", workers=1))
        lakes[name] = lake
    for table, key in (("generations", "generation_id"), ("spans", "span_id"),
                       ("span_documents", "span_document_id"), ("span_counts", "span_id")):
        a, b = _rows(lakes["local"], table, key), _rows(lakes["ray"], table, key)
        assert a == b, table
    assert _rows(lakes["local"], "span_documents", "span_document_id"), "verbatim inputs must find documents"
    # the local process pool (`trace --workers 2`) writes the same rows as one in-process worker
    pool_lake = Lake(tmp_path / "pool")
    gens = [(g["generation_id"], g["text"]) for g in lakes["local"].read("generations").to_pylist()]
    gens += [(f"doc{i}", d["text"][:300]) for i, d in enumerate(mini_stack["docs"][:4])]
    trace_generations(pool_lake, TraceJob((str(mini_stack["index"]),), TraceParams()), gens, "run:r",
                      batch_size=5, progress=False, executor=get_executor("local", workers=2))
    for table, key in (("spans", "span_id"), ("span_documents", "span_document_id"), ("span_counts", "span_id")):
        assert _rows(pool_lake, table, key) == _rows(lakes["local"], table, key), table
    # a Ray run interrupted after some batches resumes without duplicates
    lake = lakes["ray"]
    parts = lake.partitions("span_counts")
    lake.delete("span_counts", parts[0])
    gens = [(g["generation_id"], g["text"]) for g in lake.read("generations").to_pylist()]
    gens += [(f"doc{i}", d["text"][:300]) for i, d in enumerate(mini_stack["docs"][:4])]
    s = trace_generations(lake, TraceJob((str(mini_stack["index"]),), TraceParams()), gens, "run:r",
                          batch_size=5, progress=False, executor=get_executor("ray", workers=2))
    assert s.n_skipped == s.n_batches - 1
    assert _rows(lake, "spans", "span_id") == _rows(lakes["local"], "spans", "span_id")


def test_ray_actors_reserve_gpus_and_refuse_more_than_the_cluster_has(ray_local) -> None:
    from ingest.errors import UserError
    from ingest.executors import RayExecutor, WorkerSpec

    have = ray.cluster_resources().get("GPU", 0)
    with pytest.raises(UserError, match="--gpus-per-worker"):
        list(RayExecutor(workers=1, num_gpus_per_worker=have + 1).map(WorkerSpec(_Echo), [[1], [2]]))
    # num_gpus_per_worker=0 (the default) is the path test_ray_gives_identical_generations_and_traces runs


class _Echo:  # never built: the refusal comes before any actor starts
    def __call__(self, batch):
        return batch


class _Devices:
    """Reports which process ran a batch and which GPUs Ray gave that process."""

    def __call__(self, batch):
        import os

        return os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES"), [str(g) for g in ray.get_gpu_ids()]


@pytest.mark.parametrize("gpus_per_worker, workers", [(1, 4), (2, 2)])
def test_declared_gpus_give_each_actor_its_own_devices(ray_local, gpus_per_worker, workers) -> None:
    from ray import cloudpickle  # Ray's own copy pickles the arguments of actors

    from ingest.executors import RayExecutor, WorkerSpec

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the probe lives in this test module
    got = list(RayExecutor(workers=workers, num_gpus_per_worker=gpus_per_worker, num_cpus_per_worker=0.5)
               .map(WorkerSpec(_Devices), [[i] for i in range(8)]))
    by_pid = {pid: (cvd, ids) for pid, cvd, ids in got}
    assert len(by_pid) == workers, "one actor per worker"
    seen: set[str] = set()
    for cvd, ids in by_pid.values():
        devices = cvd.split(",")
        assert len(devices) == gpus_per_worker and sorted(devices) == sorted(ids)
        assert not seen & set(devices), "two actors share a GPU"
        seen |= set(devices)
    assert seen <= {"0", "1", "2", "3"}


class _DiesOnce:
    """Kills its own process the first time it meets batch 3 (a marker file remembers), like an OOM kill."""

    def __init__(self, marker: str):
        self.marker = marker

    def __call__(self, batch):
        import os

        if batch == [3] and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return [b * 10 for b in batch]


def test_a_killed_actor_is_replaced_and_its_batch_run_again(ray_local, tmp_path) -> None:
    from ray import cloudpickle

    from ingest.executors import RayExecutor, WorkerSpec

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "died"
    got = list(RayExecutor(workers=2, num_cpus_per_worker=0.5).map(WorkerSpec(_DiesOnce, (str(marker),)),
                                                                    [[i] for i in range(6)]))
    assert marker.exists(), "the actor never died: the test did not test anything"
    assert got == [[0], [10], [20], [30], [40], [50]]


class _FakeLLM:
    """Stands in for `vllm.LLM` inside an actor: records what the backend passed and what the process sees."""

    def __init__(self, model, tokenizer, **kwargs):
        import os

        import ray

        self.seen = {"kwargs": kwargs, "pid": os.getpid(), "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
                     "ray_gpus": sorted(str(g) for g in ray.get_gpu_ids()),
                     "placement_group": ray.util.get_current_placement_group()}


class _VLLMProbe:
    """A generate worker with the real vllm backend on a fake `vllm` module (vLLM itself is not installed here)."""

    def __init__(self, model: str, engine_kwargs: dict):
        import types

        from ingest.generate.runner import GenerateWorker

        sys.modules["vllm"] = types.SimpleNamespace(LLM=_FakeLLM)
        self.worker = GenerateWorker("vllm", model, engine_kwargs)

    def __call__(self, batch):
        return self.worker.backend.llm.seen


def test_vllm_tensor_parallel_workers_stay_on_the_actors_gpus(ray_local, mini_stack) -> None:
    """`--gpus-per-worker 2 --engine-arg tensor_parallel_size=2` on 4 declared GPUs: two actors, each with its own
    two devices, and each engine told to start its workers as processes on them (`mp`): with vLLM's "ray" backend
    (its default inside a placement group) the engine would ask the cluster for two more GPUs."""
    from ray import cloudpickle

    from ingest.executors import RayExecutor, WorkerSpec

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spec = WorkerSpec(_VLLMProbe, (str(mini_stack["model"]), {"tensor_parallel_size": 2, "dtype": "bfloat16"}))
    got = list(RayExecutor(workers=2, num_gpus_per_worker=2, num_cpus_per_worker=0.5).map(spec, [[0], [1], [2]]))
    by_pid = {s["pid"]: s for s in got}
    assert len(by_pid) == 2
    devices = [s["cvd"].split(",") for s in by_pid.values()]
    for s, d in zip(by_pid.values(), devices):
        assert s["kwargs"] == {"tensor_parallel_size": 2, "dtype": "bfloat16", "distributed_executor_backend": "mp"}
        assert len(d) == 2 and sorted(d) == s["ray_gpus"]  # local ranks 0, 1 of mp = the actor's own two GPUs
        assert s["placement_group"] is None  # so nothing in the actor asks Ray for other GPUs
    assert not set(devices[0]) & set(devices[1]) and set(devices[0]) | set(devices[1]) <= {"0", "1", "2", "3"}
