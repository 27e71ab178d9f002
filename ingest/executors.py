"""Executors: where the long steps (generation, tracing) run.

A step describes its work as a worker *spec* (a class and its constructor arguments: e.g. "open this
index", "load this model") and a list of batches; an executor builds the workers where it runs them and
returns results in batch order. The driver alone writes results to the lake (atomic partitions), so
every executor gives byte-identical rows and the same resumability.

- `local`: in this process (1 worker) or a pool of spawned processes, one worker object each.
- `ray`: one Ray actor per worker on an existing cluster (`--address`) or a local Ray instance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ingest.errors import StepFailed, UserError
from ingest.registry import Registry


@dataclass(frozen=True)
class WorkerSpec:
    """`cls(*args)` builds a worker; `worker(batch)` processes one batch. Both must be picklable."""

    cls: type
    args: tuple = ()


class Executor(Protocol):
    name: str

    def map(self, spec: WorkerSpec, batches: Sequence[Any]) -> Iterator[Any]: ...


EXECUTORS: Registry[Callable[..., Executor]] = Registry("executor", sort_names=True)
register = EXECUTORS.register


def get_executor(name: str = "local", **kwargs) -> Executor:
    return EXECUTORS.get(name)(**kwargs)


_PROCESS_WORKER: dict[str, Any] = {}


def _init_process(spec: WorkerSpec) -> None:
    _PROCESS_WORKER["w"] = spec.cls(*spec.args)


def _run_in_process(batch: Any) -> Any:
    return _PROCESS_WORKER["w"](batch)


@register("local")
@dataclass
class LocalExecutor:
    """This machine: the worker in-process (workers <= 1) or in spawned processes, one worker object each.

    The pool is a `concurrent.futures.ProcessPoolExecutor`, not `multiprocessing.Pool`: a worker that dies (killed,
    out of memory, a SIGBUS from an index file replaced under it) breaks the pool and the command stops with one
    line (`WorkerDied`), where `multiprocessing.Pool` started a new worker, lost the batch and waited forever.
    Batches are submitted a few per worker ahead and their results returned in batch order.

    With `keep_workers`, the processes outlive a `map` call, as the Ray executor's actors do: the next call with an
    equal `WorkerSpec` reuses them, so `generate --workers N` loads the model once per process for all its settings.
    The caller ends them with `close()`."""

    workers: int = 1
    keep_workers: bool = False
    name: str = "local"
    _kept: tuple = field(default=(None, None), init=False, repr=False, compare=False)  # (spec, pool)

    def close(self) -> None:
        """End the processes kept by `keep_workers` (nothing otherwise)."""
        _, pool = self._kept
        self._kept = (None, None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _pool(self, spec: WorkerSpec, n_batches: int):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        kept_spec, pool = self._kept
        if pool is not None and kept_spec == spec:
            return pool
        self.close()
        n = self.workers if self.keep_workers else max(1, min(self.workers, n_batches))
        pool = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=_init_process,
                                   initargs=(spec,))
        if self.keep_workers:
            self._kept = (spec, pool)
        return pool

    def map(self, spec: WorkerSpec, batches: Sequence[Any]) -> Iterator[Any]:
        if not batches:
            return
        if self.workers <= 1:
            worker = spec.cls(*spec.args)
            for b in batches:
                yield worker(b)
            return
        from collections import deque
        from concurrent.futures.process import BrokenProcessPool

        pool = self._pool(spec, len(batches))
        ahead = 2 * self.workers
        pending: deque = deque()
        todo = iter(batches)
        try:
            for b in todo:
                pending.append(pool.submit(_run_in_process, b))
                if len(pending) >= ahead:
                    break
            while pending:
                result = pending.popleft().result()
                nxt = next(todo, _DONE)
                if nxt is not _DONE:
                    pending.append(pool.submit(_run_in_process, nxt))
                yield result
        except BrokenProcessPool:
            self._kept = (None, None)
            pool.shutdown(wait=False, cancel_futures=True)
            raise WorkerDied() from None
        finally:
            for f in pending:
                f.cancel()
            if not self.keep_workers:
                pool.shutdown(wait=True, cancel_futures=True)


_DONE = object()


class WorkerDied(StepFailed):
    """A worker process ended without an answer: the step stops, and what the driver wrote so far stays."""

    def __init__(self):
        super().__init__("a worker process died while running a batch (killed, out of memory, or a SIGBUS line "
                         "above: an index file changed under it); the batches written so far are kept: fix the "
                         "cause and run the command again to resume")


@register("ray")
@dataclass
class RayExecutor:
    """One actor per worker on a Ray cluster. `address=None` starts (or joins) a local Ray instance;
    `num_cpus` per actor is the resource hint (an actor holding an index wants a core of its own).
    `num_gpus_per_worker` reserves GPUs for each actor (a model generating on `cuda`, or vLLM: at least its
    tensor_parallel_size); Ray then sets the actor's CUDA_VISIBLE_DEVICES, so each sees its own GPU(s) as
    cuda:0. Asking for more GPUs than the cluster has is refused up front (Ray would wait forever).

    An actor that dies (a killed process, a lost node, an out-of-memory kill) is restarted by Ray, up to
    `max_restarts` times, and its unfinished batch is run again on the new actor (`max_task_retries`): workers only
    compute, the driver alone writes to the lake, and a batch's result depends only on the batch (seeded samples),
    so a retried batch is neither lost nor written twice.

    With `keep_workers`, actors outlive a `map` call: the next call with an equal `WorkerSpec` reuses them (adding
    actors if it has more batches), so `generate` loads the model (or starts a vLLM engine) once per actor for all
    its settings instead of once per setting. The caller then ends them with `close()`; without it they end with the
    driver. A call with another spec first ends the kept actors."""

    workers: int = 1
    address: str | None = None
    num_cpus_per_worker: float = 1.0
    num_gpus_per_worker: float = 0.0
    max_restarts: int = 2
    max_task_retries: int = 2
    init_kwargs: dict = field(default_factory=dict)
    keep_workers: bool = False
    name: str = "ray"
    _kept: tuple = field(default=(None, ()), init=False, repr=False, compare=False)  # (spec, actors)

    def close(self) -> None:
        """End the actors kept by `keep_workers` (nothing otherwise)."""
        _, actors = self._kept
        if not actors:
            return
        import ray

        self._kept = (None, ())
        for a in actors:
            ray.kill(a)

    def map(self, spec: WorkerSpec, batches: Sequence[Any]) -> Iterator[Any]:
        try:
            import ray
            from ray.util.actor_pool import ActorPool
        except ImportError:
            raise UserError("the ray executor needs Ray: pip install -e '.[ray]'") from None
        if not batches:
            return
        if not ray.is_initialized():
            kwargs = {"address": self.address, "ignore_reinit_error": True, "log_to_driver": False,
                      "include_dashboard": False, **self.init_kwargs}
            if self.address is None:
                kwargs.pop("address")
            try:
                ray.init(**kwargs)
            except ConnectionError as e:
                raise UserError(f"cannot reach the Ray cluster at {self.address!r} ({e}); check --address") from None
        n_actors = max(1, min(self.workers, len(batches)))
        if self.num_gpus_per_worker < 0:
            raise UserError(f"--gpus-per-worker must be >= 0, got {self.num_gpus_per_worker}")
        if self.num_gpus_per_worker > 0:
            have = float(ray.cluster_resources().get("GPU", 0))
            if have < self.num_gpus_per_worker:
                raise UserError(f"each worker asks for {self.num_gpus_per_worker:g} GPU(s) but the Ray cluster has "
                                f"{have:g}; lower --gpus-per-worker or add GPU nodes")
        actor_cls = ray.remote(num_cpus=self.num_cpus_per_worker, num_gpus=self.num_gpus_per_worker,
                               max_restarts=self.max_restarts, max_task_retries=self.max_task_retries)(_RayWorker)
        kept_spec, kept = self._kept
        if kept and kept_spec != spec:
            self.close()
            kept = ()
        actors = list(kept) + [actor_cls.remote(spec) for _ in range(n_actors - len(kept))]
        if self.keep_workers:
            self._kept = (spec, tuple(actors))
        try:
            yield from ActorPool(actors[:n_actors] if self.keep_workers else actors).map(
                lambda a, b: a.run.remote(b), list(batches))
        finally:
            if not self.keep_workers:
                for a in actors:
                    ray.kill(a)


class _RayWorker:
    def __init__(self, spec: WorkerSpec):
        self.worker = spec.cls(*spec.args)

    def run(self, batch: Any) -> Any:
        return self.worker(batch)
