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
