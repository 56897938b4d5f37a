"""auditor.rulebook.checkout: whether a Megatron-LM checkout is the release judged (its version
file, as auditor.sources reads it) and the rule entries its code confirms (issue 22 item 6). The checkout is tests/config/test_checkout_rules.py's
cut-down NVIDIA/Megatron-LM core_v0.15.0 (0d7e02bd26)."""

from __future__ import annotations

from auditor.rulebook import checkout
from auditor.sources import version_file_release
from tests.config.test_checkout_rules import PACKAGE_INFO, checkout as make_checkout


def test_the_release_is_what_package_info_states(tmp_path):
    root = make_checkout(tmp_path, tp=1).parents[2]
    assert version_file_release(root, "megatron-core") == ("0.15.0", "megatron/core/package_info.py")
    assert checkout.is_release("megatron-core", root, "0.15.0")
    assert not checkout.is_release("megatron-core", root, "0.16.0")
    (root / "megatron/core/package_info.py").write_text(
        PACKAGE_INFO.replace("MINOR = 15", "MINOR = 17").replace("''", "'rc0'"))
    assert version_file_release(root, "megatron-core") == ("0.17.0rc0", "megatron/core/package_info.py")


def test_no_version_file_or_no_version_is_none(tmp_path):
    assert version_file_release(tmp_path, "megatron-core") is None
    assert version_file_release(tmp_path, "ms-swift") is None  # no swift/version.py here
    (tmp_path / "megatron/core").mkdir(parents=True)
    (tmp_path / "megatron/core/package_info.py").write_text("MAJOR = 0\nMINOR = 15\n")
    assert version_file_release(tmp_path, "megatron-core") is None
    assert not checkout.is_release("megatron-core", tmp_path, "0.15.0")


def test_an_entry_is_confirmed_where_its_code_is_in_its_scope(tmp_path):
    root = make_checkout(tmp_path, tp=1).parents[2]
    rule = {"source": "megatron/training/arguments.py:1253", "function": "core_transformer_config_from_args",
            "code": "kw_args['batch_p2p_comm'] =  not args.overlap_p2p_comm"}  # spacing aside
    assert checkout.confirmed(rule, root)
    assert not checkout.confirmed({**rule, "function": "validate_args"}, root)  # another scope
    assert not checkout.confirmed({**rule, "code": "kw_args['batch_p2p_comm'] = True"}, root)
    assert not checkout.confirmed({**rule, "source": "megatron/training/missing.py"}, root)
    assert not checkout.confirmed({**rule, "source": "megatron-core@0.15.0 x.py"}, root)  # not the checkout's
