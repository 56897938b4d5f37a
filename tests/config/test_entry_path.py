"""auditor.config.entry_path: which file stands in for an absolute training script of another
machine (bigcode-project/Megatron-LM@7c325cd34a examples/finetune_starcoderplus.slurm runs
/fsx/leandro/git/Megatron-LM-BC/pretrain_gpt.py from its own checkout)."""

from __future__ import annotations

from auditor.config.entry_path import in_checkout


def _tree(tmp_path, *files):
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return str(tmp_path / "examples/run.slurm")


def test_the_longest_tail_in_the_checkout_wins(tmp_path):
    launch = _tree(tmp_path, "setup.py", "examples/run.slurm", "pretrain_gpt.py", "tools/pretrain_gpt.py")
    assert in_checkout(launch, "/fsx/repo/tools/pretrain_gpt.py") == tmp_path.resolve() / "tools/pretrain_gpt.py"
    assert in_checkout(launch, "/fsx/repo/pretrain_gpt.py") == tmp_path.resolve() / "pretrain_gpt.py"


def test_nothing_stands_in_for_a_relative_path_or_a_file_that_is_here(tmp_path):
    launch = _tree(tmp_path, "setup.py", "examples/run.slurm", "pretrain_gpt.py")
    assert in_checkout(launch, "pretrain_gpt.py") is None
    assert in_checkout(launch, str(tmp_path / "pretrain_gpt.py")) is None


def test_the_search_stops_at_the_checkouts_root(tmp_path):
    """A file above the checkout (the directory holding it) is not the checkout's entry."""
    _tree(tmp_path, "repo/pyproject.toml", "repo/examples/run.slurm", "train.py")
    assert in_checkout(str(tmp_path / "repo/examples/run.slurm"), "/cluster/x/train.py") is None
