"""What to simulate, from a scan document: the pipeline column, the message size and the
conditions the recorded order is replayed under, each value with where it came from.

Only the pipeline column is run (PP x VPP stages): tensor, data, context and expert parallelism
change the message size and which ranks form the groups, not the order of the pipeline's P2P ops.
A value the script, the rules and `--set` leave open stays open: a size that is unknown makes
the simulation inconclusive; a condition that is unknown (the torch build, the node layout) is
replayed both ways, and is inconclusive only where the two ways disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.rulebook import files
from auditor.analysis.waitfor.sizes import DTYPE_BYTES, size_words
from auditor.config import model_facts
from auditor.config.model import LaunchConfig
from auditor.config.pipelining_script import is_pipelining_script
from auditor.config.runconfig import RunConfig
from auditor.config.settings import DTYPE_KEYS, PRECISION_KEYS, SEQUENCE_KEYS
from auditor.errors import InputError
from auditor.sources import SourceSet
from auditor.simulate.schedule_flags import SCHEDULE_FLAGS

DTYPE_NAMES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "torch.bfloat16": "bfloat16",
               "fp16": "float16", "float16": "float16", "half": "float16",
               "torch.float16": "float16", "fp32": "float32", "float32": "float32",
               "float": "float32", "torch.float32": "float32"}
# Patches of this package change the schedule's P2P path; they are applied in the simulation.
P2P_PACKAGE = "megatron.core.pipeline_parallel."
# megatron-core's default rank order (parallel_state.initialize_model_parallel, order=
# "tp-cp-ep-dp-pp"): the pipeline is the outermost dimension, so stage s of the first pipeline
# column is global rank s * world_size // PP.
RANK_ORDER_SOURCE = "megatron/core/parallel_state.py initialize_model_parallel(order='tp-cp-ep-dp-pp')"
# rules/nccl.toml's [topology] names: the transports NCCL may take inside one node, and between nodes.
ONE_NODE, NETWORK = "node", "net"


@dataclass(frozen=True)
class PlanValue:
    name: str
    value: Any  # None: unknown
    provenance: str


@dataclass(frozen=True)
class Patch:
    """A framework function that installs a patch of megatron's P2P path, run from its source."""

    target: str
    installer: str  # module.function
    path: str  # the installer's source file
    applied: bool
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "installer": self.installer, "path": self.path,
                "applied": self.applied, "why": self.why}


@dataclass
class SimulationPlan:
    values: dict[str, PlanValue]
    patches: list[Patch]
    megatron_root: Path | None  # None: the schedule is torch's own (simulate/titan_plan.py)
    unknown: list[str] = field(default_factory=list)  # sizes: "what: how to decide it"
    startup_errors: list[str] = field(default_factory=list)  # the real run stops before the schedule
    candidates: dict[str, list[Any]] = field(default_factory=dict)  # condition -> values to replay
    layout: list[dict[str, Any]] = field(default_factory=list)  # per stage: global rank, node
    schedule_stops: list[str] = field(default_factory=list)  # of those, megatron-core's own checks
    # What the release imports that the rank process stands in where absent (simulate.standins):
    # {"module", "imported_by"} of rules [[import_stand_in]]
    stand_ins: list[dict[str, str]] = field(default_factory=list)
    runner: str = "megatron-core"  # whose schedule runs: megatron-core's, or torch's pipelining

    def get(self, name: str) -> Any:
        return self.values[name].value

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.get("message_seq_length"), self.get("micro_batch_size"), self.get("hidden_size"))

    @property
    def message_bytes(self) -> int | None:
        if self.unknown:
            return None
        return math.prod(self.shape) * DTYPE_BYTES[self.get("dtype")]

    def size_words(self) -> str:
        if self.message_bytes is None:
            return "unknown (" + "; ".join(self.unknown) + ")"
        seq, mbs, hidden = self.shape
        return (f"{size_words(self.message_bytes)} = {seq} x {mbs} x {hidden} x "
                f"{DTYPE_BYTES[self.get('dtype')]} B ({self.get('dtype')})")

    def to_json(self) -> dict[str, Any]:
        return {k: {"value": v.value, "provenance": v.provenance} for k, v in self.values.items()}


def plan(doc: dict[str, Any], launch: LaunchConfig, srcs: list[SourceSet],
         microbatches: int | None = None) -> SimulationPlan:
    """The simulation plan for a scan document of `launch` over the sources `srcs`."""
    mcore = next((s for s in srcs if s.name == "megatron-core"), None)
    if mcore is None and is_pipelining_script(launch):
        raise InputError(launch.path, "a script's own torch.distributed.pipelining schedule is not simulated "
                                      "(simulate runs megatron-core's, or torchtitan's at its job config): "
                                      "`p2paudit record -- torchrun ...` of the run decides its order")
    if mcore is None:
        raise InputError("--target", "simulate runs megatron-core's own schedule: add its "
                                     "release (e.g. --target megatron-core==0.17.0)")
    run = RunConfig.from_json(doc["config"])
    values: dict[str, PlanValue] = {}

    def take(name: str, key: str | None = None) -> PlanValue:
        key = key or name
        value = run.known(key)
        values[name] = PlanValue(name, value, run.provenance(key) if value is not None else
                             f"unknown ({run.provenance(key) or 'not derived'})")
        return values[name]

    pp = take("pipeline_size", "pipeline_model_parallel_size").value
    unknown = [] if pp is not None else [
        "pipeline size: give it with --set pipeline_model_parallel_size=N"]
    if pp is not None and (not isinstance(pp, int) or pp < 2):
        raise InputError(launch.path, f"pipeline_model_parallel_size is {pp}: the schedule has "
                                      f"no pipeline P2P to simulate (it needs 2 or more stages)")
    vpp = run.value("virtual_pipeline_model_parallel_size")
    if run.is_unknown("virtual_pipeline_model_parallel_size"):
        vpp = None
        unknown.append("virtual pipeline size: give it with --set "
                       "virtual_pipeline_model_parallel_size=N (or None)")
    values["virtual_stages"] = PlanValue("virtual_stages", vpp, run.provenance(
        "virtual_pipeline_model_parallel_size", "no virtual pipeline"))
    take("schedule", "pipeline_schedule")
    for key in SCHEDULE_FLAGS:
        take(key)
    _defaults(values)
    unknown += _microbatches(values, run, microbatches)
    unknown += _message(values, run, launch)
    for key in (k for k, default in SCHEDULE_FLAGS.items() if default is None):
        if values[key].value is None:
            unknown.append(f"{key}: give it with --set {key}=true|false")
    candidates = conditions(values, run)
    placed = layout(values, run, pp, candidates) if pp is not None else []
    stops = [f for f in doc.get("findings", [])
             if f.get("severity") == "error" and (f.get("detail") or {}).get("category") == "config"]
    # A check of megatron-core itself fails the simulated schedule as it fails the real run; a
    # front end's (Megatron-LM's validate_args) does not stop megatron-core used as a library.
    library = [f["message"] for f in stops
               if str(f["detail"].get("source", "")).startswith("megatron-core ")]
    return SimulationPlan(values, _patches(doc, srcs), mcore.root, unknown, [f["message"] for f in stops],
                candidates, placed, library,
                stand_ins=[{"module": e["module"], "imported_by": e["imported_by"]} for e in
                           files.load("megatron-core", mcore.version).table("import_stand_in")])


def _defaults(values: dict[str, PlanValue]) -> None:
    """megatron-core's own defaults where no front-end rule said anything."""
    for key, default in SCHEDULE_FLAGS.items():
        if default is not None and values[key].value is None:
            values[key] = PlanValue(key, default, f"megatron-core: ModelParallelConfig default "
                                              f"{key}={default}")


def _microbatches(values: dict[str, PlanValue], run: RunConfig, override: int | None) -> list[str]:
    if override is not None:
        values["microbatches"] = PlanValue("microbatches", override, f"--microbatches {override}")
        return []
    n = run.value("num_microbatches")
    if isinstance(n, int):
        values["microbatches"] = PlanValue("microbatches", n, run.provenance("num_microbatches"))
        return []
    gbs, mbs, dp = (run.value(k) for k in ("global_batch_size", "micro_batch_size",
                                         "data_parallel_size"))
    if isinstance(gbs, int) and isinstance(mbs, int) and isinstance(dp, int) and min(gbs, mbs, dp) > 0:
        values["microbatches"] = PlanValue("microbatches", gbs // (mbs * dp),
                                       f"global_batch_size // (micro_batch_size * DP) = "
                                       f"{gbs} // ({mbs}*{dp})")
        return []
    values["microbatches"] = PlanValue("microbatches", None, "unknown")
    return ["micro-batches (global batch, micro batch or DP size unknown): pass --microbatches N"]


def _message(values: dict[str, PlanValue], run: RunConfig, launch: LaunchConfig) -> list[str]:
    """The activation every stage sends: (sequence, micro-batch, hidden) in the pipeline dtype.
    Returns what is unknown about it, each with how to give it."""
    unknown = []

    def first(name: str, keys: tuple[str, ...]) -> Any:
        for key in keys:
            value = run.known(key)
            if value is not None:
                if isinstance(value, str) and value.isdigit():
                    value = int(value)
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise InputError(key, f"must be a positive whole number, not {value!r} "
                                          f"({run.provenance(key, key)})")
                values[name] = PlanValue(name, value, run.provenance(key, key))
                return value
            flag = launch.flags.get(key)
            if flag is not None and flag.value is not None and not isinstance(flag.value, bool):
                try:
                    number = int(str(flag.value))
                except ValueError:
                    continue
                values[name] = PlanValue(name, number, f"{launch.path}:{flag.line}: {flag.spelling} "
                                                   f"{flag.value}")
                return number
        values[name] = PlanValue(name, None, "unknown")
        return None

    if any(run.is_unknown(k) for k in SEQUENCE_KEYS):  # a rule left it open: no flag decides it
        values["seq_length"] = PlanValue("seq_length", None, "unknown" + _why(run, SEQUENCE_KEYS))
        seq = None
    else:
        seq = first("seq_length", SEQUENCE_KEYS)
    if seq is None:
        unknown.append(f"sequence length{_why(run, SEQUENCE_KEYS)}: give it with --set seq_length=N")
    hidden = first("hidden_size", ("hidden_size",))
    if hidden is None:
        unknown.append("hidden size: give it with --set hidden_size=N, or add the model to "
                       "rules/models.toml")
    mbs = run.value("micro_batch_size")
    values["micro_batch_size"] = PlanValue("micro_batch_size", mbs if isinstance(mbs, int) else None,
                                       run.provenance("micro_batch_size", "unknown"))
    if not isinstance(mbs, int):
        unknown.append("micro batch size: give it with --set micro_batch_size=N")
    tp = run.value("tensor_model_parallel_size")
    sp = run.value("sequence_parallel")
    if seq is not None:
        if sp is True and isinstance(tp, int) and tp > 1:
            values["message_seq_length"] = PlanValue(
                "message_seq_length", seq // tp,
                f"sequence parallel: seq_length // TP = {seq} // {tp} per message")
        elif sp in (True, False) and isinstance(tp, int):
            values["message_seq_length"] = PlanValue("message_seq_length", seq,
                                                 "no sequence parallelism: the whole sequence")
        else:
            values["message_seq_length"] = PlanValue("message_seq_length", None, "unknown")
            unknown.append("sequence parallelism or TP size: give them with --set "
                           "sequence_parallel=true|false --set tensor_model_parallel_size=N")
    values["dtype"] = _dtype(run, launch)
    if values["dtype"].value is None:
        unknown.append(f"activation dtype{_why(run, (*DTYPE_KEYS, *PRECISION_KEYS))}: give it with "
                       "--set torch_dtype=bfloat16|float16|float32")
    return unknown


def _why(run: RunConfig, keys: tuple[str, ...]) -> str:
    """` (why)` of the first of `keys` a rule left unknown, as the rule says it; else nothing."""
    return next((f" ({run.provenance(k)})" for k in keys if run.is_unknown(k) and run.provenance(k)), "")


def _dtype(run: RunConfig, launch: LaunchConfig) -> PlanValue:
    for key in DTYPE_KEYS:
        given = run.known(key)
        if given is None:
            continue
        name = DTYPE_NAMES.get(str(given).lower())
        if name is None:
            raise InputError(key, f"{given!r} is not an activation dtype "
                                  f"({', '.join(sorted(set(DTYPE_NAMES.values())))})")
        return PlanValue("dtype", name, run.provenance(key, key))
    for key in DTYPE_KEYS:
        flag = launch.flags.get(key)
        if flag is not None and DTYPE_NAMES.get(str(flag.value).lower()):
            return PlanValue("dtype", DTYPE_NAMES[str(flag.value).lower()],
                         f"{launch.path}:{flag.line}: {flag.spelling} {flag.value}")
    for key in PRECISION_KEYS:
        # The switch as derived; the script's flag only where no rule derived it: a rule may
        # override the flag (slime: bf16 = not fp16, whatever --bf16 says) or leave it open.
        if run.value(key) is True:
            return PlanValue("dtype", DTYPE_NAMES[key], run.provenance(key))
        flag = launch.flags.get(key)
        if run.value(key) is None and flag is not None and str(flag.value).lower() in ("true", "1"):
            return PlanValue("dtype", DTYPE_NAMES[key], f"{launch.path}:{flag.line}: {flag.spelling}")
    if any(run.is_unknown(k) for k in PRECISION_KEYS):  # a rule left the switch open
        return PlanValue("dtype", None, "unknown: " + next(run.provenance(k) for k in PRECISION_KEYS
                                                           if run.is_unknown(k)))
    if launch.style == "megatron-lm":
        return PlanValue("dtype", "float32", "Megatron-LM: neither --bf16 nor --fp16, so params_dtype "
                                         "= torch.float (megatron/training/arguments.py "
                                         "validate_args)")
    model = launch.flags.get("model")
    found = model_facts.lookup(model.value) if model is not None and isinstance(model.value, str) else None
    if found is not None and found.torch_dtype is not None:
        return PlanValue("dtype", found.torch_dtype,
                         f"{found.name} config.json torch_dtype (rules/models.toml: {found.source})")
    return PlanValue("dtype", None, "unknown")


def conditions(values: dict[str, PlanValue], run: RunConfig) -> dict[str, list[Any]]:
    """Each replay condition's possible values: one where the config decides it, both where not."""
    out: dict[str, list[Any]] = {}
    coalesces = run.value("torch_batch_coalesces")
    if coalesces in (True, False):
        out["coalesce"] = [coalesces]
        values["coalesce"] = PlanValue("coalesce", coalesces, run.provenance("torch_batch_coalesces"))
    else:
        out["coalesce"] = [False, True]
        values["coalesce"] = PlanValue("coalesce", None, "unknown: " + run.provenance(
            "torch_batch_coalesces", "the torch version is unknown") + "; pass --torch X.Y.Z")
    eager = run.value("torch_eager_init")
    if eager in (True, False):
        out["init"] = ["eager" if eager else "lazy"]
        values["init"] = PlanValue("init", out["init"][0], run.provenance("torch_eager_init"))
    else:
        out["init"] = ["lazy", "eager"]
        values["init"] = PlanValue("init", None, "unknown: " + run.provenance("torch_eager_init")
                               + "; pass --set init_device_id_given=true|false")
    return out


def layout(values: dict[str, PlanValue], run: RunConfig, pp: int,
           candidates: dict[str, list[Any]], order: str = RANK_ORDER_SOURCE) -> list[dict[str, Any]]:
    """Where the first pipeline column's stages run, and so the transports between neighbours,
    named as rules/nccl.toml's [topology] names them: `node` inside a node (NCCL takes P2P over
    NVLink or PCIe, or SHM), `net` between nodes (NET/Socket or NET/IB). The wait-for model
    takes one topology for the whole run: the network's as soon as one neighbour pair crosses
    nodes; its verdict holds only where every transport of that topology agrees."""
    world, per_node = run.value("world_size"), run.value("nproc_per_node")
    if not (isinstance(world, int) and isinstance(per_node, int) and per_node > 0
            and world % pp == 0):
        candidates["transport"] = [NETWORK, ONE_NODE]
        values["transport"] = PlanValue("transport", None, "unknown: the world size or the GPUs "
                                    "per node are unknown; set NNODES and NPROC_PER_NODE")
        return []
    stride = world // pp
    placed = [{"stage": s, "global_rank": s * stride, "node": s * stride // per_node}
              for s in range(pp)]
    crossing = [(a["stage"], b["stage"]) for a, b in zip(placed, placed[1:])
                if a["node"] != b["node"]]
    transport = NETWORK if crossing else ONE_NODE
    candidates["transport"] = [transport]
    pairs = ", ".join(f"{a}-{b}" for a, b in crossing)
    why = (f"stage s is global rank s x {stride} ({order}), {per_node} GPUs per node: "
           + (f"stage pairs {pairs} cross nodes (network transport)" if crossing else
              "every neighbour pair is on one node (P2P over NVLink or PCIe, or SHM)"))
    if crossing and len(crossing) < pp - 1:
        why += "; the others are on one node, but the model takes one transport: the network's"
    values["transport"] = PlanValue("transport", transport, why)
    return placed


def _patches(doc: dict[str, Any], srcs: list[SourceSet]) -> list[Patch]:
    """The scan's monkeypatches of megatron's P2P path, with the installer's source file: each
    is a module-level function without arguments (as ms-swift's `_patch__batched_p2p_ops`)."""
    out = []
    for p in doc.get("patches", []):
        if p.get("status") == "no" or not p["target"].startswith(P2P_PACKAGE):
            continue
        installer = p["replacement"].split(".<locals>.", 1)[0]
        module, _, function = installer.rpartition(".")
        path = _module_file(module, srcs)
        if path is None or ".<locals>." not in p["replacement"]:
            out.append(Patch(p["target"], installer, "", False,
                             "its installer is not a module-level function of the scanned sources"))
            continue
        out.append(Patch(p["target"], installer, str(path), True, f"{module}.{function}"))
    return out


def _module_file(module: str, srcs: list[SourceSet]) -> Path | None:
    rel = module.replace(".", "/")
    for s in srcs:
        for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
            if candidate in s.files:
                return s.root / candidate
    return None
