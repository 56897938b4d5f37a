"""A schedule that stops on an import this Python lacks names the install step (r42-real: in a
venv with only p2paudit and torch, `simulate` ended "ModuleNotFoundError: No module named 'numpy'"
with no step: megatron-core 0.17's schedules import numpy, which torch's CPU wheel does not
bring)."""

from __future__ import annotations

import sys

from auditor.commands.simulate import missing_module_step


def test_numpy_names_pip_and_the_extra():
    step = missing_module_step("ModuleNotFoundError: No module named 'numpy'")
    assert f"{sys.executable} -m pip install numpy" in step and "p2paudit[record]" in step


def test_a_submodule_installs_its_package():
    step = missing_module_step("ModuleNotFoundError: No module named 'einops.layers'")
    assert step.endswith("-m pip install einops")


def test_any_other_stop_adds_nothing():
    assert missing_module_step("RuntimeError: shape mismatch") == ""
