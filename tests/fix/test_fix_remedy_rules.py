"""The remedies are rules data (`remedy` of a [[check]] or [[env_var]]), checked by the schema,
and say what the check's `fix` prose says: one wording."""

from __future__ import annotations

import copy

import pytest

from auditor import rulebook
from auditor.fix.remedies import options_for
from auditor.rulebook.files import names
from auditor.rulebook.schema import problem


def _with_remedy():
    for framework in names():
        data = rulebook.load(framework).data
        for table in ("check", "env_var"):
            for entry in data.get(table, []):
                if "remedy" in entry:
                    yield framework, table, entry


def test_the_shipped_rules_have_remedies_for_the_glm_findings():
    ids = {e.get("id") or e["name"] for _, _, e in _with_remedy()}
    assert {"torch.detail-unbatches", "swift.timeout-never-ends", "NCCL_TIMEOUT"} <= ids


@pytest.mark.parametrize("framework,table,entry", list(_with_remedy()),
                         ids=lambda v: v.get("id", v.get("name")) if isinstance(v, dict) else str(v))
def test_a_check_s_fix_prose_names_each_option(framework, table, entry):
    for option in entry["remedy"]:
        if table == "check":
            words = entry["fix"].replace("=", " ")
            assert option["name"].lstrip("-") in words, (option, entry["fix"])
            if option.get("value"):
                assert option["value"].replace(" ", "") in entry["fix"].replace(" ", ""), \
                    (option, entry["fix"])
        else:
            assert option["name"] == entry["name"]


BASE = {"framework": {"name": "x"}, "check": [{
    "id": "x.c", "stage": "s", "when": "a", "kind": "k", "severity": "error", "message": "m",
    "fix": "remove A", "remedy": [{"option": "rm", "edit": "unset_env", "name": "A", "default": True}]}]}


def _bad(**change):
    data = copy.deepcopy(BASE)
    data["check"][0]["remedy"][0].update(change)
    return problem(data)


def test_the_schema_refuses_a_bad_remedy():
    assert problem(BASE) is None
    assert "exactly one option default" in _bad(default=False)
    assert "is not one of" in _bad(edit="delete_line")
    assert "takes no value" in _bad(value="1")
    assert "unknown key" in _bad(valu="1")
    two = copy.deepcopy(BASE)
    two["check"][0]["remedy"].append({"option": "rm", "edit": "set_env", "name": "A", "value": "1"})
    assert "repeated" in problem(two)


def test_a_deprecated_variable_without_a_remedy_is_renamed_to_its_replacement():
    finding = {"kind": "env-deprecated", "detail": {"variable": "NCCL_ASYNC_ERROR_HANDLING"}}
    [option] = options_for(finding)
    assert (option.edit, option.value, option.default) == \
        ("rename_env", "TORCH_NCCL_ASYNC_ERROR_HANDLING", True)
    check = {"kind": "batch-runs-unbatched", "detail": {"rule": "torch.detail-unbatches"}}
    assert [o.option for o in options_for(check)] == ["remove-detail", "info", "torch-2.11"]
