"""A script running several training commands is judged on each, and shown by its worst
(auditor.analysis.commandcases). The shape: Megatron-Bridge's loop over "TP,PP" pairs
(NVIDIA-NeMo/Megatron-Bridge, commit 067f987df03b8355b03192d88d70f1709fedf51a,
examples/models/gemma/gemma3_vl/sft.sh), one document per iteration's command."""

from __future__ import annotations

from auditor.analysis import commandcases


def _doc(status: str, pp: int, reached: int = 0) -> dict:
    return {"verdict": {"status": status, "headline": f"{status.upper()}: pp {pp}"},
            "config": {"effective": {"pipeline_model_parallel_size": pp}},
            "launch": {"path": "sft.sh", "line": 45},
            "sites": [{"reachable": "yes"}] * reached,
            "findings": [{"kind": "launch.several-commands", "severity": "warning", "message": "first one"}]}


def test_the_worst_verdict_is_shown_and_every_command_listed() -> None:
    doc = commandcases.merged([_doc("clean", 1), _doc("findings", 2, 3)])
    assert doc["verdict"]["status"] == "findings"
    basis = doc["config"]["command_basis"]
    assert basis["shown"] == 1 and [c["status"] for c in basis["commands"]] == ["clean", "findings"]
    notes = [f for f in doc["findings"] if f["kind"] == "launch.several-commands"]
    assert len(notes) == 1 and notes[0]["severity"] == "info" and "2 training commands" in notes[0]["message"]
    assert "clean at pipeline_model_parallel_size 1" in commandcases.words(basis)


def test_an_undecided_command_beats_a_clean_one() -> None:
    assert commandcases.merged([_doc("inconclusive", 2), _doc("clean", 1)])["config"]["command_basis"]["shown"] == 0


def test_among_equal_verdicts_the_one_reaching_most_sites_is_shown() -> None:
    doc = commandcases.merged([_doc("clean", 1, 0), _doc("clean", 2, 5)])
    assert doc["config"]["effective"]["pipeline_model_parallel_size"] == 2


def test_commands_one_of_which_runs_name_what_chooses() -> None:
    """microsoft/Megatron-DeepSpeed f4157bea69 examples_deepspeed/finetune_hf_llama/finetune_llama.sh:
    `$1` picks one of three commands (config/chosen_command.py notes it on each document)."""
    chosen = {"kind": "launch.chosen-command", "severity": "info", "message": "one of 2",
              "detail": {"chosen_by": '`[ "$1" = "convert" ]` (line 118)', "commands": 2}}
    docs = [_doc("clean", 1), _doc("clean", 2)]
    for d in docs:
        d["findings"].append(dict(chosen))
    doc = commandcases.merged(docs)
    basis = doc["config"]["command_basis"]
    assert basis["chosen_by"] == '`[ "$1" = "convert" ]` (line 118)'
    note = next(f for f in doc["findings"] if f["kind"] == "launch.several-commands")
    assert "one of 2 training commands, chosen by" in note["message"]
    said = commandcases.words(basis)
    assert "the script may run" in said and "line 118" in said and said.endswith("(line 45)")


def _stops(pp: int, reached: int = 0) -> dict:
    """A command that does not start: a recipe name no release defines (config category)."""
    doc = _doc("findings", pp, reached)
    doc["verdict"]["headline"] = "DOES NOT START: recipe gemma3_vl_4bX_sft_config does not exist"
    doc["findings"].append({"kind": "launch.recipe-missing", "severity": "error", "message": "no recipe",
                            "detail": {"category": "config"}})
    return doc


def _hangs(pp: int, reached: int = 1) -> dict:
    doc = _doc("findings", pp, reached)
    doc["sites"] = [{"reachable": "yes", "verdict": "contradiction"}] * reached
    doc["findings"].append({"kind": "unbatched-p2p", "severity": "error", "message": "may hang"})
    return doc


def test_a_command_that_does_not_start_is_never_left_out_and_never_hides_a_hang() -> None:
    """h33-review2 p1_loop.sh, after Megatron-Bridge 067f987 gemma3_vl/sft.sh: `for MODEL_NAME in
    gemma3_vl_4bX gemma3_vl_4b; do torchrun run_recipe.py --recipe ${MODEL_NAME}_sft_config ...;
    done`. Whether bash goes on past the failing first command is not read (h33-review7: `$?`
    tested, `exec`, `set $FLAGS`), so the run is not CLEAN on the second alone; a hang in any
    command is shown before a start-up error, whatever reaches more sites."""
    stops_then_clean = commandcases.merged([_stops(2, 5), _doc("clean", 2)])
    assert stops_then_clean["config"]["command_basis"]["shown"] == 0
    assert stops_then_clean["verdict"]["status"] == "findings"
    assert commandcases.merged([_stops(2, 9), _hangs(2, 1)])["config"]["command_basis"]["shown"] == 1
    assert commandcases.merged([_stops(2), _stops(4)])["config"]["command_basis"]["shown"] == 0


def test_a_hang_before_a_start_up_failure_is_shown() -> None:
    """The first command hangs: the run never reaches the second, which would not start; the hang
    is shown whichever reaches more sites."""
    doc = commandcases.merged([_hangs(2, 1), _stops(2, 9)])
    assert doc["config"]["command_basis"]["shown"] == 0


def test_commands_a_callers_variable_lets_run_name_it() -> None:
    """`[ "${RUN_EVAL:-0}" = 1 ] || exit 0` between two training commands (review h42 item 5;
    config/chosen_command.py `guarded` notes it): the basis says the later one runs only where the
    caller sets RUN_EVAL, never that the script runs both."""
    said = {"kind": "launch.caller-runs", "severity": "info", "message": "line 7 runs only where ...",
            "detail": {"guarded": "the training command at line 7 runs only where the caller sets RUN_EVAL, "
                                  "line 6 ending the default run before"}}
    docs = [_doc("clean", 4), _doc("findings", 3, 2)]
    for d in docs:
        d["findings"].append(dict(said))
    doc = commandcases.merged(docs)
    words = commandcases.words(doc["config"]["command_basis"])
    assert "may run" in words and "only where the caller sets RUN_EVAL" in words
    note = next(f for f in doc["findings"] if f["kind"] == "launch.several-commands")
    assert "the script may run 2 training commands" in note["message"]


def test_the_run_as_launched_leads_and_a_callers_command_is_said_with_its_condition() -> None:
    """review r42-shell item 2: `[ "${RUN_EVAL:-0}" = 1 ] || exit 0` between two training commands
    (the shape of NVIDIA/Megatron-LM d98e8a64dd tests/performance_tests/shell_test_utils/
    run_perf_test.sh:318, a caller's variable ending the run early): the later command runs only
    where the caller sets RUN_EVAL. The headline was its DOES NOT START, its condition unsaid; the
    default run (the first command, clean) leads, and the later one's verdict is said with it."""
    said = {"kind": "launch.caller-runs", "severity": "info", "message": "line 4 runs only where ...",
            "detail": {"guarded": "the training command 2 (line 4) runs only where the caller sets RUN_EVAL, "
                                  "line 3 ending the default run before", "commands": [2], "names": "RUN_EVAL"}}
    first, later = _doc("clean", 4), _stops(3, 2)
    first["launch"]["line"], later["launch"]["line"] = 2, 4
    for d, own in ((first, False), (later, True)):
        d["findings"].append({**said, "detail": {**said["detail"], "caller_only": own}})
    doc = commandcases.merged([first, later])
    basis = doc["config"]["command_basis"]
    assert basis["shown"] == 0 and doc["config"]["effective"]["pipeline_model_parallel_size"] == 4
    words = commandcases.words(basis)
    assert "where the caller sets RUN_EVAL, the training command 2 (line 4) runs too, and then: " \
           f"{later['verdict']['headline'].split('. ')[0]}" in words


def test_commands_on_one_line_the_run_as_launched_is_the_one_before_the_stop() -> None:
    """review r43-scan-shell item 1: `for pp in 4 3; do torchrun ... $pp; [ "${RUN_EVAL:-0}" = 1 ]
    || exit 0; done` (the stop of NVIDIA/Megatron-LM d98e8a64dd tests/performance_tests/
    shell_test_utils/run_perf_test.sh:318 inside a loop): both commands at line 4. Matched by line,
    the first was read as the caller's too and the second's DOES NOT START shown; each document's
    own `caller_only` (its place in the run) decides: the first, clean, is the run as launched."""
    said = {"kind": "launch.caller-runs", "severity": "info", "message": "command 2 (line 4) runs only where ...",
            "detail": {"guarded": "the training command 2 (line 4) runs only where the caller sets RUN_EVAL, "
                                  "line 5 ending the default run before", "commands": [2], "names": "RUN_EVAL"}}
    first, later = _doc("clean", 4), _stops(3, 2)
    first["launch"]["line"] = later["launch"]["line"] = 4
    for d, own in ((first, False), (later, True)):
        d["findings"].append({**said, "detail": {**said["detail"], "caller_only": own}})
    doc = commandcases.merged([first, later])
    assert doc["verdict"]["status"] == "clean" and doc["config"]["command_basis"]["shown"] == 0
    assert "the training command 2 (line 4) runs too, and then: DOES NOT START" in \
        commandcases.words(doc["config"]["command_basis"])
