"""One torchrun rank of a reproducer: runs its program on the real backend, saying where it is.

Started by `auditor.repro.launch` as `python -m torch.distributed.run ... -m auditor.repro.rank`;
the run's Spec is the JSON file named by P2PAUDIT_REPRO_SPEC, next to which progress is written.
Each op goes through torch.distributed exactly as the code being reproduced calls it: single ops
through send/recv/isend/irecv, batches through the real batch_isend_irecv, whose coalescing is
observed, not assumed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from auditor.analysis.waitfor.model import communicator_for
from auditor.dynamic.backends import backend
from auditor.repro import load_case
from auditor.repro.plan import ISSUE_BATCH, ReproPlan, Spec
from auditor.repro.progress import DONE, ISSUING, PENDING, ReproProgress

SPEC_ENV = "P2PAUDIT_REPRO_SPEC"
POLL_S = 0.002


@contextlib.contextmanager
def observe_coalescing() -> Iterator[list[bool]]:
    """Notes whether torch's coalescing manager runs inside the block: batch_isend_irecv looks it
    up as a module global each call, so replacing it there sees torch's own decision."""
    seen: list[bool] = []
    real = distributed_c10d._coalescing_manager

    @contextlib.contextmanager
    def spy(*args: Any, **kwargs: Any) -> Iterator[Any]:
        seen.append(True)
        with real(*args, **kwargs) as manager:
            yield manager

    distributed_c10d._coalescing_manager = spy
    try:
        yield seen
    finally:
        distributed_c10d._coalescing_manager = real


class _StreamMark:
    """Completion of a blocking NCCL send/recv, which returns no Work: torch's wait() made the
    current stream wait for it, so an event recorded there completes with it."""

    def __init__(self) -> None:
        self.event = torch.cuda.Event()
        self.event.record()

    def is_completed(self) -> bool:
        return self.event.query()

    def wait(self) -> None:
        self.event.synchronize()


class Runner:
    """Issues one rank's program in order, waiting where the program waits."""

    def __init__(self, plan: ReproPlan, rank: int, device: torch.device, progress: ReproProgress) -> None:
        self.plan = plan
        self.rank = rank
        self.device = device
        self.progress = progress
        self.ops = plan.programs[rank]
        self.works: dict[int, list[Any]] = {}
        self.done: set[int] = set()
        self.buffers: dict[int, torch.Tensor] = {}
        self.last_on_comm: dict[str, list[int]] = {}
        self.conditions = plan.conditions()
        # NCCL's Work reports completion from its CUDA event; gloo's only once waited on.
        self.pollable = device.type == "cuda"

    def run(self) -> None:
        index = 0
        while index < len(self.ops):
            entry = self._entry(index)
            self._wait({a for i in entry for a in self.ops[i].after})
            if self.plan.emulate_streams:
                self._wait_for_stream(entry)
            self._issue(entry)
            index += len(entry)
        self._wait(set(range(len(self.ops))))
        self._check_data()

    def _batched(self, index: int) -> bool:
        return self.plan.issue == ISSUE_BATCH and self.ops[index].batch is not None

    def _entry(self, index: int) -> list[int]:
        if not self._batched(index):
            return [index]
        batch = self.ops[index].batch
        end = index
        while end < len(self.ops) and self.ops[end].batch == batch:
            end += 1
        return list(range(index, end))

    def _wait_for_stream(self, entry: list[int]) -> None:
        op = self.ops[entry[0]]
        assert self.conditions is not None, "emulated streams have gloo's conditions"
        comm = communicator_for(op, self.conditions, self._batched(entry[0])).name
        self._wait(set(self.last_on_comm.get(comm, [])))
        self.last_on_comm[comm] = entry

    def _tensor(self, index: int) -> torch.Tensor:
        op = self.ops[index]
        fill = (self.rank + 1) % 256 if op.kind == "send" else 0
        tensor = torch.full((op.nbytes,), fill, dtype=torch.uint8, device=self.device)
        self.buffers[index] = tensor
        return tensor

    def _issue(self, entry: list[int]) -> None:
        for i in entry:
            self.progress.op(i, ISSUING)
        if self._batched(entry[0]):
            p2p = [dist.P2POp(dist.isend if self.ops[i].kind == "send" else dist.irecv,
                              self._tensor(i), self.ops[i].peer) for i in entry]
            with observe_coalescing() as seen:
                works = dist.batch_isend_irecv(p2p)
            self.progress.coalesced(self.ops[entry[0]].batch, bool(seen))
            for k, i in enumerate(entry):  # gloo: a Work per op; coalesced: one for the batch
                self.works[i] = [works[k]] if len(works) == len(entry) else list(works)
        else:
            (i,) = entry
            op = self.ops[i]
            key = "dst" if op.kind == "send" else "src"
            issue: Callable[..., Any] = {"send": dist.send, "recv": dist.recv, "isend": dist.isend,
                     "irecv": dist.irecv}[op.api]
            work = issue(self._tensor(i), **{key: op.peer})
            if op.api in ("send", "recv"):
                if not self.pollable:  # gloo's send/recv return once complete
                    self.done.add(i)
                    self.progress.op(i, DONE)
                    return
                work = _StreamMark()
            self.works[i] = [work]
        for i in entry:
            self.progress.op(i, PENDING)
        if self.pollable:
            self._poll()

    def _poll(self) -> None:
        for i, works in self.works.items():
            if i not in self.done and all(w is None or w.is_completed() for w in works):
                self._finish(i)

    def _finish(self, index: int) -> None:
        for work in self.works[index]:
            if work is not None:
                work.wait()  # blocks on gloo; raises what the backend reported
        self.done.add(index)
        self.progress.op(index, DONE)

    def _wait(self, indices: set[int]) -> None:
        pending = sorted(i for i in indices if i not in self.done)
        while pending:
            self.progress.waiting_for(pending[0])
            if not self.pollable:
                self._finish(pending.pop(0))
                continue
            self._poll()
            pending = [i for i in pending if i not in self.done]
            if pending:
                time.sleep(POLL_S)
        self.progress.waiting_for(None)

    def _check_data(self) -> None:
        for i, tensor in self.buffers.items():
            op = self.ops[i]
            if op.kind == "recv" and op.nbytes:
                assert op.peer is not None, "a point-to-point op has a peer"
                expected = (op.peer + 1) % 256
                if int(tensor[0]) != expected or int(tensor[-1]) != expected:
                    self.progress.wrong_data(i)


def main() -> int:
    spec_path = Path(os.environ[SPEC_ENV])
    spec = Spec.load(spec_path)
    plan = load_case(spec.case).plan(spec)
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    progress = ReproProgress(spec_path.parent, rank, len(plan.programs[rank]))
    try:
        device = torch.device("cpu")
        kwargs: dict[str, Any] = {"backend": spec.backend,
                                  "timeout": timedelta(seconds=spec.pg_timeout)}
        if backend(spec.backend).device == "cuda":
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
            if plan.init == "eager":
                kwargs["device_id"] = device
        dist.init_process_group(**kwargs)
        progress.phase("ops")
        Runner(plan, rank, device, progress).run()
        progress.phase("done")
    except BaseException as exc:
        progress.error(exc)
        raise
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
