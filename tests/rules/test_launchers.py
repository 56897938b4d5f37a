"""auditor.rulebook.launchers: the spellings of a launch, read from every rules file once. A
Spelling is built per megatron-core release (Megatron-LM's flags differ by release), but the
variables the rules read (`env.NAME` in any rules text) do not depend on the release: the rules
texts are read once, not again on every release's first use."""

from __future__ import annotations

import re
from pathlib import Path

from auditor.rulebook import files
from auditor.rulebook.launchers import Spelling


def test_the_rules_texts_are_read_once_whatever_the_release(monkeypatch):
    rules = files.rules_dir()
    Spelling.load(None)
    reads: list[Path] = []
    real = Path.read_text

    def counted(self, *args, **kwargs):
        if self.parent == rules:
            reads.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    Spelling.load.cache_clear()  # every release below is a first use
    spellings = [Spelling.load(v) for v in ("0.16.0", "0.17.0", None)]
    assert reads == []
    referenced = {n for p in rules.glob("*.toml") for n in re.findall(r"\benv\.([A-Z_][A-Z0-9_]*)", real(p))}
    assert "TORCH_NCCL_USE_COMM_NONBLOCKING" in referenced  # rules/torch.toml's nonblocking check
    for spelling in spellings:
        assert referenced <= spelling.env_names
        assert "TORCH_DISTRIBUTED_DEBUG" in spelling.env_names
