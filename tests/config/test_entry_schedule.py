"""auditor.config.entry_schedule on its own: which schedule entry (rules/stacks.toml
`[[schedule_entry]]`) an entry script's code names, after Megatron-Bridge@067f987df0
examples/conversion/hf_to_megatron_generate_text.py:31 (imports get_forward_backward_func) and
hf_megatron_roundtrip_multi_gpu.py (names none; `model.train()` is no schedule)."""

from __future__ import annotations

from auditor.config.entry_schedule import names_no_schedule, names_schedule
from auditor.config.launch import parse_launch


def _config(tmp_path, code: str | None):
    if code is not None:
        (tmp_path / "entry.py").write_text(code)
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node=2 entry.py\n")
    return parse_launch(script.read_text(), str(script))


def test_an_imported_schedule_entry_is_named(tmp_path) -> None:
    code = "from megatron.core.pipeline_parallel.schedules import get_forward_backward_func\n"
    assert names_schedule(_config(tmp_path, code)) is not None


def test_a_method_of_the_same_name_on_a_model_is_not(tmp_path) -> None:
    assert names_schedule(_config(tmp_path, "def main(model):\n    model.train()\n")) is None


def test_a_script_not_found_names_nothing(tmp_path) -> None:
    assert names_schedule(_config(tmp_path, None)) is None


# Megatron-Bridge@067f987df0 examples/conversion/hf_to_megatron_generate_text.py:31 imports
# get_forward_backward_func from .schedules; megatron-core's pipeline_parallel/__init__.py
# re-exports it (`from .schedules import get_forward_backward_func`), so the same script may spell it
# through the package, a module alias or a package attribute (h33-review6 H1 repros a/, c/, d/).
_CALL = "\ndef main(model):\n    f = {}get_forward_backward_func()\n    f(model=model, forward_only=True)\n"


def test_a_schedule_imported_from_the_package_that_re_exports_it_is_named(tmp_path) -> None:
    code = "from megatron.core.pipeline_parallel import get_forward_backward_func\n" + _CALL.format("")
    assert names_schedule(_config(tmp_path, code)) is not None


def test_a_schedule_on_a_module_alias_is_named(tmp_path) -> None:
    code = "import megatron.core.pipeline_parallel.schedules as sched\n" + _CALL.format("sched.")
    assert names_schedule(_config(tmp_path, code)) is not None


def test_a_schedule_on_an_imported_package_is_named(tmp_path) -> None:
    code = "from megatron.core import pipeline_parallel\n" + _CALL.format("pipeline_parallel.")
    assert names_schedule(_config(tmp_path, code)) is not None
    code = "import megatron.core.pipeline_parallel\n" + _CALL.format("megatron.core.pipeline_parallel.")
    assert names_schedule(_config(tmp_path, code)) is not None


def test_an_unresolved_call_of_the_name_is_not_known_to_name_none(tmp_path) -> None:
    """Fail closed: a megatron name reached in a way not resolved here (a star import, an
    attribute of a megatron module not known to hold it) is never "names none"."""
    for i, code in enumerate(("from megatron.core.pipeline_parallel.schedules import *\n" + _CALL.format(""),
                 "import megatron.core as mc\n" + _CALL.format("mc.other."),
                 _CALL.format(""))):
        (tmp_path / str(i)).mkdir()
        config = _config(tmp_path / str(i), code)
        assert not names_no_schedule(config), code


def test_a_model_method_of_a_training_name_still_names_none(tmp_path) -> None:
    assert names_no_schedule(_config(tmp_path, "def main(model):\n    model.train()\n"))
