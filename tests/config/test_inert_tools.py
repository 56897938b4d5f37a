"""Data-preparation and installer tools that start no training (turn 27, h47-np), and an entry
fetched at run time, which is not read.

- alibaba/Pai-Megatron-Patch at commit a098ca5acbdeaf7172ce0393fa309b39a77506db,
  toolkits/pretrain_data_preprocessing/run_prepare_wudao.sh: `find DIR -name "*.json" -exec cat {}
  + > merged.json` (:17) runs only `cat` (GNU findutils find(1) ACTIONS: `-exec command {} +`), where
  before any `-exec` made it "runs another program"; `split -l $NUM ...` (:31; coreutils split(1),
  whose `--filter=COMMAND` runs a shell command) and `zstd -z F -o F.zst &` (:40) start nothing.
  Before them it `cd`s to the data folder (:9), `wget`s preprocess_wudao2.py from an OSS bucket (:10)
  and runs `python preprocess_wudao2.py` (:12): the file that runs is the one fetched, not the
  checkout's copy beside the script, which main read and judged (a false NOT A PIPELINE RUN).
- THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, build_conda.sh: `yes '' | ...`
  (:8), `micromamba create -n slime ...` (:21), `micromamba activate slime` (:22), `micromamba
  install -n slime ...` (:40-52) create and fill an environment; `micromamba run -n ENV CMD` runs CMD.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.bash.values import Symbolic
from auditor.config.launch import parse_launch
from tests.launch_outcome import not_pipeline, undecided

PREPARE = """#! /bin/bash
set -ex
data_dir=/mnt/mixtral-datasets/wudao_200g
dataset_dir=$(dirname $data_dir)
mkdir -p ${dataset_dir}/wudao
cd ${dataset_dir}/wudao
find ${dataset_dir}/cleaned_wudao_dataset -name "*.json" -exec cat {} + > ${dataset_dir}/wudao/merged.json
NUM=$(sed -n '$=' ${dataset_dir}/wudao/merged.json)
NUM=`expr $NUM / 10`
split_dir=${dataset_dir}/split
mkdir $split_dir
split -l $NUM --numeric-suffixes --additional-suffix=.jsonl ${dataset_dir}/wudao/merged.json $split_dir/
files=$(ls $split_dir/*.jsonl)
for filename in $files
do
   f=$(basename $filename)
   zstd -z $filename -o ${dataset_dir}/cleaned_zst/$f.zst &
done
rm -rf $split_dir
"""

FETCHED = """#! /bin/bash
set -ex
data_dir=/mnt/mixtral-datasets/wudao_200g
dataset_dir=$(dirname $data_dir)
mkdir -p ${dataset_dir}/cleaned_wudao_dataset
cd ${dataset_dir}/cleaned_wudao_dataset
wget https://atp-modelzoo-wlcb-pai.oss-cn-wulanchabu.aliyuncs.com/release/models/pai-megatron-patch/llama2-codes/preprocess_wudao2.py
python preprocess_wudao2.py -i ${data_dir} -o ${dataset_dir}/cleaned_wudao_dataset -k text -p 32
"""

ENVIRONMENT = """#!/bin/bash
set -ex
yes '' | head -n 1
micromamba create -n slime python=3.12 pip -c conda-forge -y
micromamba activate slime
micromamba install -n slime -c conda-forge cudnn -y
pip install cuda-python==12.9
"""


def test_find_exec_of_a_tool_split_and_zstd_start_no_training(tmp_path: Path) -> None:
    what = not_pipeline(PREPARE, tmp_path / "run_prepare_wudao.sh")
    assert "`find`" in what and "`split`" in what and "`zstd`" in what


@pytest.mark.parametrize("payload", [
    "-exec bash -c 'torchrun train.py' \\;",  # a shell's text, read by no walk here
    "-exec {} \\;",  # the files found are the program
    "-execdir ./train.sh {} +",  # a script not read
    "-exec cat {} \\; -exec python train.py {} \\;",  # the second action
    "-exec cat {}",  # no `;` or `+`: find rejects it, the command is not known
])
def test_find_exec_runs_a_command_that_may_train(tmp_path: Path, payload: str) -> None:
    what = not_pipeline(PREPARE, tmp_path / "ok.sh")  # the same script with `-exec cat {} +` starts none
    assert "`find`" in what
    text = PREPARE.replace('-exec cat {} +', payload)
    assert "whose `-exec" in undecided(text, tmp_path / "run.sh")


def test_split_filter_runs_a_shell_command(tmp_path: Path) -> None:
    assert "`split`" in not_pipeline(PREPARE, tmp_path / "ok.sh")
    text = PREPARE.replace("--numeric-suffixes", "--filter='torchrun train.py'")
    assert "`split`, whose `--filter` runs another program" in undecided(text, tmp_path / "run.sh")


def test_an_entry_fetched_at_run_time_is_not_read(tmp_path: Path) -> None:
    """A copy of that name beside the script (as in the checkout) is not the file the run opens."""
    (tmp_path / "preprocess_wudao2.py").write_text("import json\nimport sys\nprint(json.dumps(sys.argv))\n")
    said = undecided(FETCHED, tmp_path / "run_prepare_wudao.sh")
    assert ("line 8 runs `python preprocess_wudao2.py`, whose entry is not read: it may be the file `wget` "
            "fetches at line 7 (https://atp-modelzoo-wlcb-pai.oss-cn-wulanchabu.aliyuncs.com/release/models/"
            "pai-megatron-patch/llama2-codes/preprocess_wudao2.py) at run time, not read here") in said
    # the fetch names only its own file: `python convert.py` beside the script is read
    (tmp_path / "convert.py").write_text("import json\n")
    text = FETCHED.replace("cd ${dataset_dir}/cleaned_wudao_dataset\n", "").replace(
        "python preprocess_wudao2.py", "python convert.py")
    (tmp_path / "run.sh").write_text(text)
    assert parse_launch(text, str(tmp_path / "run.sh")).script == "convert.py"


def test_micromamba_environment_commands_start_no_training(tmp_path: Path) -> None:
    what = not_pipeline(ENVIRONMENT, tmp_path / "build_conda.sh")
    assert "`micromamba create`" in what and "`yes`" in what


def test_micromamba_run_runs_its_command(tmp_path: Path) -> None:
    assert "`micromamba install`" in not_pipeline(ENVIRONMENT, tmp_path / "ok.sh")
    for command in ("micromamba run -n slime python -m mymod", "micromamba shell -n slime"):
        said = undecided(ENVIRONMENT + command + "\n", tmp_path / "run.sh")
        assert "line 8 runs `micromamba`" in said


def test_python_program_text_is_named_as_not_read(tmp_path: Path) -> None:
    """build_conda.sh:150 `python -c "import sglang_router; ..."` and :230 `python - <<'PY'`: text
    given to the interpreter, not an entry file."""
    text = ENVIRONMENT + """python -c "import sglang_router; assert 'slime' in sglang_router.__version__"
python - <<'PY'
import torch
assert torch.__version__ == "2.11.0+cu129"
PY
"""
    said = undecided(text, tmp_path / "build_conda.sh")
    assert "line 8 runs `python`, whose program text given with `-c` is not read here" in said
    assert "line 9 runs `python`, whose program text on its standard input is not read here" in said


@pytest.mark.parametrize("word", [
    '--filter="$CMD"',  # a value not known may be any command (the review's b2/s10.sh, s03.sh)
    "--filter=$(cat cmd.txt)",  # b2/s13.sh
    "--filt='torchrun train.py'",  # getopt_long takes an unambiguous prefix (b2/s12.sh; GNU split 9.1 runs it)
    "--f='gzip > $FILE.gz'",
])
def test_split_filter_unknown_or_abbreviated_runs_a_command(tmp_path: Path, word: str) -> None:
    """coreutils split(1) `--filter=COMMAND` "write to shell COMMAND"; getopt(3) "Long option names
    may be abbreviated if the abbreviation is unique or is an exact match for some defined option"."""
    text = PREPARE.replace("--numeric-suffixes", word)
    assert "`split`, whose `--filter` runs another program" in undecided(text, tmp_path / "run.sh")


@pytest.mark.parametrize(("line", "option"), [
    ('tar -xf data.tar --to-command="$CMD"', "--to-command"),  # GNU tar(1) `--to-command=COMMAND`
    ("tar -xf data.tar --to-comm=$(cat cmd.txt)", "--to-command"),
    ('tar --use-compress-prog="$ZIP" -xf data.tar', "--use-compress-program"),
    ('tar -xf data.tar --checkpoint-act="exec=$CMD"', "--checkpoint-action"),
])
def test_tar_command_options_unknown_or_abbreviated_run_a_command(tmp_path: Path, line: str, option: str) -> None:
    said = undecided(PREPARE + line + "\n", tmp_path / "run.sh")
    assert f"`tar`, whose `{option}` runs another program" in said


def test_tar_checkpoint_is_its_own_option_not_an_abbreviation(tmp_path: Path) -> None:
    """GNU tar(1) `--checkpoint[=N]`: an exact long option, which getopt_long takes before any prefix."""
    assert "starts no training" in not_pipeline(PREPARE + "tar -xf data.tar --checkpoint=1000\n", tmp_path / "r.sh")


@pytest.mark.parametrize("line", [
    'find . -name "*.json" -exec $CMD {} \\;',  # find(1) `-exec command ;`: a program not known
    'rsync -a -e "$RSH" src/ dst/',  # rsync(1) `-e, --rsh=COMMAND`
    "rsync -a --rsh=$(cat rsh.txt) src/ dst/",
    'rsync -a --rsync-path="$REMOTE" src/ dst/',
])
def test_other_command_options_with_a_value_not_known_run_a_command(tmp_path: Path, line: str) -> None:
    said = undecided(PREPARE + line + "\n", tmp_path / "run.sh")
    assert "runs another program" in said or "not known statically" in said


@pytest.mark.parametrize(("line", "word"), [
    ("split $OPTS in.txt out_", "$OPTS"),  # split(1) `--filter=COMMAND`, which $OPTS may hold
    ("split -l 1000 $EXTRA in.txt", "$EXTRA"),
    ("rsync -a $RSYNC_OPTS src/ dst/", "$RSYNC_OPTS"),  # rsync(1) `-e, --rsh=COMMAND`
])
def test_an_unknown_word_where_an_option_may_stand_may_run_a_command(tmp_path: Path, line: str, word: str) -> None:
    """h48-shell (r47-final): getopt_long and popt read an option anywhere before `--`, so an
    unquoted word not known statically may be the option that runs a command."""
    said = undecided(PREPARE + line + "\n", tmp_path / "run.sh")
    assert f"whose word `{word}`, not known statically, may be an option that runs another program" in said


@pytest.mark.parametrize("line", [
    # Alibaba Pai-Megatron-Patch a098ca5acb toolkits/pretrain_data_preprocessing/run_prepare_wudao.sh:31
    "split -l $NUM --numeric-suffixes --additional-suffix=.jsonl ${D}/wudao/merged.json $S/",  # -l's value
    'split "$IN" out_',  # quoted: one word, a file
    "split -- $IN out_",  # after `--`: operands
    'rsync -av "$SRC" "$DST"',
    # popt (RsyncProject/rsync popt/popt.c longOptionStrcmp) takes a long option only whole:
    # `--rsync-pat` is no `--rsync-path`, rsync exits "unknown option" and runs nothing
    'rsync -a --rsync-pat="torchrun train.py" src/ host:dst/',
])
def test_a_word_that_is_no_option_or_an_option_value_leaves_the_program_inert(tmp_path: Path, line: str) -> None:
    assert "starts no training" in not_pipeline(PREPARE + line + "\n", tmp_path / "r.sh")


URL = "https://example.com/x"


@pytest.mark.parametrize("fetch", [
    f"wget -O other_name.py {URL}/prep.py",  # Wget "Invoking": `-O file` names the file written
    f"wget --output-document=other_name.py {URL}/prep.py",
    f"wget -P /tmp/dl {URL}/prep.py",  # `-P prefix`: the remote name under that folder
    f"wget {URL}/prep.py -O /dev/null",  # options after the URL apply too
    f"wget {URL}/prep.py?raw=true",  # the remote name keeps its query: `prep.py?raw=true`
    f"curl {URL}/prep.py",  # curl(1): without -o/-O, standard output
    f"curl -L {URL}/prep.py > /tmp/other.py",
    f"wget -O - {URL}/prep.py",  # `-O -`: standard output
    f"cd sub\nwget {URL}/prep.py\ncd ../other",  # written in another folder than the entry's
    f"wget -qO other_name.py {URL}/prep.py",  # a cluster naming another file
    f"curl -sSL {URL}/prep.py",  # a cluster without -O: standard output
    f"wget -nc -q {URL}/other_name.py",  # wget's own two-letter options name no file
    f"if false; then wget -O prep.py {URL}/prep.py; fi",  # h48-shell: a branch that never runs
    f"wget -O - {URL}/prep.py | tee other_name.py",  # the pipe's file is another one
    f"wget {URL}/{{a,b}}.py",  # brace expansion: a.py and b.py
    # h49-shell: an archive a fetch pipes into `tar` extracts into another folder, or is not extracted
    f"curl -sSL {URL}/code.tar.gz | tar -xz -C /tmp/other",
    f"curl -sSL {URL}/code.tar.gz | tar -xz -C sub",
    f"curl -sSL {URL}/code.tar.gz | tar -tz",  # GNU tar(1) `-t, --list`: writes no file
    f"curl -sSL {URL}/code.tar.gz | tar -xzf other.tgz",  # `-f`: another archive than its input
    f"curl -sSL {URL}/code.tar.gz | tar -xzO cfg.json > cfg.json",  # `-O, --to-stdout`: no file
    f"curl -sSL {URL}/code.tar.gz | tar --extract --to-stdout > cfg.json",
    f"(cd /tmp && curl -sSL {URL}/code.tar.gz | tar -xz)",  # another folder, not comparable with the entry's
])
def test_a_fetch_that_writes_another_file_leaves_the_entry_read(tmp_path: Path, fetch: str) -> None:
    """The review's inputs (r47-np fetch/w04 w06 w08 w09 w10, b2/w21): the entry beside the script is
    not the fetched file, so it is read (the scan then says it builds no pipeline)."""
    (tmp_path / "prep.py").write_text("import torch\nprint(1)\n")
    for folder in ("other", "sub"):
        (tmp_path / folder).mkdir()
    (tmp_path / "other" / "prep.py").write_text("import torch\nprint(1)\n")
    text = f"#!/bin/bash\nset -ex\n{fetch}\npython prep.py\n"
    (tmp_path / "r.sh").write_text(text)
    assert parse_launch(text, str(tmp_path / "r.sh")).script == "prep.py"


@pytest.mark.parametrize(("fetch", "entry"), [
    (f"wget -O prep.py {URL}/other_name.py", "prep.py"),  # fetch/w02: the name -O gives
    (f"wget -Oprep.py {URL}/other_name.py", "prep.py"),
    (f"curl -o prep.py {URL}/other_name.py", "prep.py"),
    (f"curl -O {URL}/prep.py?raw=true", "prep.py"),  # `-O`: the file part, no query
    (f"curl -sL {URL}/other_name.py > prep.py", "prep.py"),  # bash(1) REDIRECTION: stdout to the file
    (f"wget -P sub {URL}/prep.py", "sub/prep.py"),
    (f"cd sub\nwget {URL}/prep.py\ncd ..", "sub/prep.py"),  # relative to the cwd of its own line
    (f'wget -O "$OUT" {URL}/other_name.py', "prep.py"),  # a name not known: possibly the entry
    # getopt clusters short options (r47-final ft/g01-g03, g17): `-qO FILE`, `-Lo FILE`, `-sSLO`
    (f"wget -qO prep.py {URL}/other_name.py", "prep.py"),
    (f"wget -qOprep.py {URL}/other_name.py", "prep.py"),
    (f"curl -Lo prep.py {URL}/other_name.py", "prep.py"),
    (f"curl -sSLO {URL}/prep.py", "prep.py"),
    (f"wget -qO- {URL}/other_name.py > ./prep.py", "prep.py"),
    # the server or a list names the file (ft/g04-g06): not known here
    (f"wget --content-disposition {URL}/get?id=1", "prep.py"),
    (f"curl -OJ {URL}/get?id=1", "prep.py"),
    ("wget -i urls.txt", "prep.py"),
    # h48-shell (r47-final): standard output piped into a file, a `$PWD` path, brace expansion
    (f"wget -O - {URL}/other_name.py | tee prep.py", "prep.py"),  # tee(1) copies its input to FILE
    (f"curl -sL {URL}/other_name.py | gunzip > prep.py", "prep.py"),  # a later part's own `>`
    (f"wget -O $PWD/prep.py {URL}/other_name.py", "prep.py"),  # $PWD: the directory the job starts in
    (f'curl -o "$(pwd)/prep.py" {URL}/other_name.py', "prep.py"),
    (f"wget {URL}/{{a,prep}}.py", "prep.py"),  # bash(1) Brace Expansion: a.py and prep.py
    # h49-shell: GNU tar(1) extracting the fetch on its input may write any file of its folder
    # (`curl -sSL URL | tar -xz -C DIR`: NVIDIA-NeMo/RL@7ea279abfb infra/kind/get-helm.sh:30)
    (f"curl -sSL {URL}/code.tar.gz | tar -xz", "prep.py"),
    (f"curl -sSL {URL}/code.tar.gz | tar xzf -", "sub/prep.py"),  # bundled first word, `-f -`: its input
    (f"curl -sSL {URL}/code.tar.gz | tar -xz -C sub", "sub/prep.py"),
    (f"wget -qO- {URL}/code.tar.gz | tar --extract --gzip --directory=sub", "sub/prep.py"),
    (f'curl -sSL {URL}/code.tar.gz | tar -x -C "$DEST"', "prep.py"),  # a folder not known
])
def test_the_entry_a_fetch_writes_is_not_read(tmp_path: Path, fetch: str, entry: str) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("prep.py", "sub/prep.py"):
        (tmp_path / name).write_text("import torch\nprint(1)\n")
    said = undecided(f"#!/bin/bash\nset -ex\n{fetch}\npython {entry}\n", tmp_path / "r.sh")
    assert f"runs `python {entry}`, whose entry is not read: it may be the file" in said


@pytest.mark.parametrize("fetch", [f"wget -O prep.py {URL}/prep.py", f"wget -O - {URL}/prep.py | tee prep.py",
                                   f"curl -sSL {URL}/code.tar.gz | tar -xz"])
def test_a_launchers_entry_fetched_at_run_time_is_not_read(tmp_path: Path, fetch: str) -> None:
    """Review r48-shell w21, w01: the fetched entry is the launcher's too (`torchrun prep.py`),
    not only a plain `python prep.py`'s: the file here is not surely what the URL serves."""
    (tmp_path / "prep.py").write_text("import torch\nprint(1)\n")
    text = f"#!/bin/bash\nset -ex\n{fetch}\ntorchrun --nproc_per_node 4 prep.py\n"
    (tmp_path / "r.sh").write_text(text)
    script = parse_launch(text, str(tmp_path / "r.sh")).script
    assert isinstance(script, Symbolic) and "prep.py (it may be the file `" in str(script) and "fetches at line 3" in str(script)
