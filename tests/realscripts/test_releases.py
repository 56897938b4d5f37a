"""Issue 22 item 2 (frameworks): a script that states no framework release, with nothing installed,
is judged across the releases the rules verify that are compatible with each other (each
release's own Requires-Dist), not refused with "which ms-swift does this run use?".

The scripts are written here in the shape of upstream launch scripts that state no release:
- `megatron sft` with flags only: modelscope/ms-swift examples/megatron/sft.sh
  @ 2d3694fb18 (the corpus pin, benchmarks/real_scripts/manifest.toml);
- `deepspeed pretrain_gpt.py ...`: microsoft/Megatron-DeepSpeed
  examples_deepspeed/azure/run-175b.sh @ f4157bea69, whose oldest covered DeepSpeed release
  (0.14.5) PyPI serves only as a Windows wheel, with \\r\\n line ends.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from auditor.analysis.verdict import judge
from auditor.config.releases import requirements
from auditor.rulebook.frameworks import Stack

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "scan-document.schema.json").read_text())

SWIFT_SFT = """\
#!/bin/bash
NPROC_PER_NODE=2 \\
CUDA_VISIBLE_DEVICES=0,1 \\
megatron sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \\
    --tensor_model_parallel_size 2 \\
    --micro_batch_size 16 \\
    --global_batch_size 16 \\
    --train_type full \\
    --save megatron_output/Qwen2.5-7B-Instruct
"""


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def scan(path: Path) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(path),
                           "--format", "json"],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def admitted(combo: dict[str, str], release) -> None:
    """Each release of `combo` is admitted by every other's Requires-Dist (its wheel METADATA)."""
    for name, version in combo.items():
        for req in requirements(release(f"{name}=={version}"), combo):
            other = combo[canonicalize_name(req.name)]
            assert req.specifier.contains(Version(other), prereleases=True), (name, version, req)


@pytest.fixture(scope="module")
def swift_doc(tmp_path_factory, release) -> tuple[int, dict]:
    script = tmp_path_factory.mktemp("swift") / "sft.sh"
    script.write_text(SWIFT_SFT)
    return scan(script)


@pytest.mark.heavy
def test_a_script_stating_no_release_is_judged_not_refused(swift_doc, release):
    """Before: exit 2, 'which ms-swift does this run use?'."""
    code, doc = swift_doc
    assert code != 2 and doc["verdict"]["exit_code"] == code
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    basis = doc["config"]["release_basis"]
    stack = Stack.of("megatron sft").distributions
    assert basis["free"] == stack and basis["stated"] == {}
    covered = Stack.of("megatron sft").covered_releases
    newest, oldest = (c["releases"] for c in basis["combinations"])
    # The outermost framework spans the covered range; each inner one is compatible with it.
    assert newest["ms-swift"] == max(covered["ms-swift"], key=Version)
    assert oldest["ms-swift"] == min(covered["ms-swift"], key=Version)
    for combo in (newest, oldest):
        assert list(combo) == stack and all(combo[n] in covered[n] for n in stack)
        admitted(combo, release)
    # The document's own analysis is the newest combination's.
    assert {t["name"]: t["version"] for t in doc["targets"]} == newest
    statuses = {c["status"] for c in basis["combinations"]}
    if len(statuses) == 1 and doc["verdict"]["status"] != "inconclusive":
        head = doc["verdict"]["headline"]
        assert "Holds on the newest and oldest releases the rules cover that fit together" in head
        assert all(f"{n} {v}" in head for c in (newest, oldest) for n, v in c.items())


def test_the_oldest_combination_is_the_oldest_each_release_admits(swift_doc, release):
    """ms-swift's oldest covered release states its own floor on mcore-bridge and megatron-core
    (its `megatron` extra); the oldest combination takes the oldest verified release above it."""
    _, doc = swift_doc
    oldest = doc["config"]["release_basis"]["combinations"][-1]["releases"]
    covered = Stack.of("megatron sft").covered_releases
    swift = requirements(release(f"ms-swift=={oldest['ms-swift']}"), covered)
    assert {r.name for r in swift} == {"mcore-bridge", "megatron-core"}
    for name in ("mcore-bridge", "megatron-core"):
        floor = [v for v in covered[name]
                 if all(r.specifier.contains(Version(v)) for r in swift if r.name == name)]
        if name == "megatron-core":
            bridge = requirements(release(f"mcore-bridge=={oldest['mcore-bridge']}"), covered)
            floor = [v for v in floor if all(r.specifier.contains(Version(v)) for r in bridge)]
        assert oldest[name] == min(floor, key=Version)


@pytest.mark.heavy
def test_a_stated_release_is_kept_and_bounds_the_others(tmp_path, release):
    """`# ms-swift==4.3.0` decides ms-swift; mcore-bridge and megatron-core vary within what
    4.3.0's METADATA admits (mcore-bridge>=1.3.0, megatron-core>=0.15)."""
    script = tmp_path / "sft.sh"
    script.write_text("# ms-swift==4.3.0\n" + SWIFT_SFT.split("\n", 1)[1])
    code, doc = scan(script)
    assert code != 2
    basis = doc["config"]["release_basis"]
    assert basis["stated"] == {"ms-swift": "4.3.0"} and basis["free"] == ["mcore-bridge", "megatron-core"]
    swift = requirements(release("ms-swift==4.3.0"), ["mcore-bridge", "megatron-core"])
    for combo in basis["combinations"]:
        assert combo["releases"]["ms-swift"] == "4.3.0"
        for req in swift:
            assert req.specifier.contains(Version(combo["releases"][req.name]))
        admitted(combo["releases"], release)


@pytest.mark.heavy
def test_targets_giving_part_of_the_stack_are_kept_and_the_rest_chosen(tmp_path, release):
    """`--target megatron-core==0.19.2 --target ms-swift==4.6.0` for a `megatron sft` run (the
    h-explore command on ms-swift examples/megatron/moe/qwen3_moe.sh @ 2d3694fb18): before,
    the scan ran without mcore-bridge (INCONCLUSIVE on batch_p2p_comm); now the given releases
    stand as a script's pins would, and mcore-bridge is chosen as for an unstated release."""
    script = tmp_path / "sft.sh"
    script.write_text(SWIFT_SFT)
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                           "--format", "json", "--target", "megatron-core==0.19.2",
                           "--target", "ms-swift==4.6.0"],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=600)
    doc = json.loads(proc.stdout)
    basis = doc["config"]["release_basis"]
    assert basis["stated"] == {"megatron-core": "0.19.2", "ms-swift": "4.6.0"}
    assert basis["free"] == ["mcore-bridge"]
    assert {t["name"] for t in doc["targets"]} >= {"ms-swift", "mcore-bridge", "megatron-core"}
    for combo in basis["combinations"]:
        admitted(combo["releases"], release)
    text = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                           "--target", "megatron-core==0.19.2", "--target", "ms-swift==4.6.0"],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=600).stdout
    assert "(mcore-bridge not stated: also judged on" in " ".join(text.split())  # not "none stated"


def test_releases_that_disagree_make_it_inconclusive_naming_them(swift_doc):
    """The verdict decided on the newest combination does not hold where another combination's
    scan read otherwise: INCONCLUSIVE names both and the outermost release that differs."""
    _, real = swift_doc
    doc = copy.deepcopy(real)
    combos = doc["config"]["release_basis"]["combinations"]
    first = judge(doc)
    other = "findings" if first.status != "findings" else "clean"
    combos[1].update(status=other, headline=f"{other.upper()}: what that scan read. More.")
    verdict = judge(doc)
    assert verdict.status == "inconclusive" and verdict.exit_code == 1
    differ = verdict.undecided[0]
    assert differ.decide.startswith("--target ms-swift==VERSION")
    assert f"{other.upper()}: what that scan read" in differ.what
    assert all(f"{n} {v}" in differ.what for c in combos for n, v in c["releases"].items())
    assert verdict.headline.startswith("INCONCLUSIVE: the framework releases the script could run on")


@pytest.mark.wheels
def test_every_script_stating_its_releases_is_judged_as_before():
    """A run whose releases are all stated has no release_basis (the shipped examples)."""
    code, doc = scan(ROOT / "examples" / "glm5_1_lora_pp4.sh")
    assert "release_basis" not in doc["config"] and code == 1


def test_a_windows_wheel_has_its_sites(release):
    """deepspeed 0.14.5 (the oldest DeepSpeed the rules verify) is a win_amd64 wheel with \\r\\n
    line ends: its `import torch` lines were not read, so it had 0 P2P sites and every
    DeepSpeed run's oldest combination read as an inventory, disagreeing with the newest."""
    from auditor.static.inventory import inventory

    old, new = (inventory(release(f"deepspeed=={v}")) for v in ("0.14.5", "0.16.0"))
    assert b"\r\n" in (old.source.root / "deepspeed" / "comm" / "torch.py").read_bytes()
    assert sorted((s.path, s.api) for s in old.sites) == sorted((s.path, s.api) for s in new.sites)
    assert old.sites


@pytest.mark.wheels
def test_a_deepspeed_run_agrees_across_its_covered_releases(tmp_path):
    """examples/deepspeed_pipe_pp2.sh without its `# deepspeed==0.16.0` (DeepSpeedExamples
    training/pipeline_parallelism/run.sh's `deepspeed train.py ... -p 2`): judged on DeepSpeed's
    newest and oldest covered releases, which read alike (before the \\r\\n fix the oldest read
    as an inventory of 0 sites and the run was INCONCLUSIVE on the disagreement). Where deepspeed
    is installed, the environment states its release and no combination is judged."""
    if _installed("deepspeed"):
        pytest.skip("deepspeed is installed here: it states the release (scan judges that one)")
    text = (ROOT / "examples" / "deepspeed_pipe_pp2.sh").read_text()
    script = tmp_path / "pipe.sh"
    script.write_text(text.replace("# deepspeed==0.16.0\n", ""))
    (tmp_path / "train.py").write_text((ROOT / "examples" / "train.py").read_text())  # read beside it
    code, doc = scan(script)
    basis = doc["config"]["release_basis"]
    covered = Stack.of("deepspeed train.py").covered_releases["deepspeed"]
    assert [c["releases"] for c in basis["combinations"]] == [
        {"deepspeed": max(covered, key=Version)}, {"deepspeed": min(covered, key=Version)}]
    assert len({c["status"] for c in basis["combinations"]}) == 1
    assert "disagree" not in doc["verdict"]["headline"] and code == doc["verdict"]["exit_code"]
    if doc["verdict"]["status"] != "inconclusive":
        assert "deepspeed 0.19.8 and deepspeed 0.14.5" in doc["verdict"]["headline"]


def test_the_text_header_names_every_combination_judged(swift_doc):
    """The header listed only the newest combination's targets, as though the script stated them."""
    from auditor.report.text import scan_report

    _, doc = swift_doc
    oldest = doc["config"]["release_basis"]["combinations"][-1]["releases"]
    header = " ".join(scan_report(doc).split("\n")[:4]).replace("\n  ", " ")
    assert "none stated: also judged on " + ", ".join(f"{n} {v}" for n, v in oldest.items()) \
        in " ".join(header.split())


@pytest.mark.wheels
def test_stated_releases_no_covered_release_joins_are_bad_input(tmp_path):
    """ms-swift 4.6.0 wants mcore-bridge>=1.6.3, which wants megatron-core>=0.16: with
    `# megatron-core==0.12.0` stated too, no mcore-bridge fits: exit 2, one line naming it."""
    script = tmp_path / "sft.sh"
    script.write_text("# ms-swift==4.6.0\n# megatron-core==0.12.0\n" + SWIFT_SFT.split("\n", 1)[1])
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                          check=False, capture_output=True, text=True, cwd=ROOT, timeout=300)
    # one error line (a first run on an empty cache also says what it downloads)
    said = [ln for ln in proc.stderr.splitlines() if not ln.startswith("p2paudit: downloading ")]
    assert proc.returncode == 2 and len(said) == 1, proc.stderr
    assert "which mcore-bridge does this run use?" in proc.stderr
    assert "ms-swift 4.6.0 + megatron-core 0.12.0 (mcore-bridge>=1.6.3)" in proc.stderr
    assert "--target mcore-bridge==VERSION" in proc.stderr


def test_a_front_end_and_its_schedules_are_covered_where_both_verify():
    """A torchrun run reads Megatron-LM's front end and megatron-core's schedules, both selected
    by megatron-core's release: the releases judged are those both rules files verify."""
    from auditor.rulebook.frameworks import frameworks

    verified = {f.name: f.verified for f in frameworks()}
    both = [v for v in verified["megatron-core"] if v in verified["megatron-lm"]]
    assert Stack.of("torchrun pretrain_gpt.py").covered_releases == {"megatron-core": both}
    assert Stack.of("deepspeed train.py").covered_releases == {"deepspeed": list(verified["deepspeed"])}
