"""Entries that reach no training loop are NOT A PIPELINE RUN (issue 22 item 11).

Reproduced (the trees are written here, shaped as upstream's):
- microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e
  examples_deepspeed/compression/ds_evalharness.sh: `deepspeed --num_nodes 1 --num_gpus 1
  ../../tasks/eval_harness/evaluate.py ... --inference --task_list lambada,wikitext --deepspeed
  ... --no-pipeline-parallel` (the flag added under `if [[ "${NO_PP}" = "true" ]]`, :69-72);
  tasks/eval_harness/evaluate.py imports pretrain_gpt's model_provider and megatron.training's
  setup_model_and_optimizer, then hands an adaptor to lm_eval's evaluator (:408-428); its
  megatron/arguments.py:63 `args.ds_pipeline_enabled = not args.no_pipeline_parallel` and :94
  (validate_args asserts PP 1). Every flag the script passes is taken, as upstream's parser takes
  it (megatron/arguments.py: `--no-pipeline-parallel` :954, `--inference` :958, `--load` :1077,
  `--deepspeed`/`--deepspeed_config` through deepspeed.add_config_arguments :54; evaluate.py's
  tasks_args `--task_list` :395-398): the miniature's run starts.
- pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a torchtitan/models/flux/run_infer.sh
  (`torchrun ... -m torchtitan.models.flux.inference.infer --module flux --config ...
  --checkpoint.enable`) and torchtitan/models/flux/inference/infer.py (:19-97: builds
  FluxTrainer(config), loads its checkpoint and generates images with trainer.model_parts[0]);
  torchtitan/trainer.py:827 `self.pp_schedule.step(` in forward_backward_step.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from auditor import cli, rulebook
from auditor.config.no_training import _uses
from auditor.config.launch import read_launch
from tests.realscripts.test_launch_entry_module import FLUX

EVAL_SH = dedent('''\
    PP_SIZE=1
    NO_PP="true"
    CMD="../../tasks/eval_harness/evaluate.py \\
        --load /blob/ckpt \\
        --tensor-model-parallel-size 1 \\
        --pipeline-model-parallel-size $PP_SIZE \\
        --micro-batch-size 12 \\
        --inference \\
        --task_list lambada,wikitext \\
        --deepspeed \\
        --deepspeed_config ds_config.json \\
        --num-layers -1 --hidden-size -1 --num-attention-heads -1 --seq-length -1 \\
        --max-position-embeddings -1"
    if [[ "${NO_PP}" = "true" ]]; then
    CMD="${CMD} \\
        --no-pipeline-parallel"
    fi
    LAUNCHER="deepspeed --num_nodes 1 --num_gpus 1"
    $LAUNCHER $CMD
    ''')

EVALUATE = dedent('''\
    import os
    import sys
    sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir, os.path.pardir)))
    from lm_eval import evaluator, tasks
    from pretrain_gpt import model_provider
    from megatron import get_args
    from megatron.training import setup_model_and_optimizer
    from megatron.initialize import initialize_megatron
    from megatron.arguments import parse_args
    from deepspeed.runtime.pipe import schedule

    class EvalHarnessAdaptor:
        def __init__(self, model):
            self.model = model

        def _model_call(self, inps):
            args = get_args()
            if args.no_pipeline_parallel:
                return self.model(inps)
            return self.model.eval_batch(iter(inps), compute_loss=False, reduce_output=None)

    def tasks_args(parser):
        group = parser.add_argument_group(title='Evaluation options')
        group.add_argument('--task_list', type=str, default="all")
        return parser

    def main():
        args = parse_args(extra_args_provider=tasks_args)
        initialize_megatron(extra_args_provider=tasks_args)
        model, _, _ = setup_model_and_optimizer(model_provider, None)
        results = evaluator.evaluate(EvalHarnessAdaptor(model[0]), tasks.get_task_dict(["lambada"]), False, 0, None)
        print(results)

    if __name__ == "__main__":
        main()
    ''')

PRETRAIN_GPT = dedent('''\
    import subprocess
    from megatron import get_args
    from megatron.training import pretrain
    from megatron.model import GPTModel, GPTModelPipe

    def model_provider(pre_process=True, post_process=True):
        args = get_args()
        if args.deepspeed and not args.no_pipeline_parallel:
            return GPTModelPipe()
        return GPTModel()

    def command_exists(cmd):
        return subprocess.Popen(f'type {cmd}', stdout=subprocess.PIPE, shell=True).wait() == 0

    def git_ds_info():
        if command_exists('git'):
            print(subprocess.check_output("git rev-parse --short HEAD", shell=True))

    if __name__ == "__main__":
        git_ds_info()
        pretrain(None, model_provider, None, None)
    ''')

ARGUMENTS = dedent('''\
    import argparse

    def parse_args(extra_args_provider=None):
        parser = argparse.ArgumentParser()
        parser.add_argument('--no-pipeline-parallel', action='store_true')
        parser.add_argument('--inference', action='store_true')
        parser.add_argument('--load', type=str)
        for flag in ('--tensor-model-parallel-size', '--pipeline-model-parallel-size', '--micro-batch-size',
                     '--num-layers', '--hidden-size', '--num-attention-heads', '--seq-length',
                     '--max-position-embeddings'):
            parser.add_argument(flag, type=int)
        parser.add_argument('--deepspeed', action='store_true')
        parser.add_argument('--deepspeed_config', type=str)
        if extra_args_provider is not None:
            parser = extra_args_provider(parser)
        args = parser.parse_args()
        # helper argument to set deepspeed pipeline parallel or not
        args.ds_pipeline_enabled = not args.no_pipeline_parallel
        return args

    def validate_args(args, defaults={}):
        if args.no_pipeline_parallel:
            assert args.pipeline_model_parallel_size == 1, \\
                "pipeline_model_parallel_size must be 1 if pipeline parallel is disabled"
    ''')


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _mds(root: Path, script: str = EVAL_SH, entry: str = EVALUATE) -> Path:
    _tree(root, {"megatron/__init__.py": "def get_args():\n    return None\n",
                 "megatron/arguments.py": ARGUMENTS,
                 "megatron/initialize.py": "def initialize_megatron(extra_args_provider=None):\n    pass\n",
                 "megatron/training.py": "def pretrain(*a):\n    train_step()\n\ndef train_step():\n    pass\n\n"
                                         "def setup_model_and_optimizer(*a):\n    return [None], None, None\n",
                 "megatron/model/__init__.py": "class GPTModel: pass\nclass GPTModelPipe: pass\n",
                 "pretrain_gpt.py": PRETRAIN_GPT,
                 "tasks/eval_harness/evaluate.py": entry,
                 "examples_deepspeed/compression/ds_evalharness.sh": script})
    return root / "examples_deepspeed/compression/ds_evalharness.sh"


def _not_pipeline(script: Path) -> str | None:
    said = [d.message for d in read_launch(script).diagnostics if d.kind == "launch.not-pipeline"]
    return said[0] if said else None


def test_mds_evaluation_with_no_pipeline_parallel_is_not_a_pipeline_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script = _mds(tmp_path)
    monkeypatch.chdir(script.parent)
    said = _not_pipeline(script)
    assert said is not None and "--no-pipeline-parallel" in said and "evaluate.py" in said
    assert "training loop" in said and "megatron/arguments.py" in said
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0


def test_mds_evaluation_at_a_pipeline_is_left_to_the_analysis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --no-pipeline-parallel the evaluation steps DeepSpeed's PipelineEngine
    (eval_batch): the pipeline size decides, not this reader."""
    script = _mds(tmp_path, EVAL_SH.replace('NO_PP="true"', 'NO_PP="false"'))
    monkeypatch.chdir(script.parent)
    assert _not_pipeline(script) is None


def test_mds_entry_that_trains_is_left_to_the_analysis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry whose own code calls Megatron-DeepSpeed's training loop (pretrain) trains at PP 1:
    one stage, read as before (CLEAN), not NOT A PIPELINE RUN."""
    trains = EVALUATE.replace("print(results)", "print(results)\n    pretrain(None, model_provider, None, None)")
    trains = trains.replace("from megatron.training import setup_model_and_optimizer",
                            "from megatron.training import setup_model_and_optimizer, pretrain")
    script = _mds(tmp_path, entry=trains)
    monkeypatch.chdir(script.parent)
    assert _not_pipeline(script) is None


def test_mds_entry_running_code_not_seen_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pretrain_gpt.py's git_ds_info (subprocess) runs only from its main block; an entry that
    calls it runs code this reader does not see."""
    runs = EVALUATE.replace("from pretrain_gpt import model_provider",
                            "from pretrain_gpt import model_provider, git_ds_info")
    script = _mds(tmp_path, entry=runs.replace("    print(results)", "    print(results)\n    git_ds_info()"))
    monkeypatch.chdir(script.parent)
    assert _not_pipeline(script) is None


def test_mds_rule_needs_the_megatron_deepspeed_parser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout whose megatron/arguments.py does not turn the flag into `ds_pipeline_enabled`
    is not the Megatron-DeepSpeed the rule was read on: nothing is said."""
    script = _mds(tmp_path)
    (tmp_path / "megatron/arguments.py").write_text("def parse_args(extra_args_provider=None):\n    pass\n")
    monkeypatch.chdir(script.parent)
    assert _not_pipeline(script) is None


# microsoft/Megatron-DeepSpeed@f4157bea69 examples_deepspeed/generate_text.sh (:22-51): deepspeed
# runs tools/generate_samples_gpt.py with no pipeline flag; the entry (:24-36, :115-150) builds a
# GPTModel through megatron.training.get_model and generates with megatron.text_generation_utils;
# megatron/arguments.py:1154 defaults --pipeline-model-parallel-size to 1.
GENERATE_SH = dedent('''\
    launch_cmd="deepspeed --num_nodes 1 --num_gpus 1"
    program_cmd="tools/generate_samples_gpt.py \\
           --tensor-model-parallel-size 1 \\
           --num-layers 24 \\
           --num-samples 0 \\
           --load dataset/checkpoints/gpt2_345m {more}"
    $launch_cmd $program_cmd
    ''')

GENERATE = dedent('''\
    import os
    import sys
    sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), os.path.pardir)))
    from megatron import get_args
    from megatron.initialize import initialize_megatron
    from megatron.model import GPTModel
    from megatron.training import get_model
    from megatron.text_generation_utils import generate_samples_interactive

    def main():
        initialize_megatron(extra_args_provider=None, args_defaults={{'tokenizer_type': 'GPT2BPETokenizer'{defaults}}})
        model = get_model(lambda pre_process=True, post_process=True: GPTModel())
        generate_samples_interactive(model[0])

    if __name__ == "__main__":
        main()
    ''')


def _generate(root: Path, more: str = "", defaults: str = "") -> Path:
    script = _mds(root, GENERATE_SH.format(more=more))
    _tree(root, {"megatron/arguments.py": ARGUMENTS + dedent('''\

                     def _add_distributed_args(group):
                         group.add_argument('--pipeline-model-parallel-size', type=int, default=1,
                                            help='Degree of pipeline model parallelism.')
                     '''),
                 "megatron/text_generation_utils.py": "def generate_samples_interactive(model):\n    pass\n",
                 # megatron/model/gpt_model.py:22 imports deepspeed.pipe for GPTModelPipe (:322)
                 "megatron/model/__init__.py": "from deepspeed.pipe import PipelineModule\n\n\n"
                                               "class GPTModel: pass\n\n\nclass GPTModelPipe(PipelineModule): pass\n",
                 "tools/generate_samples_gpt.py": GENERATE.format(defaults=defaults)})
    return script


def test_mds_generation_at_the_default_pipeline_size_is_not_a_pipeline_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _generate(tmp_path)
    monkeypatch.chdir(tmp_path)
    said = _not_pipeline(script)
    assert said is not None and "generate_samples_gpt.py" in said and "default 1" in said and "one stage" in said


# r36-textgen review item 1: tools/generate_samples_gpt.py (Megatron-DeepSpeed f4157bea69) with its
# initialize_megatron call or its extra-args provider changed to take settings from a file:
# megatron/initialize.py:51-53 sets each key of `external_args` on the args unchecked.
@pytest.mark.parametrize("old, new", [
    ("args_defaults=", "external_args=json.load(open('gen_overrides.json')), args_defaults="),
    ("args_defaults={", "args_defaults=CFG or {"),  # a mapping loaded elsewhere (`use_checkpoint_args`)
    ("    initialize_megatron(", "    get_parser().set_defaults(**yaml.safe_load(open(os.environ['GEN_CFG'])))\n"
                                 "    initialize_megatron("),
    ("    initialize_megatron(", "    argv = sys.argv\n    argv.extend(['--pipeline-model-parallel-size', '2'])\n"
                                 "    initialize_megatron("),
    ("import sys\n", "import sys as system\n"
                     "system.argv += ['--pipeline-model-parallel-size', '2']\n"),
    # review minor: the rule's `methods` (train_batch) add to the shared ones, a step on any object
    ("    generate_samples_interactive(", "    model[0].backward(None)\n    generate_samples_interactive("),
])
def test_mds_generation_whose_code_may_set_the_size_unseen_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    script = _generate(tmp_path)
    entry = tmp_path / "tools/generate_samples_gpt.py"
    text = entry.read_text()
    assert old in text
    entry.write_text(text.replace(old, new, 1))
    monkeypatch.chdir(tmp_path)
    said = _not_pipeline(script)
    assert said is None or "default 1" not in said


@pytest.mark.parametrize("more, defaults", [
    ("--pipeline-model-parallel-size 2", ""),  # a size given
    ("--use-checkpoint-args", ""),  # the checkpoint's size (megatron/checkpointing.py:526)
    ("$EXTRA_ARGS", ""),  # a word not seen may be either
    ("--seed $SEED", ""),  # read as written: `$SEED` may be several words
    ("", ", 'use_checkpoint_args': True"),  # the entry's own default (megatron/initialize.py:55)
])
def test_mds_generation_whose_size_may_be_set_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, more: str, defaults: str) -> None:
    script = _generate(tmp_path, more, defaults)
    monkeypatch.chdir(tmp_path)
    said = _not_pipeline(script)
    assert said is None or "default 1" not in said


@pytest.mark.parametrize("sourced", ['source "$1"', "source ./cluster_env.sh"])
def test_mds_generation_after_code_not_read_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sourced: str) -> None:
    """r36-textgen review item 2: a file not read, sourced after the command's variables are set,
    may change them (or define a function `deepspeed`): the words are not known to be these."""
    script = _generate(tmp_path)
    script.write_text(script.read_text().replace("$launch_cmd $program_cmd", f"{sourced}\n$launch_cmd $program_cmd"))
    monkeypatch.chdir(tmp_path)
    said = _not_pipeline(script)
    assert said is None or "default 1" not in said


FLUX_SH = FLUX.replace("-m proj.models.", "-m torchtitan.models.")  # run_infer.sh as it is upstream

INFER = dedent('''\
    import os

    import torch
    from torchtitan.config import ConfigManager
    from torchtitan.models.flux.inference.sampling import generate_image, save_image
    from torchtitan.models.flux.trainer import FluxTrainer


    @torch.no_grad()
    def inference(config):
        trainer = FluxTrainer(config)
        world_size = int(os.environ["WORLD_SIZE"])
        trainer.checkpointer.load(step=config.checkpoint.load_step)
        images = generate_image(device=trainer.device, model=trainer.model_parts[0], prompt=["a"])
        save_image(name="x.png", output_dir=config.dump_folder, x=images)
        torch.distributed.destroy_process_group()


    if __name__ == "__main__":
        config_manager = ConfigManager()
        config = config_manager.parse_args()
        inference(config)
    ''')

TRAINER = dedent('''\
    class Trainer:
        def forward_backward_step(self, inputs):
            if self.parallel_dims.pp_enabled:
                self.pp_schedule.step(inputs)

        def train_step(self, batch):
            self.forward_backward_step(batch)

        def train(self):
            self.train_step(None)
    ''')


def _titan(root: Path, infer: str = INFER) -> Path:
    _tree(root, {"pyproject.toml": "[project]\nname = 'torchtitan'\n", "assets/version.txt": "0.2.2\n",
                 "torchtitan/__init__.py": "", "torchtitan/trainer.py": TRAINER,
                 "torchtitan/config/__init__.py": "class ConfigManager:\n    def parse_args(self):\n        pass\n",
                 "torchtitan/models/__init__.py": "", "torchtitan/models/flux/__init__.py": "",
                 "torchtitan/models/flux/trainer.py": "from torchtitan.trainer import Trainer\n\n"
                                                      "class FluxTrainer(Trainer):\n    pass\n",
                 "torchtitan/models/flux/inference/__init__.py": "",
                 "torchtitan/models/flux/inference/sampling.py": "def generate_image(**kw):\n    pass\n\n"
                                                                 "def save_image(**kw):\n    pass\n",
                 "torchtitan/models/flux/inference/infer.py": infer,
                 "torchtitan/models/flux/run_infer.sh": FLUX_SH})
    return root / "torchtitan/models/flux/run_infer.sh"


def test_torchtitan_inference_module_is_not_a_pipeline_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script = _titan(tmp_path)
    monkeypatch.chdir(tmp_path)
    said = _not_pipeline(script)
    assert said is not None and "torchtitan.models.flux.inference.infer" in said and "pp_schedule" in said
    code = cli.main(["scan", "--config", str(script), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"]["status"] == "not-pipeline" and code == 0


def test_torchtitan_inference_module_that_trains_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _titan(tmp_path, INFER.replace("trainer.checkpointer.load(", "trainer.train()\n    trainer.checkpointer.load("))
    monkeypatch.chdir(tmp_path)
    assert _not_pipeline(script) is None


def test_torchtitan_module_run_from_no_torchtitan_checkout_is_left_to_the_analysis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where trainer.py does not step its schedule as the rule read it, the rule is not this code's."""
    script = _titan(tmp_path)
    (tmp_path / "torchtitan/trainer.py").write_text("class Trainer:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert _not_pipeline(script) is None


TITAN_RULE = next(r for r in rulebook.load("torchtitan").data["no_training_entry"])


@pytest.mark.wheels
@pytest.mark.parametrize("version", TITAN_RULE["checked"])
def test_torchtitan_rule_holds_in_checked_releases(release: Any, version: str) -> None:
    """In each release the rule names: trainer.py holds the code it was read on, the only
    `pp_schedule.step`/`.eval` calls are in forward_backward_step and the validator, and every
    inference module the rule covers names none of its loops."""
    root = next(p.parent.parent for p in sorted(Path(release(f"torchtitan=={version}").root)
                                                 .rglob("torchtitan/__init__.py")))
    file = TITAN_RULE["source"].split()[1].rsplit(":", 1)[0]
    assert TITAN_RULE["code"] in (root / file).read_text(encoding="utf-8")
    steps = [p.relative_to(root).as_posix() for p in (root / "torchtitan").rglob("*.py")
             if "experiments" not in p.parts and "tests" not in p.parts
             and ("pp_schedule.step(" in p.read_text(encoding="utf-8") or "pp_schedule.eval(" in p.read_text(encoding="utf-8"))]
    assert sorted(steps) == ["torchtitan/components/validate.py", "torchtitan/trainer.py"]
    inference = [p for p in (root / "torchtitan").rglob("*.py")
                 if fnmatch.fnmatchcase(".".join(p.relative_to(root).with_suffix("").parts), TITAN_RULE["modules"][0])]
    assert inference
    loops = set(TITAN_RULE["loops"])
    for path in inference:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not _uses(tree, {"torchtitan"}, loops, loops | set(TITAN_RULE["methods"])), path


TITAN = Path(os.environ.get("P2PAUDIT_TORCHTITAN", "/work/upstream/real_scripts/pytorch+torchtitan@b5bcd76c66"))


@pytest.mark.skipif(not (TITAN / "torchtitan/trainer.py").is_file(),
                    reason="the torchtitan checkout (benchmarks/real_scripts/fetch.py) is not here")
def test_torchtitan_rule_quotes_its_checkout() -> None:
    """The rule's `code` is at the line its `source` names in the pinned checkout."""
    path, line = TITAN_RULE["source"].split()[1].rsplit(":", 1)
    assert TITAN_RULE["code"] in (TITAN / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
