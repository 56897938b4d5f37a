"""auditor.config.parser_entry on its own: a script builds Megatron-LM's parser when it calls one
of its entries bound from Megatron-LM's modules (rules/megatron-lm.toml [parser_entry]), as
Pai-Megatron-Patch@a098ca5acb examples/llama2/finetune_megatron_llama.py calls
`pretrain(...)` from `megatron.training`; its own `pretrain` does not count."""

from __future__ import annotations

from auditor.config.parser_entry import calls_parser_entry, entry_calls


def test_the_rules_name_the_parser_entries() -> None:
    assert {"pretrain", "initialize_megatron"} <= entry_calls()


def test_an_entry_imported_from_megatron_is_a_parser_entry(tmp_path) -> None:
    script = tmp_path / "finetune.py"
    script.write_text("from megatron.training import pretrain\n\npretrain(None, None, None, None)\n")
    assert calls_parser_entry(script)


def test_a_pretrain_of_its_own_or_unreadable_is_not(tmp_path) -> None:
    own = tmp_path / "own.py"
    own.write_text("def pretrain(*a):\n    pass\n\npretrain(1)\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    assert not calls_parser_entry(own) and not calls_parser_entry(broken)
    assert not calls_parser_entry(tmp_path / "missing.py")
