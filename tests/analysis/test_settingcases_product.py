"""auditor.analysis.settingcases across several unknown settings: which setting an undecided
case is split on next (settingcases.next_key), and the headline of a verdict judged over all of
them. The documents are as auditor/scan.py writes them for a script leaving PP and the front
end's batch_p2p_comm unknown (alibaba/Pai-Megatron-Patch examples/codellama/
run_finetune_megatron_llama.sh at a098ca5acbdeaf7172ce0393fa309b39a77506db; the scan itself is in
tests/realscripts/test_unknown_settings.py)."""

from __future__ import annotations

from auditor.analysis.settingcases import (
    disagreeing,
    holds_words,
    judged,
    next_key,
    placeholder,
    undecided_case,
)

PP = {"key": "pipeline_model_parallel_size", "values": [1, 2, 4], "why": "classes of PP"}
BATCH = {"key": "batch_p2p_comm", "values": [True, False], "why": "batched or not"}
SEQ = {"key": "variable_seq_lengths", "values": [False, True], "why": "shapes exchanged or not"}
CLEAN = "CLEAN: no P2P finding."


def case(value, status="clean", split=None):
    out = {"value": value, "status": status, "headline": CLEAN if status == "clean" else "INCONCLUSIVE: x",
           "starts": True}
    return {**out, "split": split} if split else out


def test_the_next_setting_is_one_the_verdict_rests_on():
    open_all = lambda key: True  # noqa: E731
    guard = {"undecided": [{"what": "5 reached site(s): reached under an undecided guard",
                            "decide": "--set the config value of batch_p2p_comm, variable_seq_lengths"}]}
    assert next_key(guard, [], open_all, [PP, BATCH, SEQ]) is BATCH  # named, first in rules order
    assert next_key(guard, ["pipeline_model_parallel_size"], open_all, [PP, BATCH, SEQ]) is PP  # needed
    assert next_key(guard, [], lambda k: k != "batch_p2p_comm", [PP, BATCH, SEQ]) is SEQ  # given: not split
    assert next_key({"undecided": []}, [], open_all, [PP, BATCH]) is None  # nothing rests on them


def test_a_case_is_split_again_only_where_each_undecided_entry_can_be_decided_by_it():
    mixed = {"undecided": [
        {"what": "check mcore.overlap-with-batch: unknown overlap_p2p_comm, virtual_pipeline_model_parallel_size",
         "decide": "--set overlap_p2p_comm=VALUE --set virtual_pipeline_model_parallel_size=VALUE"},
        {"what": "guard", "decide": "--set variable_seq_lengths=VALUE"}]}
    open_all = lambda key: True  # noqa: E731
    assert next_key(mixed, [], open_all, [BATCH, SEQ]) is SEQ  # the run itself: split
    assert next_key(mixed, [], open_all, [BATCH, SEQ], within=True) is None  # a case: no use


def test_the_headline_names_every_setting_judged_over():
    split = {"key": "batch_p2p_comm", "why": "batched or not", "stated": "front end unread",
             "cases": [case(False), case(True)]}
    basis = {"key": "pipeline_model_parallel_size", "why": "classes of PP", "stated": "PP=${12}",
             "cases": [case(1), case(2, split=split), case(4, split=split)]}
    assert [b["key"] for b in judged(basis)] == ["pipeline_model_parallel_size", "batch_p2p_comm"]
    words = holds_words(basis)
    assert words.startswith("Holds for any pipeline_model_parallel_size and batch_p2p_comm (none known: "
                            "judged at pipeline_model_parallel_size 1, 2 and 4: classes of PP; then "
                            "batch_p2p_comm at False and True where a case left it open: batched or not;")
    assert words.endswith("--set pipeline_model_parallel_size=N, --set batch_p2p_comm=false|true give the run's)")
    assert placeholder(split) == "false|true" and placeholder(basis) == "N"


def test_the_case_shown_where_one_stays_undecided():
    basis = {"key": "pipeline_model_parallel_size", "why": "w", "stated": "s",
             "cases": [case(1), case(2, "inconclusive"), case(4, "inconclusive")]}
    assert undecided_case(basis) == 1
    assert undecided_case({**basis, "cases": [case(1), case(2)]}) is None


def test_the_setting_that_disagrees_is_found_below_the_first():
    split = {"key": "batch_p2p_comm", "why": "w", "stated": "s",
             "cases": [case(False), {**case(True), "status": "findings", "headline": "FINDINGS: DETAIL"}]}
    basis = {"key": "pipeline_model_parallel_size", "why": "w", "stated": "s",
             "cases": [case(1), case(2, "inconclusive", split), case(4, "inconclusive", split)]}
    assert disagreeing(basis) is split  # PP 1 is clean, PP 2 undecided: its batch_p2p_comm disagrees
    assert disagreeing({**basis, "cases": [case(1), case(2)]}) is None
