"""Environment values as their consumer reads them (auditor/config/envread.py), through the
`reader` of rules/torch.toml's [[env_var]] entries: c10d upper-cases TORCH_DISTRIBUTED_DEBUG;
torch's c10::utils::check_env takes only "0" and "1" for TORCH_NCCL_USE_COMM_NONBLOCKING."""

from __future__ import annotations

import pytest

from auditor.config.envread import consumer_value, readers
from auditor.config.expr import UNKNOWN
from auditor.errors import InputError


def test_the_rules_name_each_variables_reader() -> None:
    table = readers("2.10.0")
    assert table["TORCH_DISTRIBUTED_DEBUG"] == "upper"
    assert table["TORCH_NCCL_USE_COMM_NONBLOCKING"] == "check_env"
    assert set(table.values()) <= {"exact", "upper", "check_env"}


def test_values_as_the_consumer_sees_them() -> None:
    assert consumer_value("detail", "upper") == "DETAIL"
    assert consumer_value("true", "check_env") is None  # ignored by torch, as if unset
    assert consumer_value("1", "check_env") == "1"
    assert consumer_value("Info", "exact") == "Info"
    assert consumer_value(UNKNOWN, "upper") is UNKNOWN
    assert consumer_value(None, "check_env") is None


def test_an_unknown_reader_in_the_rules_is_bad_input(tmp_path) -> None:
    from auditor.rulebook import rules_dir
    for path in rules_dir().glob("*.toml"):
        (tmp_path / path.name).write_text(path.read_text())
    torch_rules = tmp_path / "torch.toml"
    text = torch_rules.read_text()
    assert 'reader = "upper"' in text
    torch_rules.write_text(text.replace('reader = "upper"', 'reader = "lower"', 1))
    with pytest.raises(InputError, match="reader 'lower'"):
        readers("2.10.0", tmp_path)
