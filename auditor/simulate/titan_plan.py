"""What to simulate for a torchtitan launch: torch's own pipelining schedule at the run's
`[parallelism]` settings, each value with where it came from.

torchtitan's builder (rules/torchtitan.toml's entry point) gives the schedule
`get_schedule_class(pipeline_parallel_schedule)`, or `_PipelineScheduleRuntime` loading
`pipeline_parallel_schedule_csv`, `local_batch_size // pipeline_parallel_microbatch_size`
micro-batches, over 1 stage a rank for single-stage schedules and 2 for the others (its fallback
without `pipeline_parallel_layers_per_stage`). The activation a stage sends is (micro-batch size,
seq_len, the model's dim) in the parameters' mixed-precision dtype. Sizes and settings the run
leaves open stay open (inconclusive, with the flag that decides each); the replay conditions are
megatron's (simulate/plan.py): the torch build, the init mode, the node layout.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from auditor.config.model import LaunchConfig
from auditor.config.runconfig import RunConfig
from auditor.errors import InputError
from auditor.simulate.plan import DTYPE_NAMES, SimulationPlan, PlanValue, conditions, layout
from auditor.sources import SourceSet

RUNNER = "torch.distributed.pipelining"
# The recorder skips torch's frames, so torch's schedule's ops are named by the driver's
# `schedule.step` line: the schedule's own sites, not ones the scan could have predicted.
DRIVER = "auditor/simulate/pipelining_rank.py"
# torchtitan's device mesh puts "pp" outermost (["pp", "dp_replicate", "dp_shard", "cp", "tp"]):
# stage s of the first pipeline column is global rank s * world_size // PP, as in megatron.
RANK_ORDER_SOURCE = "torchtitan/distributed/parallel_dims.py: the mesh ['pp', 'dp_replicate', 'dp_shard', 'cp', 'tp']"


def applies(srcs: list[SourceSet]) -> bool:
    """A torchtitan run: its release is among the sources, megatron-core's is not."""
    names = {s.name for s in srcs}
    return "torchtitan" in names and "megatron-core" not in names


def plan(doc: dict[str, Any], launch: LaunchConfig, srcs: list[SourceSet],
         microbatches: int | None = None) -> SimulationPlan:
    """The simulation plan for a scan document of the torchtitan launch `launch`."""
    run = RunConfig.from_json(doc["config"])
    values: dict[str, PlanValue] = {}
    unknown: list[str] = []
    stops: list[str] = []

    def take(name: str, key: str, decide: str, model: str = "") -> Any:
        value = run.known(key)
        if value is None:
            flag = launch.flags.get(model)  # a model size the job config reader found
            if flag is not None and isinstance(flag.value, str) and flag.value.isdigit():
                values[name] = PlanValue(name, int(flag.value), flag.spelling)
                return int(flag.value)
            values[name] = PlanValue(name, None, f"unknown ({run.provenance(key) or 'not derived'})")
            unknown.append(f"{key}: {decide}")
            return None
        values[name] = PlanValue(name, value, run.provenance(key, key))
        return value

    pp = take("pipeline_size", "pipeline_parallel_degree",
              "give --parallelism.pipeline_parallel_degree N or --set pipeline_parallel_degree=N")
    if pp is not None and (not isinstance(pp, int) or pp < 2):
        raise InputError(launch.path, f"pipeline_parallel_degree is {pp}: there is no pipeline "
                                      f"P2P to simulate (it needs 2 or more stages)")
    take("schedule", "pipeline_parallel_schedule",
         "give --parallelism.pipeline_parallel_schedule NAME")
    _csv(values, unknown, run, launch)
    layers = launch.flags.get("model.n_layers")
    _stages_per_rank(values, unknown, run, pp, run.value("n_layers") if layers is None
                     or not str(layers.value).isdigit() else int(str(layers.value)))
    mbs = take("micro_batch_size", "pipeline_parallel_microbatch_size",
               "give --parallelism.pipeline_parallel_microbatch_size N")
    local = take("local_batch_size", "local_batch_size", "give --training.local_batch_size N")
    if microbatches is not None:
        values["microbatches"] = PlanValue("microbatches", microbatches, f"--microbatches {microbatches}")
    elif isinstance(local, int) and isinstance(mbs, int) and mbs > 0:
        if local % mbs:
            stops.append(f"torchtitan: Batch size {local} must be divisible by microbatch_size "
                         f"{mbs} (torchtitan/distributed/pipeline_parallel.py _build_pipeline_schedule)")
        values["microbatches"] = PlanValue("microbatches", local // mbs, f"local_batch_size // "
                                       f"pipeline_parallel_microbatch_size = {local} // {mbs}")
    else:
        values["microbatches"] = PlanValue("microbatches", None, "unknown")
    seq = take("seq_length", "seq_len", "give --training.seq_len N")
    values["message_seq_length"] = PlanValue(
        "message_seq_length", seq, "the whole sequence (TP's sequence sharding of a stage's "
                                   "output is not modelled)")
    take("hidden_size", "hidden_size", "the model's dim: give --job.config_file / --module and "
                                       "--config the release reads, or --set hidden_size=N", "model.dim")
    values["dtype"] = _dtype(run)
    if values["dtype"].value is None:
        unknown.append("activation dtype: give --training.mixed_precision_param bfloat16|float32 "
                       "or --set torch_dtype=bfloat16|float16|float32")
    candidates = conditions(values, run)
    placed = layout(values, run, pp, candidates, RANK_ORDER_SOURCE) if pp is not None else []
    errors = [f["message"] for f in doc.get("findings", []) if f.get("severity") == "error"
              and (f.get("detail") or {}).get("category") == "config"]
    return SimulationPlan(values, [], None, unknown, errors + stops, candidates, placed, stops,
                runner=RUNNER)


def _csv(values: dict[str, PlanValue], unknown: list[str], run: RunConfig,
         launch: LaunchConfig) -> None:
    """The CSV order the run loads into `_PipelineScheduleRuntime`, as a file found here."""
    given = run.value("pipeline_parallel_schedule_csv")
    if run.is_unknown("pipeline_parallel_schedule_csv"):
        values["schedule_csv"] = PlanValue("schedule_csv", None, run.provenance(
            "pipeline_parallel_schedule_csv"))
        unknown.append("pipeline_parallel_schedule_csv: give --parallelism."
                       "pipeline_parallel_schedule_csv PATH (or '' for none)")
        return
    if not given or given == "None":
        values["schedule_csv"] = PlanValue("schedule_csv", "", run.provenance(
            "pipeline_parallel_schedule_csv", "no CSV order"))
        return
    here = Path(launch.path).resolve().parent
    path = Path(str(given))
    found = path if path.is_absolute() else next(
        (d / path for d in [here, *here.parents] if (d / path).is_file()), here / path)
    if not found.is_file():
        values["schedule_csv"] = PlanValue("schedule_csv", None, f"{given}: not found from {here}")
        unknown.append(f"the schedule CSV {given}: simulate where it is (looked for from the "
                       f"script's directory up)")
        return
    values["schedule_csv"] = PlanValue("schedule_csv", str(found), run.provenance(
        "pipeline_parallel_schedule_csv", str(given)))


def _stages_per_rank(values: dict[str, PlanValue], unknown: list[str], run: RunConfig,
                     pp: Any, layers: Any) -> None:
    """None: torchtitan's fallback, which the rank decides from torch's class (1 for a
    single-stage schedule, else 2); else ceil((layers + 2) / layers_per_stage) / PP."""
    key = "pipeline_parallel_layers_per_stage"
    per_stage = run.value(key)
    if per_stage in (None, "None", ""):
        values["virtual_stages"] = PlanValue("virtual_stages", None, "pipeline_parallel_layers_per_"
                                         "stage unset: torchtitan's fallback, 1 stage a rank for a "
                                         "single-stage schedule, else 2")
        return
    if run.is_unknown(key) or not str(per_stage).isdigit() or not isinstance(layers, int):
        values["virtual_stages"] = PlanValue("virtual_stages", None, "unknown")
        unknown.append("stages per rank: give --parallelism.pipeline_parallel_layers_per_stage "
                       "(and --set n_layers=N) or leave it unset")
        return
    total = math.ceil((layers + 2) / int(per_stage))
    values["virtual_stages"] = PlanValue("virtual_stages", total // pp if isinstance(pp, int) else None,
                                     f"ceil(({layers} layers + 1 + 1) / {per_stage}) stages over "
                                     f"PP ranks ({run.provenance(key)})")


def _dtype(run: RunConfig) -> PlanValue:
    for key in ("torch_dtype", "mixed_precision_param"):
        given = run.known(key)
        if given is not None:
            name = DTYPE_NAMES.get(str(given).lower())
            if name is None:
                raise InputError(key, f"{given!r} is not an activation dtype "
                                      f"({', '.join(sorted(set(DTYPE_NAMES.values())))})")
            return PlanValue("dtype", name, run.provenance(key, key))
    return PlanValue("dtype", None, "unknown")
