"""Forward only is read only where every call of megatron-core's schedule is read: a schedule that
escapes the calls read (returned, wrapped, stored in a container), or a keyword mapping that may
change before its call, leaves the run a possible training step (no NOT A PIPELINE RUN note at
PP 1), never forward only by accident.

Each script is tests/config/test_entry_assign.py's GENERATE (Megatron-Bridge@067f987df0
examples/conversion/hf_to_megatron_generate_text.py's shape: `get_forward_backward_func()(...,
forward_only=True, ...)`, :308-325) with its schedule call written another way; the r38 review's
repro (a schedule handed to a function as a parameter, called there with `**` keywords not
written out) in its own forms.
"""

from __future__ import annotations

import pytest

from tests.config.test_entry_assign import GENERATE, _config, _not_pipeline

CALL = """    return get_forward_backward_func()(forward_step_func=None, data_iterator=None, model=model,
                                       num_microbatches=1, forward_only=True, seq_length=8,
                                       micro_batch_size=1)
"""
KEYS = ('    kw = {"forward_step_func": None, "data_iterator": None, "model": model, "num_microbatches": 1,\n'
        '          "forward_only": True, "seq_length": 8, "micro_batch_size": 1}\n')
assert CALL in GENERATE


def _with(body: str, extra: str = "") -> str:
    """GENERATE with `body` run before its forward-only schedule call, and `extra` defined before
    main."""
    return GENERATE.replace(CALL, body + CALL).replace("def main(args):", f"{extra}def main(args):")


ESCAPES = {
    "returned": _with("    schedule()(**kw_of(model))\n",
                      "def schedule():\n    return get_forward_backward_func()\n\n\n"
                      "def kw_of(model):\n    return dict(zip(KEYS, (None, None, model, 8)))\n\n\n"
                      'KEYS = ("forward_step_func", "data_iterator", "model", "num_microbatches")\n\n\n'),
    "lambda": _with("    run = lambda **k: get_forward_backward_func()(**k)\n"
                    "    run(forward_step_func=None, model=model, num_microbatches=8)\n"),
    "in-a-list": _with("    fns = [get_forward_backward_func()]\n"
                       "    fns[0](forward_step_func=None, model=model, num_microbatches=8)\n"),
    "import-as": _with("    gfb()(**args.step_kwargs)\n").replace(
        "schedules import get_forward_backward_func\n",
        "schedules import get_forward_backward_func\nfrom megatron.core.pipeline_parallel.schedules import get_forward_backward_func as gfb\n"),
    "method-of-a-class": _with("    Runner(get_forward_backward_func()).run(model)\n",
                               "class Runner:\n    def __init__(self, fb):\n        self.fb = fb\n\n"
                               "    def run(self, model):\n        return self.fb(**vars(model))\n\n\n"),
    "deleted-key": _with(KEYS + '    del kw["forward_only"]\n    get_forward_backward_func()(**kw)\n'),
    "popped-key": _with(KEYS + '    kw.pop("forward_only")\n    get_forward_backward_func()(**kw)\n'),
    "merged-after": _with(KEYS.replace("}\n", ", **args.extra}\n") + "    get_forward_backward_func()(**kw)\n"),
}


def test_the_generator_as_written_is_read_forward_only(tmp_path) -> None:
    assert _not_pipeline(_config(tmp_path, GENERATE, "--tp 1 --pp 1"))


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_schedule_call_not_read_may_train(tmp_path, name) -> None:
    config = _config(tmp_path, ESCAPES[name], "--tp 1 --pp 1")
    assert "schedule_forward_only" not in config.entry_values, config.entry_values["schedule_forward_only"]
    assert not _not_pipeline(config)


def test_a_mapping_passed_whole_is_read(tmp_path) -> None:
    """The keywords in a mapping of the function's, passed `**` whole, read by constant keys."""
    code = _with(KEYS + '    print(kw["model"])\n    get_forward_backward_func()(**kw)\n')
    config = _config(tmp_path, code, "--tp 1 --pp 1")
    assert config.entry_values["schedule_microbatches"][0] == 1
    assert _not_pipeline(config)
