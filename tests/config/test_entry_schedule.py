"""auditor.config.entry_schedule on its own: which schedule entry (rules/stacks.toml
`[[schedule_entry]]`) an entry script's code names, after Megatron-Bridge@067f987df0
examples/conversion/hf_to_megatron_generate_text.py:31 (imports get_forward_backward_func) and
hf_megatron_roundtrip_multi_gpu.py (names none; `model.train()` is no schedule)."""

from __future__ import annotations

from auditor.config.entry_schedule import names_schedule
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
