"""A `deepspeed train.py` run: what the training script hands DeepSpeed is read from its own code
(config/deepspeed_entry.py, rules/deepspeed.toml [pipeline_model] and [[script_call]]).

The scripts reproduce microsoft/DeepSpeedExamples (commit 83757d9c937daabd1089a08051061706cb73900d):
training/pipeline_parallelism/run.sh (`deepspeed train.py --deepspeed_config=ds_config.json -p 2
--steps=200`) with its train.py (argparse `-p/--pipeline-parallel-size` default 2, `--backend`
default 'nccl', `PipelineModule(..., num_stages=args.pipeline_parallel_size)`,
`deepspeed.init_distributed(dist_backend=args.backend)`), and
applications/DeepSpeed-Chat/training/step1_supervised_finetuning/training_scripts/opt/single_node/run_1.3b.sh
(`deepspeed main.py ... --zero_stage $ZERO_STAGE --deepspeed`) with main.py, which builds a Hugging
Face model through the `dschat` package two directories above and calls deepspeed.initialize.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from auditor import rulebook, sources
from auditor.analysis.verdict import judge
from auditor.config.deepspeed_entry import read_deepspeed_entry
from auditor.config.derive import derive
from auditor.config.launch import read_launch
from auditor.scan import ScanInputs, run_scan

ROOT = Path(__file__).resolve().parents[2]
TRAIN = '''
import argparse
import os
import deepspeed
import torch
from deepspeed.pipe import PipelineModule


def get_args():
    parser = argparse.ArgumentParser(description='CIFAR')
    parser.add_argument('--local_rank', type=int, default=-1)
    parser.add_argument('-s', '--steps', type=int, default=100)
    parser.add_argument('-p', '--pipeline-parallel-size', type=int, default=2)
    parser.add_argument('--backend', type=str, default='nccl')
    parser = deepspeed.add_config_arguments(parser)
    return parser.parse_args()


def train_pipe(args):
    net = PipelineModule(layers=[torch.nn.Linear(4, 4)], loss_fn=torch.nn.CrossEntropyLoss(),
                         num_stages={stages}, partition_method='parameters')
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
    for step in range(args.steps):
        engine.train_batch()


if __name__ == '__main__':
    args = get_args()
    deepspeed.init_distributed({backend})
    args.local_rank = int(os.environ['LOCAL_RANK'])
    train_pipe(args)
'''
RUN = "#!/bin/bash\n\ndeepspeed train.py --deepspeed_config=ds_config.json {flags} --steps=200\n"


def pipeline(tmp_path: Path, flags: str = "-p 2", stages: str = "args.pipeline_parallel_size",
             backend: str = "dist_backend=args.backend") -> Path:
    (tmp_path / "train.py").write_text(dedent(TRAIN.format(stages=stages, backend=backend)))
    (tmp_path / "run.sh").write_text(RUN.format(flags=flags))
    return tmp_path / "run.sh"


@pytest.mark.parametrize("flags,stages,backend,pp,dist", [
    # VALID: the flag given, else the argparse default; a literal as written
    ("-p 2", "args.pipeline_parallel_size", "dist_backend=args.backend", 2, "nccl"),
    ("--pipeline-parallel-size 4 --backend gloo", "args.pipeline_parallel_size", "dist_backend=args.backend", 4, "gloo"),
    ("", "args.pipeline_parallel_size", "args.backend", 2, "nccl"),
    ("-p 2", "3", "dist_backend='nccl'", 3, "nccl"),
    # a call that leaves dist_backend out states None: DeepSpeed's default (a rule) completes it
    ("-p 2", "args.pipeline_parallel_size", "", 2, None),
])
def test_the_scripts_deepspeed_calls_give_the_run_s_settings(tmp_path, flags, stages, backend, pp, dist):
    launch = read_launch(pipeline(tmp_path, flags, stages, backend))
    read_deepspeed_entry(launch)  # read once at parse time; reading again states the same
    assert launch.entry_values["pipeline_model_parallel_size"][0] == pp
    assert launch.entry_values["distributed_backend"][0] == dist
    assert "train.py:" in launch.entry_values["pipeline_model_parallel_size"][1]
    config = derive(launch, {"deepspeed": "0.16.0"}, None, "2.13.0")
    assert config.value("pipeline_model_parallel_size") == pp
    assert config.value("distributed_backend") == (dist or "nccl")


def test_a_value_not_known_statically_stays_unknown(tmp_path):
    """INVALID: num_stages from a function call, the backend from an environment read: nothing
    is read, and the lazy-init check stays as undecided as before, never decided by a guess."""
    launch = read_launch(pipeline(tmp_path, stages="compute_stages()", backend="os.environ['B']"))
    assert "pipeline_model_parallel_size" not in launch.entry_values
    assert "distributed_backend" not in launch.entry_values


def test_the_pipeline_example_is_clean_without_a_torch_or_deepspeed_question(tmp_path):
    """No torch, no deepspeed stated: judged across torch and on the newest and oldest covered
    DeepSpeed; PP 2 from `-p 2`, NCCL from --backend's default, the engine's paired order."""
    doc = run_scan(ScanInputs(str(pipeline(tmp_path)), targets=["deepspeed==0.19.8"], jobs=1))
    assert judge(doc).status == "clean", doc["verdict"]
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2


MAIN = '''
import argparse
import deepspeed
from transformers import AutoModelForCausalLM
from dschat.utils.model.model_utils import create_hf_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--zero_stage', type=int, default=0)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    deepspeed.init_distributed()
    model = create_hf_model(AutoModelForCausalLM, "facebook/opt-1.3b")
    model, optimizer, _, lr_scheduler = deepspeed.initialize(model=model, args=args, dist_init_required=True)


if __name__ == "__main__":
    main()
'''
MODEL_UTILS = '''
from transformers import AutoConfig
{extra}

def create_hf_model(model_class, name):
    return model_class.from_config(AutoConfig.from_pretrained(name))
'''
CHAT_RUN = '''#!/bin/bash
OUTPUT=$1
ZERO_STAGE=$2
if [ "$ZERO_STAGE" == "" ]; then
    ZERO_STAGE=2
fi
deepspeed main.py \\
   --model_name_or_path facebook/opt-1.3b \\
   --zero_stage $ZERO_STAGE \\
   --deepspeed \\
   --output_dir $OUTPUT \\
   &> $OUTPUT/training.log
'''


def chat(tmp_path: Path, extra: str = "") -> Path:
    step1 = tmp_path / "training" / "step1_supervised_finetuning"
    scripts = step1 / "training_scripts" / "opt" / "single_node"
    package = tmp_path / "dschat" / "utils" / "model"
    for d in (scripts, package):
        d.mkdir(parents=True)
    for d in (tmp_path / "dschat", tmp_path / "dschat" / "utils", package):
        (d / "__init__.py").write_text("")
    (package / "model_utils.py").write_text(dedent(MODEL_UTILS.format(extra=extra)))
    (step1 / "main.py").write_text(dedent(MAIN))
    (scripts / "run_1.3b.sh").write_text(CHAT_RUN)
    return step1


def scan_cli(cwd: Path, script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", script],
                          capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def test_a_zero_finetuning_script_is_not_a_pipeline_run(tmp_path, monkeypatch):
    """VALID: main.py and the dschat modules it imports never import deepspeed.pipe: the engine
    deepspeed.initialize builds is the data-parallel one, so the scan says what the run is."""
    step1 = chat(tmp_path)
    proc = scan_cli(step1, "training_scripts/opt/single_node/run_1.3b.sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    headline = proc.stdout.splitlines()[[n for n, ln in enumerate(proc.stdout.splitlines())
                                         if ln.startswith("NOT A PIPELINE RUN")][0]]
    assert "DeepSpeed's data-parallel engine (ZeRO)" in headline
    monkeypatch.chdir(step1)  # where its authors run it: main.py is in the working directory
    launch = read_launch("training_scripts/opt/single_node/run_1.3b.sh")
    (said,) = [d for d in launch.diagnostics if d.kind == "launch.not-pipeline"]
    assert said.detail["modules"] == ["../../dschat/__init__.py", "../../dschat/utils/__init__.py",
                                      "../../dschat/utils/model/__init__.py",
                                      "../../dschat/utils/model/model_utils.py"]


def test_a_local_module_that_builds_a_pipeline_module_makes_it_a_pipeline_run(tmp_path, monkeypatch):
    """INVALID for not-a-pipeline: the same script, its model module importing PipelineModule."""
    monkeypatch.chdir(chat(tmp_path, extra="from deepspeed.pipe import PipelineModule"))
    launch = read_launch("training_scripts/opt/single_node/run_1.3b.sh")
    assert launch.script == "main.py"
    assert not [d for d in launch.diagnostics if d.kind == "launch.not-pipeline"]


def test_an_entry_s_own_sends_are_left_to_the_analysis(tmp_path, monkeypatch):
    """r36-textgen review: a hand-written two-stage loop (torch.distributed send/recv of the
    activations, rules/torch.toml [[p2p_api]]) run by `deepspeed --num_gpus 2` never imports
    deepspeed.pipe, yet its stages send to each other: no ZeRO note, and (h38) no PipelineEngine
    either, which it never builds: its own sends are what runs, undecided (config/deepspeed_engine.py)."""
    (tmp_path / "train.py").write_text(dedent('''
        import torch
        import torch.distributed as dist

        dist.init_process_group("nccl")
        act = torch.zeros(4, device="cuda")
        if dist.get_rank() == 0:
            dist.send(act, dst=1)
        else:
            dist.recv(act, src=0)
        '''))
    (tmp_path / "run.sh").write_text("#!/bin/bash\n\ndeepspeed --num_gpus 2 train.py\n")
    monkeypatch.chdir(tmp_path)
    launch = read_launch("run.sh")
    assert launch.script == "train.py"
    assert not [d for d in launch.diagnostics if d.kind == "launch.not-pipeline"]
    (said,) = [d for d in launch.diagnostics if d.kind == "launch.unknown-stack"]
    assert "train.py:8 names torch's P2P API itself" in said.message


def test_the_facts_are_the_releases_code():
    """[pipeline_model] and [[script_call]] quote each verified release (whitespace aside)."""
    data = rulebook.load("deepspeed").data
    facts = [data["pipeline_model"], *data["script_call"]]
    for version in rulebook.load("deepspeed").section("framework")["verified"]:
        root = sources.resolve(f"deepspeed=={version}").root
        for fact in facts:
            text = "".join((root / fact["source"].rpartition(":")[0]).read_text().split())
            assert "".join(fact["code"].split()) in text, (version, fact["source"])
        pipe = (root / "deepspeed/pipe/__init__.py").read_text()
        assert "PipelineModule" in pipe
