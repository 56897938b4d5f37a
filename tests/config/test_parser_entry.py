"""auditor.config.parser_entry on its own: a script builds Megatron-LM's parser when it calls one
of its entries bound from Megatron-LM's modules (rules/megatron-lm.toml [parser_entry]), as
Pai-Megatron-Patch@a098ca5acb examples/llama2/finetune_megatron_llama.py calls
`pretrain(...)` from `megatron.training`; its own `pretrain` does not count."""

from __future__ import annotations

import pytest

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


def _patch_checkout(tmp_path, training: str):
    """A checkout laid out as Pai-Megatron-Patch@a098ca5acb: megatron_patch/training.py beside
    examples/llama2/finetune_megatron_llama_withGA.py, which calls
    `from megatron_patch.training import pretrain` then `pretrain(...)` (:30, :121)."""
    (tmp_path / "megatron_patch").mkdir(parents=True)
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "megatron_patch" / "__init__.py").write_text("")
    (tmp_path / "megatron_patch" / "training.py").write_text(training)
    (tmp_path / "examples" / "llama2").mkdir(parents=True)
    script = tmp_path / "examples" / "llama2" / "finetune_withGA.py"
    script.write_text("from megatron_patch.training import pretrain\n\n"
                      "if __name__ == '__main__':\n    pretrain(None, None, None, None)\n")
    return script


def test_the_checkouts_own_pretrain_that_initializes_megatron_is(tmp_path) -> None:
    # megatron_patch/training.py:51-91: `def pretrain(...)`, whose body imports and calls
    # `from megatron.initialize import initialize_megatron; initialize_megatron(...)`.
    script = _patch_checkout(tmp_path, "def pretrain(*a, extra_args_provider=None):\n"
                                       "    from megatron.initialize import initialize_megatron\n"
                                       "    initialize_megatron(extra_args_provider=extra_args_provider)\n")
    assert calls_parser_entry(script)


def test_the_checkouts_own_pretrain_without_megatrons_entry_is_not(tmp_path) -> None:
    # Another function of the module calling the entry, or a local `initialize_megatron`, is not.
    script = _patch_checkout(tmp_path, "from megatron.initialize import initialize_megatron\n\n"
                                       "def pretrain(*a):\n    return a\n\n"
                                       "def other():\n    initialize_megatron()\n")
    assert not calls_parser_entry(script)
    own = _patch_checkout(tmp_path / "own", "def initialize_megatron():\n    pass\n\n"
                                            "def pretrain(*a):\n    initialize_megatron()\n")
    assert not calls_parser_entry(own)


def test_a_package_outside_the_checkout_is_not_read(tmp_path) -> None:
    # No checkout marker above the script: whose `megatron_patch` the run imports is not known.
    script = _patch_checkout(tmp_path, "def pretrain(*a):\n    from megatron.initialize import "
                                       "initialize_megatron\n    initialize_megatron()\n")
    (tmp_path / "setup.py").unlink()
    assert not calls_parser_entry(script)


_INIT = ("def pretrain(*a):\n    from megatron.initialize import initialize_megatron\n"
         "    initialize_megatron()\n")


@pytest.mark.parametrize("body", [
    # its own loop sets the schedule's P2P keys on the model config before the schedule runs
    "    config = get_model_config(model[0])\n    config.batch_p2p_comm = True\n",
    "    config = get_model_config(model[0])\n    config.variable_seq_lengths = True\n"
    "    config.batch_p2p_comm = False\n",
    "    setattr(config, name, True)\n",
    "    args.overlap_p2p_comm = True\n",
    # another pipeline engine: DeepSpeed's PipelineModule run by deepspeed.initialize
    "    from deepspeed.pipe import PipelineModule\n    engine = PipelineModule(layers=[])\n",
    "    import deepspeed\n    deepspeed.initialize(model=model)\n",
    # P2P of its own
    "    import torch.distributed as dist\n    dist.send(t, 1)\n",
], ids=["batch-p2p", "variable-seq", "setattr", "args-key", "deepspeed-pipe", "deepspeed", "own-p2p"])
def test_the_checkouts_own_pretrain_that_changes_the_run_is_not(tmp_path, body) -> None:
    # Megatron-LM's parser with its defaults says nothing of a run the function then changes:
    # read on those defaults it was CLEAN where batch_p2p_comm=True with VPP does not start.
    assert calls_parser_entry(_patch_checkout(tmp_path / "plain", _INIT))
    assert not calls_parser_entry(_patch_checkout(tmp_path / "changed", _INIT + body))
