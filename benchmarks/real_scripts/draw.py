"""Draw a sealed batch of launch scripts for the real-scripts corpus (issue 22).

The procedure of README.md "test9" to "test13", kept here so a batch can be redrawn and checked:
the 19 projects at their pinned commits, every `*.sh` whose text matches LAUNCH (not under an
install/docker/.github/test folder, not already in the manifest at BASE), split into S_PP (a
literal pipeline size > 1) and S_REST, each ordered by one `random.Random(SEED)`. The integrator
then reads the scripts in that order and keeps launch scripts (NOT_LAUNCH lists the skips), at
most CAP per project in each stratum. Reads bare git snapshots ($P2PAUDIT_MIRROR, as fetch.py).

    python benchmarks/real_scripts/draw.py --seed 20261313 --base 69e93d2   # test13, as drawn
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tomllib
from pathlib import Path

LAUNCH = re.compile(r"(^|[\s;&|(`\"'=])(torchrun|deepspeed|ray job submit|srun|mpirun|(megatron|swift) [a-z]+"
                    r"|python3?(\.\d+)? +(-u +)?(-m +(?!(pip|pytest)\b)\S+|(?!setup\.py)\S+\.py))(\s|$)", re.M)
PP = re.compile(r"(pipeline[-_]model[-_]parallel[-_]size|pipeline_parallel_degree|pipe[-_]parallel[-_]size"
                r"|pipeline_model_parallel|\bPP)[\"']?\s*[:=\s]\s*[\"']?([2-9]|[1-9][0-9])\b", re.I)
SKIP_DIR = re.compile(r"(^|/)(install|docker|\.github|tests?)/")

# The 19 projects and the commit each pool is drawn at (README.md "test9", the newest pinned).
PROJECTS = {
    "modelscope/ms-swift": "3602360a56",
    "alibaba/Pai-Megatron-Patch": "a098ca5acb",
    "volcengine/verl": "b178a3cd56",
    "microsoft/DeepSpeedExamples": "83757d9c93",
    "NVIDIA-NeMo/Megatron-Bridge": "067f987df0",
    "microsoft/Megatron-DeepSpeed": "f4157bea69",
    "NVIDIA/Megatron-LM": "d98e8a64dd",
    "alibaba/ROLL": "8eb27cc2dc",
    "THUDM/slime": "624b824a89",
    "bigcode-project/Megatron-LM": "7c325cd34a",
    "alibaba/ChatLearn": "b7af31a972",
    "OpenRLHF/OpenRLHF": "3c3be6234e",
    "NVIDIA/NeMo": "8cfedd7203",
    "NVIDIA-NeMo/RL": "7ea279abfb",
    "pytorch/torchtitan": "b5bcd76c66",
    "EleutherAI/gpt-neox": "ea7aefd8f8",
    "FlagOpen/FlagScale": "da4935ec60",
    "huggingface/nanotron": "2411b022a7",
    "hiyouga/LLaMA-Factory": "ff6d4d12ee",
}

# Read and judged not to start a program themselves (wrappers running the caller's command).
NOT_LAUNCH = {
    ("NVIDIA-NeMo/RL", "tools/external_gym_vllm/run_in_allocation.sh"),
    ("NVIDIA/Megatron-LM", "examples/post_training/modelopt/slurm/sbatch.sh"),
    ("NVIDIA/NeMo", "scripts/dataset_processing/spoken_wikipedia/run.sh"),  # data preparation (test14)
    ("NVIDIA/NeMo", "scripts/freesound_download_resample/download_resample_freesound.sh"),  # data (test15)
    ("NVIDIA/NeMo", "scripts/installers/install_k2.sh"),  # installs a package (test15)
    ("microsoft/Megatron-DeepSpeed", "examples/sc21/CONFIG.sh"),  # settings sourced by others (test15)
    ("NVIDIA/NeMo", "tools/ctc_segmentation/run_filter.sh"),  # filters a data set (test15)
    ("bigcode-project/Megatron-LM", "examples/detxoify_lm/annotations/preprocess.sh"),  # data (test15)
    ("bigcode-project/Megatron-LM", "tools/retro/examples/preprocess_data.sh"),  # data (test16)
    ("microsoft/DeepSpeedExamples",
     "training/data_efficiency/gpt_finetuning/finetune/ds_analyze_gpt_data_reduce.sh"),  # data (test16)
    ("pytorch/torchtitan", "scripts/ci/pytorch_ci_test_runner.sh"),  # runs a test suite (test16)
    ("NVIDIA/Megatron-LM", "tools/bisect.sh"),  # git bisect over functional tests (test16)
    ("NVIDIA-NeMo/RL", "tools/x_token/build_projection_matrix.sh"),  # tokenizer data (test17)
    ("EleutherAI/gpt-neox", "tools/datasets/multinode_prepare_data.sh"),  # data (test17)
    ("NVIDIA-NeMo/RL", "tools/build-custom-trtllm.sh"),  # builds a wheel (test17)
    ("NVIDIA-NeMo/RL", "tools/launch-bisect.sh"),  # git bisect step over a test case (test17)
}

CorpusEntry = tuple[str, str]


def git(repo: str, *args: str) -> str:
    mirror = Path(os.environ.get("P2PAUDIT_MIRROR", "/work/.mirror")) / repo.replace("/", "+") / "repo"
    return subprocess.run(["git", "--git-dir", str(mirror), *args], check=True,
                          capture_output=True, text=True, errors="replace").stdout


def taken_at(base: str) -> set[CorpusEntry]:
    """Every (repo, path) of the manifest at commit BASE of this repository."""
    text = subprocess.run(["git", "show", f"{base}:benchmarks/real_scripts/manifest.toml"], check=True,
                          capture_output=True, text=True, cwd=Path(__file__).parent).stdout
    return {(s["repo"], s["path"]) for s in tomllib.loads(text)["script"]}


def pool(repo: str, commit: str, taken: set[CorpusEntry]) -> list[tuple[str, str, bool]]:
    paths = sorted(p for p in git(repo, "ls-tree", "-r", "--name-only", commit).splitlines() if p.endswith(".sh"))
    out = []
    for p in paths:
        if SKIP_DIR.search(p) or (repo, p) in taken:
            continue
        text = git(repo, "show", f"{commit}:{p}")
        if LAUNCH.search(text):
            out.append((repo, p, bool(PP.search(text))))
    return out


def keep(order: list[CorpusEntry], want: int, cap: int) -> tuple[list[tuple[int, CorpusEntry]], list[str]]:
    kept: list[tuple[int, CorpusEntry]] = []
    notes, per = [], dict[str, int]()
    for pos, (repo, path) in enumerate(order):
        if len(kept) == want:
            break
        if (repo, path) in NOT_LAUNCH:
            notes.append(f"skip {pos}: {repo} {path} (not a launch script)")
        elif per.get(repo, 0) >= cap:
            notes.append(f"skip {pos}: {repo} {path} (cap)")
        else:
            per[repo] = per.get(repo, 0) + 1
            kept.append((pos, (repo, path)))
    return kept, notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--base", required=True, help="commit of this repository whose manifest is taken out")
    ap.add_argument("--size", type=int, default=25)
    ap.add_argument("--pp", type=int, default=15, help="how many of the batch S_PP should give")
    ap.add_argument("--cap", type=int, default=2, help="per project in each stratum")
    args = ap.parse_args()
    taken = taken_at(args.base)
    union = sorted(x for repo, commit in PROJECTS.items() for x in pool(repo, commit, taken))
    s_pp = [(r, p) for r, p, pp in union if pp]
    s_rest = [(r, p) for r, p, pp in union if not pp]
    rng = random.Random(args.seed)
    kept_pp, notes_pp = keep(rng.sample(s_pp, len(s_pp)), args.pp, args.cap)
    kept_rest, notes_rest = keep(rng.sample(s_rest, len(s_rest)), args.size - len(kept_pp), args.cap)
    print(f"pool {len(union)}: S_PP {len(s_pp)}, S_REST {len(s_rest)}", file=sys.stderr)
    for stratum, kept, notes in (("S_PP", kept_pp, notes_pp), ("S_REST", kept_rest, notes_rest)):
        for note in notes:
            print(f"# {stratum} {note}", file=sys.stderr)
        for pos, (repo, path) in kept:
            print(f"{stratum}\t{pos}\t{repo}\t{PROJECTS[repo]}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
