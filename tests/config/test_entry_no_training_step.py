"""An entry at pipeline size 1 that reaches no training step, and evaluates, is NOT A PIPELINE RUN
saying so (config/entry_inference.py `_no_training_step`, rules/stacks.toml [training_step]).

Written after alibaba/Pai-Megatron-Patch@a098ca5acbdeaf7172ce0393fa309b39a77506db
examples/llama/evaluate_huggingface_llama.py: it imports megatron_patch/training.py (whose own
`evaluate` runs `model_module.train()` and whose train_step runs the schedule) for get_model
only, and runs its own evaluate(): model.eval() under torch.no_grad(), `send_forward` of
megatron-core's p2p_communication (a no-op at PP 1); run_evaluate_huggingface_llama.sh passes
`--pipeline-model-parallel-size 1` (:82) before `${pr_options} ${load_options}` (:94), set in
ifs whose tests are the caller's arguments (:55-66).
"""

from __future__ import annotations

from pathlib import Path

from auditor.config.launch import parse_launch

ENTRY = """\
import torch
from megatron import get_args
from megatron.core import parallel_state
from megatron.core.pipeline_parallel.p2p_communication import send_forward
from megatron.initialize import initialize_megatron
from megatron_patch.training import get_model, train_step


def forward_step(batch, model):
    output = model(input_ids=batch)
    send_forward(output)
    return output.loss


def evaluate(data_loader, model):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for batch in data_loader:
            total += forward_step(batch, model){extra}
    return total


def main():
    model = get_model(None, wrap_with_ddp=False)[0]
    evaluate([], model)


if __name__ == '__main__':
    initialize_megatron(extra_args_provider=None)
    main()
"""

TRAINING = """\
from megatron.core.pipeline_parallel.schedules import get_forward_backward_func


def get_model(model_provider_func, wrap_with_ddp=True):
    return [model_provider_func()]


def train_step(forward_step_func, data_iterator, model, optimizer):
    forward_backward_func = get_forward_backward_func()
    losses = forward_backward_func(forward_step_func=forward_step_func, data_iterator=data_iterator)
    optimizer.step()
    return losses


def evaluate(forward_step_func, data_iterator, model):
    for model_module in model:
        model_module.eval()
    for model_module in model:
        model_module.train()
"""

SCRIPT = """\
set -e
PR=$1
if [ $PR = fp16 ]; then
    pr_options=" --fp16"
elif [ $PR = bf16 ]; then
    pr_options=" --bf16"
fi
{before}
torchrun --nproc_per_node 1 evaluate_llama.py --num-layers 4 --pipeline-model-parallel-size {pp} {after}
"""


def _launch(tmp_path: Path, extra: str = "", pp: str = "1", after: str = "${pr_options}", before: str = ""):
    files = {"examples/llama/evaluate_llama.py": ENTRY.format(extra=extra), "megatron_patch/__init__.py": "",
             "megatron_patch/training.py": TRAINING}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    script = tmp_path / "examples/llama/run.sh"
    script.write_text(SCRIPT.format(pp=pp, after=after, before=before))
    return parse_launch(script.read_text(), str(script))


def _said(config) -> list[str]:
    return [d.message for d in config.diagnostics if d.kind == "launch.not-pipeline"]


def test_an_evaluation_at_pp_1_is_not_a_pipeline_run(tmp_path: Path) -> None:
    said = _said(_launch(tmp_path))
    assert said and said[0].startswith("evaluate_llama.py evaluates without training")
    assert "[training_step]" in said[0] and "--pipeline-model-parallel-size 1" in said[0]


def test_a_training_step_reached_keeps_the_run_to_the_analysis(tmp_path: Path) -> None:
    """A loss's backward, an optimizer step, or a local module's train_step the entry calls."""
    for extra in ("\n            total.backward()", "\n            optimizer.step()",
                  "\n            train_step(None, None, model, None)"):
        assert not _said(_launch(tmp_path, extra=extra)), extra


def test_an_unread_or_larger_size_gives_no_note(tmp_path: Path) -> None:
    assert not _said(_launch(tmp_path, pp="2"))
    assert not _said(_launch(tmp_path, pp="$PP"))
    assert not _said(_launch(tmp_path, after="$EXTRA_ARGS"))  # never assigned: may carry --pp
    assert not _said(_launch(tmp_path, after="$EXTRA_ARGS", before="EXTRA_ARGS=$(cat extra.txt)"))
    args = 'ARGS=()\nfor a in "$@"; do ARGS+=("$a"); done'
    assert not _said(_launch(tmp_path, after='"${ARGS[@]}"', before=args))


def test_what_it_does_must_be_seen(tmp_path: Path) -> None:
    """No eval(), no_grad or generate(): what the entry does is not said, so no note."""
    _launch(tmp_path)
    entry = tmp_path / "examples/llama/evaluate_llama.py"
    entry.write_text(entry.read_text().replace("    model.eval()\n", "").replace(
        "    with torch.no_grad():\n", "    if True:\n"))
    config = parse_launch((tmp_path / "examples/llama/run.sh").read_text(), str(tmp_path / "examples/llama/run.sh"))
    assert not _said(config)


def test_a_word_that_may_give_the_size_gives_no_note(tmp_path: Path) -> None:
    """Only where every text a word of the command may be is known (Pai's `${pr_options}`, " --fp16"
    or " --bf16" by the caller's `$1`) and none names a pipeline flag is the size surely 1: a
    branch that sets `--pipeline-model-parallel-size 2` after the 1 (argparse keeps the last), an
    unknown word inside an assigned string, a positional, a never-assigned variable (its only
    assignment commented out) may give it."""
    after = "$OPTS"
    for before in ('if [ "$PR" = big ]; then OPTS="--pipeline-model-parallel-size 2"; fi',
                   'if [ "$PR" = big ]; then OPTS="--pipeline-model-parallel-size=2"; fi',
                   'if [ "$PR" = big ]; then OPTS="--use-checkpoint-args"; fi',
                   'OPTS="--fp16 $MORE_ARGS"',
                   'if [ "$PR" = fp16 ]; then OPTS="--fp16 $MORE_ARGS"; fi',
                   'if [ "$PR" = fp16 ]; then OPTS="--fp16 $2"; fi',
                   'if [ "$PR" = fp16 ]; then OPTS="$EXTRA_ARGS"; fi',
                   'if [ "$PR" = fp16 ]; then OPTS="--fp16 ${MP_ARGS}"; fi',
                   '# OPTS=""'):
        assert not _said(_launch(tmp_path, before=before, after=after)), before
    assert _said(_launch(tmp_path, before='if [ "$PR" = big ]; then OPTS="--fp16 --bf16"; fi', after=after))


def test_a_pipeline_built_outside_megatron_gives_no_note(tmp_path: Path) -> None:
    """A pipeline the entry builds itself runs P2P in its eval: torch.distributed.pipelining's
    ScheduleGPipe(...).eval (torch 2.13 schedules.py _PipelineSchedule.eval), DeepSpeed's
    PipelineModule run by engine.eval_batch (deepspeed/runtime/pipe/engine.py PipelineEngine.eval_batch)."""
    torch_pp = ("\n            from torch.distributed.pipelining import PipelineStage, ScheduleGPipe"
                "\n            ScheduleGPipe(PipelineStage(model, 0, 2, None), n_microbatches=4).eval(batch)")
    ds_pp = ("\n            from deepspeed.pipe import PipelineModule"
             "\n            engine = deepspeed.initialize(model=PipelineModule(layers=[], num_stages=2))[0]"
             "\n            engine.eval_batch(iter([batch]))")
    for extra in (torch_pp, ds_pp):
        assert not _said(_launch(tmp_path, extra=extra)), extra


def test_a_loop_imported_under_another_name_is_followed(tmp_path: Path) -> None:
    """`from megatron_patch.loop import run_training as fit_model` (a local loop calling
    backward), `from megatron.training import pretrain as megatron_pretrain` (Megatron-LM
    pretrain_gpt.py's call, aliased)."""
    (tmp_path / "megatron_patch").mkdir(parents=True, exist_ok=True)
    (tmp_path / "megatron_patch/loop.py").write_text(
        "def run_training(model, data):\n    for batch in data:\n        model(batch).backward()\n")
    alias = "\n            from megatron_patch.loop import run_training as fit_model\n            fit_model(model, [])"
    assert not _said(_launch(tmp_path, extra=alias))
    pretrain = ("\n            from megatron.training import pretrain as megatron_pretrain"
                "\n            megatron_pretrain(None, None, None, forward_step)")
    assert not _said(_launch(tmp_path, extra=pretrain))
