"""Every "give it with --set KEY=..." step p2paudit prints names a key `--set` takes on the runs
it is printed for (auditor/config/settings.py is the one list of those keys): an INCONCLUSIVE
whose step `--set` refuses (exit 2, "no such setting") can never be decided.

`simulate --config examples/megatron/moe/qwen3_moe.sh` of modelscope/ms-swift (commit
2d3694fb18, v4.3.0) asked `--set torch_dtype=bfloat16|float16|float32` and refused the key; on
THUDM/slime scripts/run-qwen3.5-27B.sh (commit 624b824a89) it asked `--set seq_length=N` and
refused that one too. The first test walks every step written in the code and the rules; the
second takes, on a script written after qwen3_moe.sh, each step an INCONCLUSIVE simulate names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditor.config.settings import known_settings
from auditor.rulebook.frameworks import frameworks
from auditor.scan import ScanInputs, read_config, run_scan
from auditor.simulate.plan import plan
from tests.launches import QWEN3_MOE

ROOT = Path(__file__).resolve().parents[2]
# `--set KEY=`, KEY a setting (`env.NAME`, `KEY`, `{key}`: placeholders, a rule's own key)
STEP = re.compile(r"--set ([a-z_][a-z0-9_]*)=")
# The stack a file's steps are printed for, by the framework whose runs print them; any other
# file prints its steps for any run (the keys every stack knows).
PRINTED_FOR = {"auditor/simulate/plan.py": "megatron-core",
               "auditor/simulate/titan_plan.py": "torchtitan"}


def _chain(name: str | None) -> list[str]:
    """The framework and those its runs go on to (ms-swift -> mcore-bridge -> megatron-core)."""
    by_name = {f.name: f for f in frameworks()}
    out: list[str] = []
    while name is not None and name not in out:
        out.append(name)
        name = by_name[name].runs_on
    return out


def _printed() -> list[tuple[str, str]]:
    files = [*sorted((ROOT / "auditor").rglob("*.py")), *sorted((ROOT / "rules").glob("*.toml"))]
    return [(str(p.relative_to(ROOT)), m[1]) for p in files
            for m in STEP.finditer(p.read_text(encoding="utf-8"))]


def test_the_walk_finds_the_steps_simulate_prints():
    found = set(_printed())
    assert ("auditor/simulate/plan.py", "torch_dtype") in found
    assert ("auditor/simulate/plan.py", "seq_length") in found
    assert ("auditor/simulate/titan_plan.py", "n_layers") in found


@pytest.mark.parametrize("path, key", sorted(set(_printed())))
def test_every_step_printed_names_a_key_set_takes(path, key):
    framework = PRINTED_FOR.get(path) or (Path(path).stem if path.startswith("rules/") else None)
    assert key in known_settings(stack=_chain(framework)), f"{path}: --set {key}= is refused"


@pytest.mark.wheels
def test_each_step_an_inconclusive_simulate_names_is_taken(tmp_path):
    """The dtype of Qwen3-30B-A3B-Base is in no rules file and the hidden size is given: the
    plan is inconclusive naming `--set torch_dtype=...`; given as named (the first choice, or 4
    for N), scan accepts each key and the plan has nothing left unknown."""
    script = tmp_path / "qwen3_moe.sh"
    script.write_text(QWEN3_MOE, encoding="utf-8")
    given = {"hidden_size": "2048"}
    for _ in range(3):
        read = read_config(str(script), None)
        doc = run_scan(ScanInputs(str(script), overrides=dict(given), torch_version="2.10.0"), read)
        left = plan(doc, *read, microbatches=4).unknown
        if not left:
            break
        steps = {k: v.split("|")[0].replace("N", "4") for step in left
                 for k, v in re.findall(r"--set ([a-z_][a-z0-9_]*)=([^\s,;)]+)", step)}
        assert steps and not set(steps) & set(given), left
        given |= steps
    assert not left and "torch_dtype" in given
