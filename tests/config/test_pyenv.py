"""The entry script's Python settings (auditor.config.pyenv) read once per scan: a scan without
a stated release reads the launch once per release it judges on (scan._scan_releases), and each
read took the entry script's settings and its init_process_group calls from two parses."""

from __future__ import annotations

import ast

from tests.fix.test_pyenv_scan import RUN, TRAINER

from auditor.config.launch import parse_launch
from auditor.config.pyenv import read_entry


def test_the_entry_script_is_parsed_once_for_every_read_of_the_launch(tmp_path, monkeypatch):
    trainer = TRAINER + f"# {tmp_path}\n"  # a text no earlier test parsed
    (tmp_path / "pretrain_gpt.py").write_text(trainer)
    parsed = []
    real = ast.parse

    def counted(source, *args, **kwargs):
        parsed.append(source == trainer)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    launches = [parse_launch(RUN.format(export="", script="pretrain_gpt.py"), str(tmp_path / "run.sh"))
                for _ in range(2)]  # two releases judged: the launch read twice
    for launch in launches:
        read_entry(launch)
        assert launch.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"
    assert parsed.count(True) == 1

    # Edited between two scans in one process (a test, a notebook): the new text is read.
    (tmp_path / "pretrain_gpt.py").write_text(trainer.replace('= "DETAIL"', '= "INFO"'))
    launch = parse_launch(RUN.format(export="", script="pretrain_gpt.py"), str(tmp_path / "run.sh"))
    read_entry(launch)
    assert launch.env["TORCH_DISTRIBUTED_DEBUG"].value == "INFO"
    assert parsed.count(True) == 1
