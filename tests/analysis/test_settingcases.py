"""auditor.analysis.settingcases: a verdict judged across the values of a setting the script
leaves unknown (`PP=$1`), at the values of rules/megatron-core.toml's [[setting_cases]] (1, 2,
4). Decided only where every case in which the run starts agrees on a decided verdict; a case
that does not start decides nothing for the others; values that disagree name the --set."""

from __future__ import annotations

from auditor.analysis.settingcases import differ_words, disagree, does_not_start, holds_words, settled

WHY = "at PP 1 no stage sends, PP 2 has no middle stage, 4 stands for every PP > 2"


def basis(*cases: tuple[int, str, str]) -> dict:
    """As auditor/scan.py writes config.setting_basis: one case per value, with whether it starts."""
    return {"key": "pipeline_model_parallel_size", "why": WHY, "stated": "PP=$1: the script's first argument",
            "cases": [{"value": v, "status": status, "headline": headline,
                       "starts": not does_not_start({"headline": headline})} for v, status, headline in cases]}


CLEAN = "CLEAN: no P2P finding on this configuration."
HANG = "HANG: batch_isend_irecv runs unbatched on rank 0. Its fix follows."
NO_START = "DOES NOT START: --num-layers 30 is not divisible by the 4 stages. Megatron raises."
MAYBE = "INCONCLUSIVE: the group of the send is not known."


def test_does_not_start_reads_the_headline():
    assert does_not_start({"headline": NO_START})
    assert not does_not_start({"headline": HANG}) and not does_not_start({})


def test_cases_that_agree_decide_and_the_words_name_every_value():
    agreed = basis((1, "clean", CLEAN), (2, "clean", CLEAN), (4, "clean", CLEAN))
    assert settled(agreed) == "clean" and not disagree(agreed)
    words = holds_words(agreed)
    assert words.startswith("Holds for any pipeline_model_parallel_size (none known: judged at 1, 2 and 4: ")
    assert WHY in words and words.endswith("--set pipeline_model_parallel_size=N gives the run's)")
    assert "does not start" not in words


def test_a_case_that_does_not_start_decides_nothing_for_the_others():
    partly = basis((1, "clean", CLEAN), (2, "clean", CLEAN), (4, "findings", NO_START))
    assert settled(partly) == "clean" and not disagree(partly)
    assert "; at 4 the run does not start;" in holds_words(partly)
    # No case starts: it does not start whatever the value (a finding).
    assert settled(basis((1, "findings", NO_START), (2, "findings", NO_START))) == "findings"


def test_values_that_disagree_stay_undecided_and_name_the_set():
    split = basis((1, "clean", CLEAN), (2, "findings", HANG), (4, "findings", NO_START))
    assert settled(split) is None and disagree(split)
    what, decide = differ_words(split)
    assert what.startswith("pipeline_model_parallel_size is not known statically (PP=$1: the script's first "
                           "argument) and its values disagree: pipeline_model_parallel_size=1 reads ")
    assert "; pipeline_model_parallel_size=2 reads HANG: batch_isend_irecv runs unbatched on rank 0" in what
    assert "Its fix follows" not in what  # each value's headline quoted by its first sentence
    assert "=4 reads" not in what  # a case that does not start is not quoted
    assert decide == "--set pipeline_model_parallel_size=N (the run's pipeline_model_parallel_size)"


def test_an_undecided_case_neither_settles_nor_disagrees():
    unsure = basis((1, "clean", CLEAN), (2, "inconclusive", MAYBE))
    assert settled(unsure) is None and not disagree(unsure)
