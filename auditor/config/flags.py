"""The training command's flags as its front end's parser reads them, and Megatron-LM's
spelling checks: a flag its argparse parser (allow_abbrev=False) rejects is an error with the
line, read against the flags of the megatron-core release in use (rules/megatron-lm.toml)."""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from auditor.bash.values import Field, OptionWords, Partial, Scalar, Symbolic, concat, join, segments
from auditor.config.frontend_parser import FrontEnd
from auditor.config.model import Flag, LaunchConfig, UnknownWord
from auditor.findings import Finding
from auditor.rulebook import files
from auditor.rulebook.launchers import Spelling

_NUMBER = re.compile(r"-\.?[0-9]")
# argparse exits on these before the schedule runs: a start-up failure (analysis.causes.is_startup)
STARTUP = {"category": "config"}
# the finding on a flag the front end's parser lacks: an error where that parser surely rejects it
REJECTED_FLAG = "launch.megatron-spelling"


def normalise(spelling: str) -> str:
    """`--pipeline-model-parallel-size` -> `pipeline_model_parallel_size`: one name per flag."""
    return spelling.lstrip("-").replace("-", "_")


def is_option(value: Scalar) -> bool:
    """A flag rather than a value (`-1` and `-.5` are values)."""
    return (isinstance(value, str) and value.startswith("-") and value not in ("-", "--")
            and not _NUMBER.match(value))


_INLINE = re.compile(r"--[A-Za-z][\w.-]*=")


def inline_option(value: Scalar) -> tuple[str, str | Symbolic] | None:
    """A word whose known head is `--NAME=` and whose rest is not known statically
    (`--deepspeed=$DS`, `--deepspeed="$DS"`, `--deepspeed=${DS}`): the flag as written and its
    value, as argparse splits such a word at its first `=`; None for any other word. Read as a
    positional, it set no flag, and an option before it took it as one more value."""
    if not isinstance(value, Partial) or not value.segments or value.segments[0][1]:
        return None
    head = value.segments[0][0]
    if (match := _INLINE.match(head)) is None:
        return None
    rest: list[Scalar] = [head[match.end():], *(Symbolic(t) if unknown else t for t, unknown in value.segments[1:])]
    return match.group()[:-1], concat(rest)


# The script's own arguments as a word: the audit reads the script as `bash SCRIPT` is run, with
# no arguments (scan takes none), so they add nothing; the header says so (launch.script-arguments).
SCRIPT_ARGUMENTS = ("$@", "${@}", "$*", "${*}")


def unresolved(config: LaunchConfig, f: Field, path: str, where: str,
               before: list[str] | None = None) -> UnknownWord | None:
    """A word not known statically where an argument may stand (`${EXTRA}`, `$(cat x)`, `$1`)
    may add arguments: say so, with its line and the flags written before it, which an argument
    it adds would override (argparse: the last wins). Several on one command line are one
    finding. A word of the training command's own arguments (`where` "flags" or "overrides") is
    recorded (`config.unknown_words`, the word returned for its reader to say what is written
    after it): the settings the verdict rests on that it may set are unknown (open_settings).
    The script's own arguments (`"$@"`) add nothing to the script run as written."""
    at = f"{path}:{f.line}"
    if str(f.value) in SCRIPT_ARGUMENTS:
        _script_arguments(config, f, path)
        return None
    settles = where in WORDS_SET and wholly_unknown(f.value, config)
    same = next((d for d in config.diagnostics if d.kind == "launch.unresolved-args"
                 and d.where == at and d.detail.get("adds") == where), None)
    values, before, opened, ways = [str(f.value)], before or [], [], {}
    if same is not None:
        values, before = [*same.detail["values"], str(f.value)], same.detail["before"]
        opened, ways = list(same.detail["open"]), dict(same.detail.get("alternatives", {}))
        config.diagnostics.remove(same)
    if (known := config.branch_values.get(str(f.value))) is not None:
        ways[str(f.value)] = list(known)  # every text it may be: what it may add is seen
    opened += [str(f.value)] if settles else []
    shadows = (f"; written before {'it' if len(values) == 1 else 'them'}, and so overridden by "
               f"whatever {'it adds' if len(values) == 1 else 'they add'}: {listed(before)}"
               if before else "")
    judged = (f"; what {listed(opened)} may set of the settings the verdict rests on is judged at each of "
              "their values (rules' [[setting_cases]])" if opened else "")
    config.diagnostics.append(Finding(
        "launch.unresolved-args", "warning",
        f"{listed(values)} {'is' if len(values) == 1 else 'are'} not known statically and may add {where} "
        f"that this audit cannot see{shadows}{judged}",
        fix=("--set KEY=VALUE gives a setting it sets, or set the variable in the script" if opened
             else "set the variable in the script, or pass its value to the audit"), where=at,
        detail={"values": values, "before": before, "adds": where, "open": opened,
                **({"alternatives": ways} if ways else {})}))
    if not settles:
        return None
    word = UnknownWord(str(f.value), f.line)
    config.unknown_words.append(word)
    return word


def wholly_unknown(value: Scalar, config: LaunchConfig) -> bool:
    """A word that may stand for any argument: unknown throughout, and a command substitution
    (`$(cat x)`) or a variable the script (`config.text`) never assigns (`${EXTRA}`, `$1`),
    or an override whose key is such a word (`${KEY}=fsdp`). A path with known text
    (`$BASE_DIR/data.jsonl`) is an argument; a variable the script assigns where this reading
    cannot tell which branch ran (`if ...; then ARGS+=(...)`) is read as written, with the warning.
    `X=${X:-}` and `X=""` assign no value of the script's own: X stays the caller's; so does a
    value set only where the caller left it empty, or that holds words not known
    (`config.callers_values`: bash.walk `unknown_words`). An option whose name is not known
    (`--$a`, for each of a caller's words) may be any option."""
    pieces = segments(value)
    if not pieces[0][1] and len(pieces) > 1 and pieces[0][0] in ("-", "--"):
        return True
    if not pieces[0][1] or not all(unknown or "=" in text for text, unknown in pieces[1:2]):
        return False
    head = pieces[0][0]
    if head.startswith(("$(", "`")):
        return True
    script = config.text
    m = _NAMED.match(head)
    if m is not None and m.group(1).isdigit():  # `$1`: only `set --` gives the script's arguments
        return re.search(r"\bset\s+--", script) is None
    if m is None:
        return False
    if m.group(1) in config.callers_values:
        return True
    name = re.escape(m.group(1))
    own = re.sub(rf'(?<![\w$]){name}=(?:"?\$\{{{name}:?[-=]\}}"?|""|\'\')?(?![^\s;])', "", script)
    return re.search(
        rf"(?<![\w$]){name}(\[[^\]]*\])?\+?=|\b(read|for|mapfile|readarray)\b[^\n;<]*(?<![\w${{])"
        rf"{name}\b", own) is None  # the name it sets, not one its input expands (`<<< "$X"`)


_NAMED = re.compile(r"\$\{?[#!]?([A-Za-z_]\w*|\d+)")


# What an unknown word adds where it stands among the training command's own arguments (the
# settings of the run), not a launcher's options (torchrun's: the world size, said on its own).
WORDS_SET = ("flags", "overrides")


def _script_arguments(config: LaunchConfig, f: Field, path: str) -> None:
    if any(d.kind == "launch.script-arguments" for d in config.diagnostics):
        return
    name = path.rpartition("/")[2] or path
    config.diagnostics.append(Finding(
        "launch.script-arguments", "info",
        f"`bash {name}`, with no arguments: `{f.value}` (line {f.line}) adds nothing (scan takes no "
        "script arguments)",
        fix="--command 'THE TRAINING LINE WITH THEM' judges a run given arguments", where=f"{path}:{f.line}"))


def open_settings(config: LaunchConfig) -> dict[str, tuple[str, int]]:
    """The settings the verdict rests on (rules' [[setting_cases]] keys) that a word not known
    statically may set: those not written after the last such word (argparse and Hydra: the last
    wins), each with why and the word's line. One rule for every front end."""
    if not config.unknown_words:
        return {}
    last = config.unknown_words[-1]
    stated = {s for key in last.after for s in _settings_of(key)}
    words = listed([w.text for w in config.unknown_words], 3)
    why = (f"{words} (line {last.line}) may set it"
           + (f" ({listed(sorted(last.after), 4)} written after it stand)" if last.after else ""))
    return {key: (why, last.line) for key in _case_keys() if key not in stated}


def _case_keys() -> list[str]:
    """Every [[setting_cases]] key of the rules, in order."""
    keys: list[str] = []
    for name in files.names():
        keys += [e["key"] for e in files.load(name).data.get("setting_cases", []) if e["key"] not in keys]
    return keys


def _settings_of(key: str) -> set[str]:
    """The settings a reader's key states: itself, and each [[arg]] that names it as an alias
    (verl's `actor_rollout_ref.actor.megatron.pipeline_model_parallel_size`)."""
    out = {key, key.rpartition(".")[2]}
    for name in files.names():
        out |= {a["key"] for a in files.load(name).data.get("arg", []) if key in a.get("aliases", [])}
    return out


def listed(spellings: list[str], most: int = 8) -> str:
    """Flag spellings as a message names them: the first `most`, then how many more."""
    shown = ", ".join(f"`{s}`" for s in spellings[:most])
    return shown + (f" and {len(spellings) - most} more" if len(spellings) > most else "")


def surely_positional(value: Scalar) -> bool:
    """A word argparse reads as a positional argument whatever its unknown parts hold: its known
    first characters do not start an option (argparse tells options by a leading `-`), as
    `dir>/output/${MODEL_NAME}/checkpoints` split out of `<some dir>/output/...` (NVIDIA/Megatron-LM
    @d98e8a64dd examples/multimodal/llama_3p1_nemotron_nano_vl_8b_v1/sft_llama_3p1_nemotron_nano_vl_8b_v1.sh
    :31, :163): where it splits further, its first word still starts with that text."""
    head, unknown = segments(value)[0]
    return not unknown and head != "" and not head[0].isspace() and not head.startswith("-")


def _extra_argument(config: LaunchConfig, f: Field, single: str, path: str) -> None:
    config.diagnostics.append(Finding(
        "launch.extra-argument", "error",
        f"`{f.value}` follows `{single}`, which takes one value: Megatron-LM's parser rejects "
        "it as an unrecognized argument", where=f"{path}:{f.line}", detail=dict(STARTUP)))


def _unknown_values(config: LaunchConfig, taken: list[tuple[str, Field, list[str], bool]], path: str) -> None:
    """Flag values not known statically and unquoted: each is that flag's value only if it expands
    to one word; to several, it also sets flags, overriding those written before it. Each comes
    with the flags written before it where its flag is not one the parser's table knows to take a
    value (`--fp16 $MORE_ARGS`, read unchecked): `unread_before`, what such a word may override;
    the words of the others, read as one value each (`one_word`), with what they may override
    were they several (`one_word_before`); `unchecked`: whether any such word is unchecked."""
    if not taken:
        return
    unread = sorted({s for _, _, b, unchecked in taken if unchecked for s in b})
    one = [(f"{written} {f.value}", b) for written, f, b, unchecked in taken if not unchecked]
    detail: dict[str, object] = {"unread_before": unread} if unread else {}
    if one:
        detail |= {"one_word": [w for w, _ in one], "one_word_before": sorted({s for _, b in one for s in b})}
    if any(unchecked for *_, unchecked in taken):
        detail["unchecked"] = True
    last_written, last_field, before, _ = taken[-1]
    values = "; ".join(f"`{written} {f.value}` (line {f.line})" for written, f, _, _ in taken[:6])
    more = f" and {len(taken) - 6} more" if len(taken) > 6 else ""
    shadow = (f"; the last, `{last_written} {last_field.value}`, comes after {listed(before)}, which such "
              "words would override (argparse keeps the last value)") if before else ""
    config.diagnostics.append(Finding(
        "launch.unknown-values", "info",
        f"{len(taken)} flag value(s) are not known statically: {values}{more}; each is read as its flag's "
        f"value, but unquoted it could expand to several words, the rest of them further arguments{shadow}",
        fix="set the variables in the script, or give their values to the audit (environment or --set)",
        where=f"{path}:{taken[0][1].line}", detail=detail))


def read_flags(config: LaunchConfig, args: list[Field], spelling: Spelling, path: str,
               checked: bool) -> None:
    """The training command's arguments into `config.flags` and `config.positionals`, with a
    diagnostic for each the front end's parser would reject or read otherwise than written.
    `checked`: the spellings are Megatron-LM's (`spelling.flags`), checked against its parser
    (config/frontends/megatron_lm.py); otherwise the flags are read as written."""
    single: str | None = None  # the last Megatron-LM flag that took its one value, as written
    written_so_far: list[str] = []  # flags in order, for what an unknown word could override
    unknown_values: list[tuple[str, Field, list[str], bool]] = []
    order: list[str] = []  # every flag's name as written, in order: what stands after a word
    opened: list[tuple[UnknownWord, int]] = []
    k = 0
    while k < len(args):
        f = args[k]
        k += 1
        inline = inline_option(f.value)
        if isinstance(f.value, Symbolic) and inline is None:
            word = unresolved(config, f, path, "flags", written_so_far if f.unsplit else None)
            if word is not None:
                opened.append((word, len(order)))
            for name, (spelled, may_be, maybe) in _branch_flags(config, f.value, spelling, checked).items():
                before = config.flags.get(name)
                config.flags[name] = Flag(name, may_be, f.line, spelled, (may_be,),
                                          maybe and (before is None or before.maybe))
            config.positionals.append(f.value)
            if single is not None and surely_positional(f.value):
                _extra_argument(config, f, single, path)
            single = None
            continue
        if f.value == "--":
            config.positionals.extend(a.value for a in args[k:])
            break
        option = f.value if isinstance(f.value, str) else ""
        if inline is None and not is_option(option):
            config.positionals.append(f.value)
            if single is not None:
                _extra_argument(config, f, single, path)
            single = None
            continue
        inline_value: Scalar
        written, eq, inline_value = (inline[0], "=", inline[1]) if inline is not None else \
            option.partition("=") if option.startswith("--") else (option, "", "")
        entry = spelling.flags.get(written) if checked else None
        if entry is None and checked and spelling.front_end is not None:
            whole = abbreviated(spelling.front_end, written)
            entry = spelling.flags.get(whole[0]) if len(whole) == 1 else None
        if checked:
            _check_megatron_spelling(config, spelling, written, entry, f, path)
        if inline is not None and f.unsplit:  # unquoted, it may split into further arguments
            unknown_values.append((written, replace(f, value=inline[1]), list(written_so_far), entry is None))
        values: list[Scalar] = [inline_value] if eq else []
        takes_value = entry is None or entry["action"] == "store"
        if not eq and takes_value:
            while k < len(args) and not is_option(args[k].value) and not isinstance(args[k].value, OptionWords) \
                    and inline_option(args[k].value) is None:
                if isinstance(args[k].value, Symbolic) and values and (
                        args[k].unsplit or str(args[k].value) in SCRIPT_ARGUMENTS):  # "$@": words
                    break
                values.append(args[k].value)
                if isinstance(args[k].value, Symbolic) and args[k].unsplit:
                    unknown_values.append((str(written), args[k], list(written_so_far), entry is None))
                k += 1
                if entry is not None and "nargs" not in entry:
                    break
        name = entry["dest"] if entry else normalise(written)
        if entry is not None and entry["action"] != "store":
            value: Scalar = entry["action"] == "store_true"
            if eq or (k < len(args) and not is_option(args[k].value) and not isinstance(args[k].value, Symbolic)):
                given = inline_value if eq else args[k].value
                config.diagnostics.append(Finding(
                    "launch.flag-takes-no-value", "error",
                    f"Megatron-LM's `{written}` takes no value: argparse rejects `{given}`"
                    + (" as an explicit argument" if eq else " as an unrecognized argument"),
                    fix=f"write `{written}` alone" + (" (or drop it to keep the default)" if str(given).lower()
                                                       in ("false", "0") else ""),
                    where=f"{path}:{f.line}", detail=dict(STARTUP)))
        elif not values:
            value = True
            if entry is not None:
                config.diagnostics.append(Finding(
                    "launch.flag-needs-value", "error",
                    f"Megatron-LM's `{written}` expects a value and none follows", where=f"{path}:{f.line}",
                    detail=dict(STARTUP)))
        else:
            value = values[0] if len(values) == 1 else join(values)
        previous = config.flags.get(name)
        if previous is not None:
            config.flag_repeats.setdefault(name, []).append(previous)
            same = previous.value == value
            config.diagnostics.append(Finding(
                "launch.repeated-flag", "info" if same else "warning",
                f"`{name}` is given twice (line {previous.line}, then line {f.line}): the last value, "
                f"`{value}`, wins" + ("" if same else f" over `{previous.value}`"),
                fix="keep one", where=f"{path}:{f.line}"))
        config.flags[name] = Flag(name, value, f.line, written, tuple(values))
        order.append(name)
        if written not in written_so_far:
            written_so_far.append(str(written))
        single = (f"{written} {values[0]}" if entry is not None and entry["action"] == "store" and not eq
                  and "nargs" not in entry and values else None)
    for word, at in opened:
        word.after = frozenset(order[at:])
    _unknown_values(config, unknown_values, path)


def _branch_flags(config: LaunchConfig, value: Symbolic, spelling: Spelling,
                  checked: bool) -> dict[str, tuple[str, Scalar, bool]]:
    """The flags a word not known statically may set where what it holds is known: each text the
    branches of an undecided test left it (`config.branch_values`: `if [ "$SIZE" = 70B ]; then
    PP_ARGS="--pipeline-model-parallel-size 4"; else PP_ARGS=""; fi`), or an array's rest of
    options (`OptionWords`: `PP_ARGS=(--pipeline-model-parallel-size 4)` on a branch). By name:
    (its spelling, the value every text gives it, else the word: not known, whether a text does
    not give it: `Flag.maybe`). Before, a flag set on one branch only was read as not given (PP
    1, CLEAN where PP 4 is not)."""
    texts: list[list[Scalar]]
    if isinstance(value, OptionWords):
        texts = [list(value.words), []]  # any of them, or none: each flag's value is not known
    else:
        texts = [list(t.split()) for t in config.branch_values.get(str(value)) or ()]
    given: list[dict[str, tuple[str, Scalar]]] = []
    for words in texts:
        sets: dict[str, tuple[str, Scalar]] = {}
        for k, word in enumerate(words):
            head = segments(word)[0][0]
            if not is_option(head):
                continue
            written, eq, inline = head.partition("=") if head.startswith("--") else (head, "", "")
            entry = spelling.flags.get(written) if checked else None
            after = words[k + 1] if k + 1 < len(words) else None
            taken: Scalar = (word if not isinstance(word, str) else inline) if eq else (
                entry["action"] == "store_true" if entry is not None and entry["action"] != "store"
                else after if after is not None and not is_option(after) else True)
            sets[entry["dest"] if entry else normalise(written)] = (written, taken)
        given.append(sets)
    out: dict[str, tuple[str, Scalar, bool]] = {}
    for name in dict.fromkeys(n for sets in given for n in sets):
        values = {str(sets[name][1]) if name in sets else None for sets in given}
        written, first = next(sets[name] for sets in given if name in sets)
        sure = len(values) == 1 and isinstance(first, (str, bool)) and not isinstance(value, OptionWords)
        out[name] = (written, first if sure else Symbolic(str(value)), any(name not in sets for sets in given))
    return out


def _check_megatron_spelling(config: LaunchConfig, spelling: Spelling, written: str,
                             entry: dict | None, f: Field, path: str) -> None:
    where = f"{path}:{f.line}"
    if spelling.front_end is not None:
        if entry is None:
            dashed = written.replace("_", "-")
            spelt = dashed != written and dashed in spelling.flags
            hint = f"; it spells it `{dashed}`" if spelt else ""
            if written in spelling.no_flags:
                hint += f" ({spelling.no_flags[written]['why']})"
            # A spelling Megatron-LM itself has (in another release) that this release's parser
            # lacks: a training script's own provider does not bring Megatron-LM's flags back.
            own = written in Spelling.load(None).flags or written in spelling.no_flags
            release = (None if spelling.front_end.origin != "release" else
                       f"megatron-core {spelling.version}" if spelling.version else "this front end")
            said = not_in_parser(spelling.front_end, written, where, hint=hint,
                                 sure=own and spelling.front_end.origin == "release",
                                 fix=f"write `{dashed}`" if spelt else None, release=release)
            config.diagnostics.append(said)
            if said.severity != "error" and not spelling.front_end.accepts_unknown:
                _near_miss_unknown(config, spelling.front_end, written, f)
        return
    # No parser read: the rules' tables only, which say what a release was read to accept; the
    # run's own front end may differ (a checkout, a fork), so never an error.
    unread = (" (checked against rules/megatron-lm.toml: the front end's own parser was not read; "
              "audit the script inside its Megatron-LM checkout, or pass --target megatron-core==VERSION: "
              "from 0.17.0 on the release ships its parser)")
    if entry is None and "_" in written and written.replace("_", "-") in spelling.flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "warning",
            f"Megatron-LM spells it `{written.replace('_', '-')}`; its parser (allow_abbrev=False) "
            f"rejects `{written}` as an unrecognized argument" + unread,
            fix=f"write `{written.replace('_', '-')}`", where=where))
    elif entry is None and written in spelling.no_flags:
        missing = spelling.no_flags[written]
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "warning",
            f"Megatron-LM has no `{written}` flag: argparse rejects it ({missing['why']})" + unread,
            fix=f"drop `{written}`", where=where, detail={"dest": missing["dest"]}))
    elif entry is not None and spelling.version is None and spelling.outdated(entry):
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "info",
            f"`{written}` exists only in Megatron-LM versions {entry['versions']}; later releases reject it",
            where=where))
    elif entry is None and spelling.version is not None and written in Spelling.load(None).flags:
        config.diagnostics.append(Finding(
            "launch.megatron-spelling", "warning",
            f"`{written}` does not exist in megatron-core {spelling.version}: argparse rejects it" + unread,
            where=where))


def _near_miss_unknown(config: LaunchConfig, front: FrontEnd, written: str, f: Field | Flag) -> None:
    """A flag a parser not read whole lacks, spelt like one of its flags
    (`--pipeline-model-paralel-size`): the parser rejects it unless the unread code defines it, so
    the setting the writer meant is not its default but unknown (a default would read a PP=2 run
    as PP=1, and clean), unless the script gives that flag too. An abbreviation of several
    flags leaves each of them unknown."""
    near = abbreviated(front, written) or _spelt_like(front, written)
    for meant in near:
        dest = front.flags[meant]["dest"]
        config.flags.setdefault(dest, Flag(dest, Symbolic(f"{written} (not {meant})"), f.line, written))


def abbreviated(front: FrontEnd, written: str) -> list[str]:
    """The long options of `front` that `written` abbreviates where its parser takes prefixes
    (allow_abbrev, argparse's default): one, that option; several, argparse's "ambiguous option"
    (exit 2 on CPython 3.11; 3.12.? on accepts several spellings of one action), taken as not
    known; none where the parser takes none (Megatron-LM's: allow_abbrev=False)."""
    if not front.abbrev or not written.startswith("--") or written in front.flags:
        return []
    return sorted(s for s in front.flags if s.startswith(written))


def _spelt_like(front: FrontEnd, written: str) -> list[str]:
    """The flag of `front` that `written` misspells (`--pipline-model-parallel-size`), if one is
    that close: the setting the writer meant."""
    return difflib.get_close_matches(written, list(front.flags), n=1, cutoff=0.9)


def not_in_parser(front: FrontEnd, written: str, where: str, hint: str = "", sure: bool = False,
                  fix: str | None = None, release: str | None = None) -> Finding:
    """The one judgement of a flag the front end's parser (read: `front`) does not define: an
    error (the run does not start) where that parser is all of the front end's and rejects what
    it lacks, else a warning saying what was not read or why nothing rejects it. `sure`: a
    spelling known not to come from what was not read. The closest spelling is named."""
    near = difflib.get_close_matches(written, list(front.flags), n=1, cutoff=0.6)
    hint = hint or (f"; the closest flag is `{near[0]}`" if near and near[0] != written else "")
    # only a misspelling is fixed by the flag it resembles: `--num_layers` (ms-swift 3.x) is not
    # ms-swift 4.3.0's `--mtp_num_layers`, though that is its closest
    meant = _spelt_like(front, written)
    fix = fix or (f"write `{meant[0]}`" if meant else f"drop `{written}`")
    where_read = release or front.origin
    prefixes = abbreviated(front, written)
    if front.accepts_unknown:
        return Finding(REJECTED_FLAG, "warning",
                       f"`{written}` is not a flag of {front.path}; the script parses with "
                       f"{front.lenient or 'ignore_unknown_args=True'}, so nothing reads it{hint}",
                       fix=fix, where=where)
    if len(prefixes) > 1:
        return Finding(REJECTED_FLAG, "warning",
                       f"`{written}` abbreviates several flags of {front.path} ({listed(prefixes, 4)}): "
                       f"argparse rejects an ambiguous option on some Python versions and not others",
                       fix=f"write the whole flag ({listed(prefixes, 2)})", where=where)
    if not front.complete and not sure:
        # argparse exits 2 on it unless what was not read adds it: whether the run starts is not
        # known, never clean (issue #22 item 6: never an error either); where the training script
        # is not found, the one question is of its parser, asked once (front.script_unread)
        undecided = {} if front.script_unread else {
            "undecided": f"whether the run's parser takes `{written}` (not among the flags read from "
                         f"{front.path}; argparse exits 2 on a flag it lacks)",
            "decide": "the training script's `--help` in the run's environment (every flag its parser takes)"}
        return Finding(REJECTED_FLAG, "warning",
                       f"`{written}` is not among the flags read from {front.path}{hint}; whether it "
                       f"is rejected is not known: {front.why_incomplete}", fix=fix, where=where,
                       detail={"flag": written, **undecided})
    if front.unstated:
        return _unstated(front, written, where, where_read, hint)
    parsed = f": parse_args() at line {front.parsed_at}" if front.parsed_at else ""
    return Finding(REJECTED_FLAG, "error",
                   f"`{written}` does not exist in {where_read}: {front.rejects} (its parser, "
                   f"{front.path}, was read{parsed}){hint}", fix=fix, where=where,
                   detail={**STARTUP, "flag": written, **({"closest": near[0]} if near else {})})


def _unstated(front: FrontEnd, written: str, where: str, where_read: str, hint: str) -> Finding:
    """A flag the release read lacks where the run's release is not stated: an older release
    than the rules cover may define it. Spelt like a flag of the release (a P2P setting it may
    mean), the run is undecided; else a warning. Both name the --target that decides it."""
    decide = f"--target {front.unstated}==VERSION (the release the run uses)"
    message = (f"`{written}` does not exist in {where_read} ({front.path}); the {front.unstated} "
               f"release the run uses is not stated and an older one may define it (where it does "
               f"not, {front.rejects}){hint}")
    near = _spelt_like(front, written)
    detail = {"undecided": f"whether `{written}` is a flag of the {front.unstated} release the run "
                           f"uses (it may mean `{near[0]}`)", "decide": decide} if near else {}
    return Finding(REJECTED_FLAG, "warning", message, fix=decide, where=where,
                   detail={"flag": written, **detail})


def check_front_end(config: LaunchConfig, front: FrontEnd, path: str) -> None:
    """The flags of a command read as written (config/frontends/argparse_flags.py: ms-swift's
    dataclass fields, a Megatron-DeepSpeed script under `deepspeed`), judged against the parser
    read afterwards (`front`) as read_flags judges Megatron-LM's: a flag it lacks by
    not_in_parser, an abbreviation it takes (allow_abbrev) as the flag it stands for. A flag only
    an undecided branch gives (`Flag.maybe`), or one words not known statically could override, is
    not surely given: never an error."""
    expand_abbreviations(config, front)
    for flag in list(config.flags.values()):
        written = flag.spelling
        if not written.startswith("-") or " " in written or written in front.flags \
                or len(abbreviated(front, written)) == 1:
            continue
        where = f"{path}:{flag.line}"
        said = not_in_parser(front, written, where)
        if flag.maybe and said.severity == "error":
            said = replace(said, severity="warning", message=said.message + "; it is given only on a "
                           "branch this reading cannot decide", detail={})
        config.diagnostics.append(said)
        if said.severity != "error" and not front.accepts_unknown:
            _near_miss_unknown(config, front, written, flag)


def expand_abbreviations(config: LaunchConfig, front: FrontEnd) -> None:
    """Each flag written as a unique prefix of a long option of `front` (allow_abbrev) read as
    that option, as argparse reads it, before anything looks a flag up by name: ms-swift's
    `--ignore_args true` is `--ignore_args_error true`. The later of two spellings of one
    setting wins, as on the command line."""
    for name, flag in list(config.flags.items()):
        whole = abbreviated(front, flag.spelling) if " " not in flag.spelling else []
        if len(whole) == 1:
            dest = front.flags[whole[0]]["dest"]
            if dest != name and (dest not in config.flags or config.flags[dest].line <= flag.line):
                del config.flags[name]
                config.flags[dest] = replace(flag, name=dest)
