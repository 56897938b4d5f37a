"""CPU shim for torchtitan 0.2.2 (and 0.3.0) on a machine without an accelerator
(benchmarks/bench_record_titan.py).

torchtitan/tools/utils.py:37-42 (0.3.0: :55) picks `device_type = _get_available_device_type() or "cuda"` and
`device_module = _get_device_module(device_type)` at import, so on a CPU build of torch every
rank calls torch.cuda.set_device (train.py:90) and dies. This shim sets those two module
globals of torchtitan.tools.utils, right after that module runs and before any other torchtitan
module imports them, to "cpu" and a view of torch.cpu. torchtitan's own
`_get_distributed_backend` (distributed/utils.py:326-334) then maps cpu to gloo.

The view adds what torch.cpu lacks and torchtitan asks for outside communication: the memory
monitor's name/capacity/statistics (components/metrics.py:45-53, 65, 95; "no statistics", read
as -1), and `current_device()` as the local rank's index instead of the string "cpu", for
`barrier(device_ids=[device_module.current_device()])` (distributed/utils.py:386), whose
BarrierOptions takes integers (gloo ignores device_ids). Nothing in torch (c10d, pipelining) or
in torchtitan's parallelize/pipeline/schedule code is replaced.
"""

import importlib.abc
import importlib.machinery
import os
import sys
import types

TARGET = "torchtitan.tools.utils"


class _CpuModule(types.ModuleType):
    """torch.cpu, with the stand-ins above."""

    def __init__(self) -> None:
        super().__init__("torch.cpu")
        import torch.cpu

        self._cpu = torch.cpu

    def __getattr__(self, name):
        return getattr(self._cpu, name)

    @staticmethod
    def current_device() -> int:
        return int(os.environ.get("LOCAL_RANK", "0"))

    @staticmethod
    def get_device_name(device=None) -> str:
        return "cpu"

    @staticmethod
    def get_device_properties(device=None):
        return types.SimpleNamespace(
            total_memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))

    @staticmethod
    def reset_peak_memory_stats(device=None) -> None:
        return None

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def memory_stats(device=None) -> dict:
        return {}


class _Loader(importlib.abc.Loader):
    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        import torch

        if not torch.accelerator.is_available():
            module.device_type = "cpu"
            module.device_module = _CpuModule()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
