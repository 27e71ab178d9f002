"""Where vLLM's tensor-parallel workers run when the engine starts inside a Ray actor (`--executor ray`).

`lmaudit generate --executor ray --gpus-per-worker 2 --engine-arg tensor_parallel_size=2` makes each Ray actor
reserve 2 GPUs; Ray sets the actor's CUDA_VISIBLE_DEVICES to exactly those two. vLLM (0.32) then has two ways
to start its `tensor_parallel_size x pipeline_parallel_size` workers:

- `distributed_executor_backend="mp"`: worker processes spawned by the engine on this node, local rank r on
  cuda:r of the visible devices, i.e. on the GPUs the actor holds. This is what we want.
- `"ray"`: vLLM creates a NEW placement group of one-GPU bundles (`{"GPU": 1} x world size`) on the cluster,
  unless the caller already runs in a placement group. The actor's own GPUs are already reserved, so the new
  group needs as many GPUs again: on a full cluster it waits forever, elsewhere the model runs on other GPUs
  than the ones the actor reserved (and idle GPUs stay reserved).

Left unset, vLLM picks "mp" only if the actor is not inside a placement group (vllm/config/parallel.py: with Ray
initialised and `ray.util.get_current_placement_group()` set it picks "ray"), which depends on how the user's
Ray job was launched. So the choice is made here, explicitly: "mp" whenever the world size is above 1, and an
explicit other backend is refused with `--executor ray`. `VLLM_RAY_PER_WORKER_GPUS` and
`VLLM_RAY_BUNDLE_INDICES` only matter to the "ray" backend and so are never needed.

A vLLM engine is one node's worth of GPUs here: tensor parallelism across nodes is not what one actor can
hold. Data parallelism is `--workers` (one engine per actor), not vLLM's `data_parallel_size`.
"""

from __future__ import annotations

from ingest.errors import UserError

TP_BACKEND = "mp"  # vLLM's backend for its tensor-parallel workers inside a Ray actor (see the module docstring)


def world_size(engine_kwargs: dict) -> int:
    """GPUs one vLLM engine uses: tensor_parallel_size x pipeline_parallel_size (both default 1)."""
    sizes = []
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        v = engine_kwargs.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UserError(f"--engine-arg {key}={v!r}: must be a whole number >= 1, e.g. {key}=2")
        sizes.append(v)
    return sizes[0] * sizes[1]


def check_ray_placement(engine_kwargs: dict, gpus_per_worker: float) -> None:
    """Refuse, before any actor starts, what cannot run as one vLLM engine per Ray actor on the actor's GPUs."""
    n = world_size(engine_kwargs)
    backend = engine_kwargs.get("distributed_executor_backend")
    if backend not in (None, TP_BACKEND):
        raise UserError(f"--engine-arg distributed_executor_backend={backend} cannot be used with --executor ray: "
                        f"each actor's engine runs its workers as processes on the GPUs the actor reserved "
                        f"({TP_BACKEND}); leave it unset")
    dp = engine_kwargs.get("data_parallel_size", 1)
    if dp != 1:
        raise UserError(f"--engine-arg data_parallel_size={dp} with --executor ray: use --workers {dp} (one engine "
                        "per actor) instead")
    if n > 1 and gpus_per_worker != n:
        raise UserError(f"--engine-arg tensor_parallel_size x pipeline_parallel_size = {n} GPUs per engine needs "
                        f"--gpus-per-worker {n} with --executor ray (got {gpus_per_worker:g})")
    if n == 1 and gpus_per_worker > 1:
        raise UserError(f"--gpus-per-worker {gpus_per_worker:g} with one GPU per engine would leave GPUs idle; pass "
                        f"--engine-arg tensor_parallel_size={gpus_per_worker:g} or --gpus-per-worker 1")


def in_ray_actor() -> bool:
    """True inside a Ray actor (the process of an `--executor ray` worker); False without Ray."""
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None


def engine_kwargs_for(engine_kwargs: dict, in_actor: bool) -> dict:
    """The keyword arguments for `vllm.LLM`: the user's, plus `distributed_executor_backend="mp"` when the engine
    has more than one worker and none was chosen. In a Ray actor any other choice is refused (a second line of
    defence: `check_ray_placement` refuses it in the driver first)."""
    out = dict(engine_kwargs)
    if in_actor:
        backend = out.get("distributed_executor_backend")
        if backend not in (None, TP_BACKEND):
            raise UserError(f"distributed_executor_backend={backend} inside a Ray actor would place vLLM's workers "
                            f"outside the actor's GPUs; use {TP_BACKEND}")
    if world_size(out) > 1:
        out.setdefault("distributed_executor_backend", TP_BACKEND)
    return out
