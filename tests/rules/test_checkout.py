"""auditor.rulebook.checkout: the release a Megatron-LM checkout states about itself and the rule
entries its code confirms (issue 22 item 6). The checkout is tests/config/test_checkout_rules.py's
cut-down NVIDIA/Megatron-LM core_v0.15.0 (0d7e02bd26)."""

from __future__ import annotations

from auditor.rulebook import checkout
from tests.config.test_checkout_rules import PACKAGE_INFO, checkout as make_checkout


def test_the_release_is_what_package_info_states(tmp_path):
    root = make_checkout(tmp_path, tp=1).parents[2]
    assert checkout.release_of("megatron-lm", root) == "0.15.0"
    assert checkout.is_release("megatron-lm", root, "0.15.0")
    assert not checkout.is_release("megatron-lm", root, "0.16.0")
    (root / "megatron/core/package_info.py").write_text(
        PACKAGE_INFO.replace("MINOR = 15", "MINOR = 17").replace("''", "'rc0'"))
    checkout._tree.cache_clear()
    checkout._text.cache_clear()
    assert checkout.release_of("megatron-lm", root) == "0.17.0rc0"


def test_no_version_file_or_no_version_is_none(tmp_path):
    assert checkout.release_of("megatron-lm", tmp_path) is None
    assert checkout.release_of("ms-swift", tmp_path) is None  # no version file known for it
    (tmp_path / "megatron/core").mkdir(parents=True)
    (tmp_path / "megatron/core/package_info.py").write_text("MAJOR = 0\nMINOR = 15\n")
    assert checkout.release_of("megatron-lm", tmp_path) is None
    assert not checkout.is_release("megatron-lm", tmp_path, "0.15.0")


def test_an_entry_is_confirmed_where_its_code_is_in_its_scope(tmp_path):
    root = make_checkout(tmp_path, tp=1).parents[2]
    rule = {"source": "megatron/training/arguments.py:1253", "function": "core_transformer_config_from_args",
            "code": "kw_args['batch_p2p_comm'] =  not args.overlap_p2p_comm"}  # spacing aside
    assert checkout.confirmed(rule, root)
    assert not checkout.confirmed({**rule, "function": "validate_args"}, root)  # another scope
    assert not checkout.confirmed({**rule, "code": "kw_args['batch_p2p_comm'] = True"}, root)
    assert not checkout.confirmed({**rule, "source": "megatron/training/missing.py"}, root)
    assert not checkout.confirmed({**rule, "source": "megatron-core@0.15.0 x.py"}, root)  # not the checkout's
