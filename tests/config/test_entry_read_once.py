"""A scan that judges several cases of a setting it does not know (auditor/scan.py `_cases`)
parses the launch once per case, and each parse reads the entry's sizes (config/entry_assign.py,
config/entry_library.py): the files are parsed, and what depends only on their text is read,
once per text, not once per case; a file whose text changed is read anew.

After Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge, commit
067f987df03b8355b03192d88d70f1709fedf51a) examples/models/gpt_oss/inference.sh, whose commands
run scripts/inference/text_generation.py (the loader of
src/megatron/bridge/inference/text_generation.py: the shapes of tests/config/test_entry_library.py).
"""

from __future__ import annotations

import ast

from auditor.config.entry_script import parsed
from tests.config.test_entry_library import LIBRARY, _config


def _counting_parse(monkeypatch) -> list[str]:
    """Each text `ast.parse` is asked to parse, from now on (the caches emptied first)."""
    parsed.cache_clear()
    seen: list[str] = []
    real = ast.parse

    def counted(source, *args, **kwargs):
        seen.append(source if isinstance(source, str) else "")
        return real(source, *args, **kwargs)
    monkeypatch.setattr(ast, "parse", counted)
    return seen


def test_each_case_s_read_of_the_entry_parses_its_files_once(tmp_path, monkeypatch) -> None:
    seen = _counting_parse(monkeypatch)
    first = _config(tmp_path, "--tp 2 --pp 2")
    again = _config(tmp_path, "--tp 2 --pp 2")  # the next case's parse of the same launch
    assert first.entry_values["pipeline_model_parallel_size"] == again.entry_values["pipeline_model_parallel_size"]
    assert first.entry_values["pipeline_model_parallel_size"][0] == 2
    library = [s for s in seen if "def load_bridge_model" in s]
    assert len(library) == 1, f"the loader's module parsed {len(library)} times"


def test_a_file_whose_text_changed_is_read_anew(tmp_path) -> None:
    assert _config(tmp_path, "--pp 2").entry_values["pipeline_model_parallel_size"][0] == 2
    lib = LIBRARY.replace('"pipeline_model_parallel_size": pp}', '"pipeline_model_parallel_size": 4}')
    assert "pipeline_model_parallel_size" not in _config(tmp_path, "--pp 2", library=lib).entry_values
