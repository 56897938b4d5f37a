"""Writing a command's output to stdout or `-o FILE`, whole or not at all."""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from auditor import reads
from auditor.errors import InputError
from auditor.terminal import visible

if TYPE_CHECKING:
    import argparse

    from auditor.analysis.verdict import RunVerdict
    from auditor.config.model import LaunchConfig
    from auditor.report import formats

TEMP_PREFIX = ".p2paudit-"  # the output's temporary file, beside it until renamed


def emit(text: str, path: str | None) -> None:
    """`text` to stdout, or to `path` as the shell's `>` would put it there, whole or not at all:
    an existing device, FIFO or /dev/stdout is written through (never replaced by a regular
    file), also through a symbolic link to one; only a regular file is replaced, atomically,
    keeping its mode. Refused: a path that is one of the command's inputs, and a symbolic link
    to a file or to nothing (its target is a file the user may not know they are naming: never
    written over). Control characters from the inputs are shown as escapes, never obeyed
    (terminal.visible)."""
    text = visible(text)
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(path, f"cannot write the output: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory; -o names the file to write")
    if st is not None and not stat.S_ISREG(st.st_mode) or _special(path):
        _write_through(text, path)
        return
    refuse_input(path)
    refuse_link(path)
    replace_file(text, os.path.realpath(path), path, st)  # realpath: a folder on the way may be a link


def refuse_input(path: str) -> None:
    """The one check that an output path is none of the command's inputs: a file it read (writing
    there would destroy it) or one the run it judges names (dynamic.runinputs), or a path where a folder it read by listing would pick it up (a
    rank-N.jsonl in a trace folder: the file would join the input the next run reads, a report
    taken for a rank)."""
    seen = reads.input_named(path)
    if seen is not None:
        alias = "" if seen == os.path.abspath(path) else f" (the same file as {seen})"
        how = f", {reads.why(seen)}" if reads.why(seen) else ""
        raise InputError(path, f"is an input of this command{alias}{how}: writing the output "
                               "there would destroy it; give -o another file")
    held = reads.folder_holding(path)
    if held is not None:
        folder, deep = held
        where = (f"is inside {folder}, a folder this command reads with every folder below it"
                 if deep else f"is in {folder}, whose files named so this command reads")
        raise InputError(path, f"{where}: a file written there joins the input the next run "
                               "reads; give -o a path outside it")


def refuse_link(path: str) -> None:
    """A symbolic link to a file or to nothing is refused: writing its target would write over a
    file the user did not name (a link to a device or FIFO is written through by `emit`)."""
    if os.path.islink(path) and (os.path.isfile(path) or not os.path.exists(path)):
        raise InputError(path, f"is a symbolic link to {os.path.realpath(path)}: -o never writes "
                               "over a link's target; give that file itself or another name")


def _special(path: str) -> bool:
    """A path in /dev or /proc (/dev/stdout, /proc/self/fd/1): the file behind it is the shell's
    open descriptor (perhaps appending), never a file to replace."""
    given = os.path.abspath(path)
    return any(p.startswith(("/dev/", "/proc/")) for p in (given, os.path.realpath(given)))


DESCRIPTOR = re.compile(r"/dev/(?:(?P<std>stdout|stderr)|fd/(?P<fd>\d+))|/proc/self/fd/(?P<proc>\d+)")


def _write_through(text: str, path: str) -> None:
    """To a device or FIFO, opened as `>` opens it; to a descriptor named by path (/dev/stdout,
    /dev/fd/N, /proc/self/fd/N) through the descriptor itself: reopening it would truncate the
    file a `>> log` appends to."""
    named = DESCRIPTOR.fullmatch(path)
    try:
        if named is None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return
        fd = {"stdout": 1, "stderr": 2}.get(named["std"] or "") or int(named["fd"] or named["proc"])
        stream = {1: sys.stdout, 2: sys.stderr}.get(fd)
        if stream is not None:
            stream.write(text)
            stream.flush()
            return
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise InputError(path, f"cannot write the output: {exc.strerror or exc}") from None


def replace_file(text: str, target: str, given: str, st: os.stat_result | None) -> None:
    """Write a temporary file beside `target` and rename it over `target` once whole: a failed
    or interrupted write (a full filesystem, Ctrl-C) leaves `target` as it was and no temporary
    file behind."""
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise InputError(given, "the output's directory does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=TEMP_PREFIX)
    except OSError as exc:
        raise InputError(given, f"cannot write the output: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if st is None:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        else:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))  # as `>` leaves an existing file's mode
        os.replace(tmp, target)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(given, f"cannot write the output: {exc.strerror or exc}; nothing "
                                    f"written, {'the file left as it was' if st else 'no file made'}"
                             ) from None
        raise


HTML_ON_TERMINAL = "report.html"
COMMANDS = {"run": "report"}  # a kind written by a command of another name


def destination(path: str | None, for_terminal: bool) -> str | None:
    """Where to write: `path` as given; but a format not for a terminal (HTML) asked for on one
    goes to report.html (a thousand lines of markup help nobody there). Piped output is left as
    it is."""
    if path is None and not for_terminal and sys.stdout.isatty():
        return HTML_ON_TERMINAL
    return path


def emit_report(doc: dict[str, Any], kind: str, fmt: str, path: str | None,
                context: formats.Context | None = None) -> None:
    """`doc` rendered by the `fmt` reporter, emitted to `destination(path, ...)`, saying where
    the file went when it chose one. The renderers are imported here: `emit` alone (doctor and
    repro, once per rank) need not load them (~0.1 s)."""
    from auditor.report import formats

    reporter = formats.reporter(fmt)
    text = reporter.render(doc, kind, context or formats.Context())
    target = destination(path, reporter.for_terminal)
    emit(text, target)
    if target is not None and target != path:
        print(f"p2paudit {COMMANDS.get(kind, kind)}: wrote {os.path.abspath(target)} (HTML is not for a terminal; "
              f"-o - prints it)", file=sys.stderr)


def emit_unscanned(args: argparse.Namespace, result: RunVerdict,
                   launch: LaunchConfig | None = None) -> int:
    """A run decided without a scan (scan, gate): its headline as text, else the document in the
    format asked (JSON whole; SARIF with no result, the verdict in its properties; HTML); the exit
    code is the verdict's."""
    from auditor import jsonio
    from auditor.report import text
    from auditor.report.formats import Context
    from auditor.scan import unscanned_document

    doc = unscanned_document(args.config, result, launch)
    if args.format == "json":
        emit(jsonio.dumps(doc, indent=2) + "\n", args.output)
    elif args.format == "text":
        emit(text.fit(f"p2paudit {args.command} {args.config}\n\n{result.headline}\n",
                      Context().width), args.output)
    else:  # the scan document's reporters read an unscanned one as a run with no site
        emit_report(doc, "scan", args.format, args.output)
    return result.exit_code
