"""`p2paudit doctor`'s checks, run inside every rank of a torchrun job on the user's cluster.

Whether `batch_isend_irecv` coalesces depends on the torch build, the backend, the debug level and
the group object's type (docs/findings.md §4), so doctor does not work it out from versions: it runs a
2-op batch on each real process group and watches whether torch's coalescing manager ran. The
rest is what a bug report needs next to it: versions, debug level, backend types, lazy or eager
init, timeouts, and the NCCL/torch variables set (judged by `auditor.config.envlint`'s rules).
Every rank checks; rank 0 prints for all, and a rank that differs from rank 0 says so itself.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from auditor.bash.values import EnvVar
from auditor.config.envlint import lint
from auditor.config.model import LaunchConfig
from auditor.dynamic import backends
from auditor.dynamic.nccllog import P2P_CONNECTION, read_logs
from auditor.repro.rank import observe_coalescing

ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_CPP_LOG_LEVEL")
# Compared across ranks: a difference here is a finding on its own.
SHARED = ("torch", "nccl", "cuda", "debug_level", "env")
WIDTH = 100  # a screen line, and one that pastes into a bug report unwrapped
GROUP_SHARED = ("backend_type", "supports_coalescing", "init", "timeout_s", "coalesced")


@dataclass
class GroupReport:
    name: str
    ranks: list[int]
    backend: str  # torch's name for it: nccl, gloo
    group_type: str  # type(group): batch_isend_irecv coalesces only for a plain ProcessGroup
    backend_type: str  # e.g. ProcessGroupNCCL, or _ProcessGroupWrapper under DETAIL
    supports_coalescing: bool | None
    init: str  # "lazy", "eager (cuda:0)", or "at creation" for backends without lazy init
    timeout_s: float | None
    coalesced: bool | None = None  # did the coalescing manager run around a real 2-op batch
    batch_seconds: float | None = None
    batch_error: str | None = None


@dataclass
class RankReport:
    rank: int
    world_size: int
    host: str
    torch: str
    nccl: str | None
    cuda: str | None
    python: str
    debug_level: str  # torch's own reading (dist.get_debug_level)
    store_timeout_s: float | None
    env: dict[str, str]
    env_findings: list[dict[str, str]] = field(default_factory=list)
    groups: list[GroupReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pipeline_groups(pp: int) -> dict[str, dist.ProcessGroup]:
    """The default group and megatron-style PP groups of size `pp` (ranks `k, k + world/pp, ...`,
    so on a multi-node job neighbours sit on different nodes, as in real pipelines). Every rank
    must call this, in the same order: new_group is collective."""
    world = dist.get_world_size()
    # WORLD is None in torch's stubs only before init_process_group, which the caller ran.
    groups: dict[str, dist.ProcessGroup] = {"default": dist.group.WORLD}  # type: ignore[dict-item]
    if 1 < pp <= world:  # a PP group of the whole world is still a group object of its own
        stride = world // pp
        layout = [[k + i * stride for i in range(pp)] for k in range(stride)]
        mine, _ = dist.new_subgroups_by_enumeration(layout)
        groups[f"pp{dist.get_process_group_ranks(mine)}"] = mine
    return groups


def inspect_group(name: str, group: dist.ProcessGroup, device: torch.device) -> GroupReport:
    backend = group._get_backend(device)
    inner = getattr(backend, "wrapped_pg", backend)
    options = getattr(inner, "options", None)
    timeout = getattr(options, "_timeout", None)
    kind = dist.get_backend(group)
    if kind != "nccl":
        init = "at creation"
    elif group.bound_device_id is not None:
        init = f"eager ({group.bound_device_id})"
    else:
        init = "lazy"
    return GroupReport(name, dist.get_process_group_ranks(group), kind, type(group).__name__,
                       type(backend).__name__, getattr(backend, "supports_coalescing", None),
                       init, timeout.total_seconds() if timeout is not None else None)


def try_batch(report: GroupReport, group: dist.ProcessGroup, device: torch.device,
              limit_s: float) -> None:
    """Send to the next rank and receive from the previous one in one batch_isend_irecv, as a
    pipeline does, noting whether torch coalesced it. Every member must call this together."""
    ranks = report.ranks
    if len(ranks) < 2:
        return
    me = ranks.index(dist.get_rank())
    send = torch.full((4,), float(dist.get_rank()), device=device)
    recv = torch.empty(4, device=device)
    ops = [dist.P2POp(dist.isend, send, ranks[(me + 1) % len(ranks)], group),
           dist.P2POp(dist.irecv, recv, ranks[(me - 1) % len(ranks)], group)]
    start = time.monotonic()
    try:
        with observe_coalescing() as seen:
            works = dist.batch_isend_irecv(ops)
        report.coalesced = bool(seen)
        if device.type == "cuda":
            while not all(w.is_completed() for w in works):
                if time.monotonic() - start > limit_s:
                    raise TimeoutError(f"the batch did not complete within {limit_s:g} s")
                time.sleep(0.001)
        for work in works:
            work.wait()
        if int(recv[0].item()) != ranks[(me - 1) % len(ranks)]:
            raise RuntimeError(f"received {recv[0].item()}, expected the previous rank's number")
    except Exception as exc:  # reported, not raised: the other checks still matter
        report.batch_error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
    report.batch_seconds = round(time.monotonic() - start, 4)


def environment() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


def env_findings(env: dict[str, str]) -> list[dict[str, str]]:
    """Variables that do not do what their name suggests, by the rules in rules/torch.toml."""
    launch = LaunchConfig(path="environment", launcher="p2paudit doctor", command_line=0,
                          env={k: EnvVar(k, v, 0, "environ") for k, v in env.items()})
    return [{"variable": f.detail.get("variable", ""), "severity": f.severity,
             "message": f.message, "fix": f.fix} for f in lint(launch, torch.__version__)]


def collect(groups: dict[str, dist.ProcessGroup], device: torch.device,
            batch_limit_s: float = 60.0, env: dict[str, str] | None = None) -> RankReport:
    """This rank's report. Inspects every group before any batch runs, so that the first batch
    does not change what `init` reads; every rank must pass the same groups in the same order.
    `env`: the job's variables, where doctor set its own NCCL_DEBUG* since (`nccl_debug_env`)."""
    nccl = None
    if torch.cuda.is_available() and dist.is_nccl_available():
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    store = distributed_c10d._get_default_store()
    env = environment() if env is None else env
    report = RankReport(dist.get_rank(), dist.get_world_size(), socket.gethostname(),
                        torch.__version__, nccl, torch.version.cuda, platform.python_version(),
                        # Store.timeout is a pybind property torch's stubs leave out.
                        dist.get_debug_level().name, store.timeout.total_seconds(), env,  # type: ignore[attr-defined]
                        env_findings(env))
    report.groups = [inspect_group(name, group, device) for name, group in groups.items()]
    for group_report, group in zip(report.groups, groups.values()):
        try_batch(group_report, group, device, batch_limit_s)
    return report


def nccl_debug_env(directory: Path) -> dict[str, str]:
    """What makes NCCL write its NCCL_DEBUG=INFO log to one file per process in `directory`
    (%h: the host, %p: the pid; src/debug.cc): the lines `dynamic.nccllog` reads are INIT's."""
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV",
            "NCCL_DEBUG_FILE": str(directory / "nccl.%h.%p.log")}


def nccl_log_lines(files: list[Path]) -> list[str]:
    """What this rank's saved NCCL log states (auditor.dynamic.nccllog), and how to use it."""
    if not files:
        return ["NCCL log: NCCL wrote none (NCCL_DEBUG_FILE); run with NCCL_DEBUG=INFO and keep "
                "the job's output"]
    log = read_logs(files)
    lines = [f"NCCL log: saved to {', '.join(log.files)} ({log.info_lines} INFO lines)"]
    if log.versions:
        lines.append(f"  NCCL {log.versions[0].value} ({log.versions[0].where})")
    seen: dict[str, str] = {}
    for c in log.connections:
        p2p = " point-to-point" if c.index == P2P_CONNECTION else ""
        seen.setdefault(c.family + p2p, c.where)
    lines += [f"  via {k} ({w})" for k, w in seen.items()]
    lines += [f"  {f.value} p2p channels per peer ({f.where})" for f in log.per_peer[:1]]
    lines += [f"  P2P chunk {f.value} B ({f.where})" for f in log.chunks[:1]]
    lines += [f"  not in it: {m}" for m in log.missing()]
    lines.append("  pass it to `p2paudit simulate|report|repro --predict --nccl-log FILE` (one "
                 "of the job's own logs says what its nodes do)")
    return lines


def gather_json(value: dict[str, Any], group: dist.ProcessGroup) -> list[dict[str, Any]]:
    """Every rank's `value`, in rank order: all_gather_object's job, without its numpy (torch's
    object collectives turn tensors into bytes through numpy, which a torch install need not
    have) and without pickle. `group` must take CPU tensors (gloo)."""
    data = json.dumps(value).encode()
    world = dist.get_world_size(group)
    sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([len(data)], dtype=torch.int64), group=group)
    lengths = [int(s.item()) for s in sizes]
    mine = torch.zeros(max(lengths), dtype=torch.uint8)
    mine[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    everyone = [torch.empty(max(lengths), dtype=torch.uint8) for _ in range(world)]
    dist.all_gather(everyone, mine, group=group)
    return [json.loads(bytes(t[:n].tolist())) for t, n in zip(everyone, lengths)]


@dataclass
class Checked:
    """What one rank of `check_in_rank` has: every rank's report (rank 0's first), its own, and
    on rank 0 what its NCCL log states."""
    rank: int
    reports: list[dict[str, Any]]
    mine: dict[str, Any]
    nccl_log: list[str]


def check_in_rank(backend: str, pp: int, eager: bool, log_dir: Path | None,
                  batch_limit_s: float) -> Checked:
    """Inside a torchrun rank: joins the job's world, creates its PP groups of `pp` ranks, checks
    each and gathers every rank's report (over gloo: it creates no NCCL communicator). `log_dir`:
    where NCCL writes its log (set before NCCL's first call: it reads NCCL_DEBUG once)."""
    device = torch.device("cpu")
    kwargs: dict[str, Any] = {"backend": backend}
    if backends.backend(backend).device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        if eager:
            kwargs["device_id"] = device
    job_env = environment()
    if log_dir is not None:
        os.environ.update(nccl_debug_env(log_dir))
    dist.init_process_group(**kwargs)
    groups = pipeline_groups(pp)
    gather = dist.new_group(backend="gloo")
    mine = collect(groups, device, batch_limit_s, job_env).to_json()
    reports = gather_json(mine, gather)
    rank = dist.get_rank()
    nccl_log: list[str] = []
    if rank == 0:
        nccl_log = (nccl_log_lines(sorted(log_dir.glob(f"nccl.*.{os.getpid()}.log")))
                    if log_dir is not None else
                    [f"NCCL log: none: the {backend} backend runs no NCCL (doctor --backend nccl "
                     f"on the job's GPUs writes one)"])
    dist.destroy_process_group()
    return Checked(rank, reports, mine, nccl_log)


def disagreements(reports: list[dict[str, Any]]) -> list[str]:
    """What differs from rank 0, one line per rank and field."""
    base = reports[0]
    lines = []
    for other in reports[1:]:
        for key in SHARED:
            if other[key] != base[key]:
                lines.append(f"rank {other['rank']} ({other['host']}): {key} {other[key]!r}, "
                             f"rank 0 has {base[key]!r}")
        for mine, theirs in zip(base["groups"], other["groups"]):
            for key in GROUP_SHARED:
                if _comparable(key, mine[key]) != _comparable(key, theirs[key]):
                    lines.append(f"rank {other['rank']} ({other['host']}): group {theirs['name']} "
                                 f"{key} {theirs[key]!r}, rank 0's {mine['name']} has {mine[key]!r}")
    return lines


def _comparable(key: str, value: Any) -> Any:
    """Each rank binds its own GPU: `eager (cuda:1)` on rank 1 agrees with `eager (cuda:0)`."""
    return value.split(" (", 1)[0] if key == "init" and isinstance(value, str) else value


def not_coalescing(reports: list[dict[str, Any]]) -> list[str]:
    """Groups where some rank's 2-op batch did not coalesce (or failed)."""
    names = []
    for report in reports:
        for group in report["groups"]:
            if len(group["ranks"]) > 1 and group["coalesced"] is not True \
                    and group["name"] not in names:
                names.append(group["name"])
    return names


def render(reports: list[dict[str, Any]], nccl_log: list[str] | None = None) -> str:
    """One screen of plain text, from rank 0's point of view, then what its NCCL log states."""
    me = reports[0]
    hosts = len({r["host"] for r in reports})
    lines = [f"p2paudit doctor: {me['world_size']} ranks on {hosts} host(s); torch {me['torch']}, "
             f"NCCL {me['nccl'] or '-'}, CUDA {me['cuda'] or '-'}, Python {me['python']}",
             f"TORCH_DISTRIBUTED_DEBUG: {me['debug_level']} (torch's reading; environment: "
             f"{me['env'].get('TORCH_DISTRIBUTED_DEBUG', 'unset')}); store timeout "
             f"{_seconds(me['store_timeout_s'])}",
             "process groups (rank 0's; `pp` groups are doctor's own, megatron-style strided):"]
    for g in me["groups"]:
        lines.append(f"  {g['name']:<14} {g['backend']}: {g['backend_type']} in {g['group_type']}, "
                     f"init {g['init']}, timeout {_seconds(g['timeout_s'])}")
        if g["batch_error"]:
            outcome = f"FAILED after {g['batch_seconds']} s: {g['batch_error']}"
        elif g["coalesced"] is None:
            outcome = "not tried (one rank)"
        else:
            outcome = ("coalesced" if g["coalesced"] else "did NOT coalesce") + \
                f", {g['batch_seconds']} s"
        lines.append(f"  {'':<14} supports_coalescing={g['supports_coalescing']}; "
                     f"2-op batch_isend_irecv {outcome}")
    lines.append("environment: " + (", ".join(f"{k}={v}" for k, v in me["env"].items()) or
                                    "no NCCL_/TORCH_NCCL_/TORCH_DISTRIBUTED_ variables set"))
    for f in me["env_findings"]:
        lines.append(f"  {f['severity']}: {f['message']}" + (f" -> {f['fix']}" if f["fix"] else ""))
    bad = not_coalescing(reports)
    if bad:
        nccl = [g for g in me["groups"] if g["name"] in bad and g["backend"] == "nccl"]
        why = "gloo never coalesces; this matters where pipelines run NCCL"
        if nccl:
            why = ("each op runs alone, on its own place in its communicator's stream"
                   + (" (a 2-rank communicator per pair under lazy init)"
                      if any(g["init"] == "lazy" for g in nccl) else "")
                   + ", so a pipeline's send-before-receive exchange larger than the transport "
                   "buffers deadlocks: `p2paudit repro fallback-1f1b`")
        lines += textwrap.wrap(f"verdict: batch_isend_irecv will NOT coalesce on {', '.join(bad)}: {why}",
                               WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    else:
        lines.append("verdict: batch_isend_irecv will coalesce on every group checked here")
    differ = disagreements(reports)
    lines.append("ranks disagree:" if differ else f"all {len(reports)} ranks agree with rank 0")
    lines += [f"  {d}" for d in differ]
    return "\n".join(lines + (nccl_log or []))


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g} s"

