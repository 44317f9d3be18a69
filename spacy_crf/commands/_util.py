"""What the ``crf-*`` commands share, so that each reads like one of spaCy's own.

Every command is a typer function registered on spaCy's ``app`` (``python -m
spacy crf-NAME``) with :func:`command`, and the module's ``main(argv)`` runs
the same function as ``python -m spacy_crf.NAME`` with :func:`run`: one set of
options, messages and exit codes for both spellings. Failures are wasabi's
``✘`` lines (:data:`msg`, on stderr); usage errors are click's and exit 2, as
spaCy's are. Errors our checks raise before any work is done (``[E...]``
messages that name a bad input) exit 2 as well, and failures of the work 1.
"""

import re
import sys
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import typer
from spacy.cli._util import Arg, Opt, app, import_code, parse_config_overrides, string_to_list
from spacy.language import Language
from typer.main import get_command
from wasabi import Printer

from ..errors import Errors, is_ours

#: the start of a message of spaCy's own, with its code
SPACY_CODE = re.compile(r"\[E\d+\]")

__all__ = ["Arg", "Opt", "app", "import_code", "msg", "command", "group", "run", "our_errors",
           "check_input", "check_output", "config_overrides", "parse_copy", "copy_option",
           "load_model", "CODE_HELP", "COPY_HELP"]

class _Printer(Printer):
    """wasabi's printer with its ``✘`` lines on stderr: they are where these commands
    always put their errors, and stdout keeps only what a command says it did
    (``crf-clusters show`` prints its answers there)."""

    def fail(self, title: Any = "", text: Any = "", show: bool = True, spaced: bool = False,
             exits: Optional[int] = None) -> Any:
        with redirect_stdout(sys.stderr):
            return super().fail(title, text, show=show, spaced=spaced, exits=exits)


msg = _Printer()

#: ``--paths.train X`` and other config overrides reach the command as ``ctx.args``
EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}
#: the help of ``--code`` (spaCy's words)
CODE_HELP = "Path to Python file with additional code (registered functions) to be imported"
#: the help of ``--copy`` (evaluate and plots)
COPY_HELP = ("Comma-separated attributes copied from the corpus onto the inputs, e.g. "
             "HEAD,DEP or TAG, with the corpus's tokens; an empty string copies nothing "
             "(default: those the model's training config copied)")

# the context settings each command was registered with, for its standalone app in run()
_SETTINGS: Dict[Callable, Dict[str, bool]] = {}


def command(name: str, *, overrides: bool = False,
            parent: Optional[typer.Typer] = None) -> Callable[[Callable], Callable]:
    """Register a typer command function as ``name`` on spaCy's app (or on ``parent``).

    Parameters
    ----------
    name : str
        The subcommand, e.g. ``"crf-fit"``.
    overrides : bool
        Whether it takes config overrides (``--paths.train X``) as extra arguments;
        the function then reads them from ``ctx.args``.
    parent : typer.Typer, optional
        A command group (:func:`group`) instead of spaCy's app.

    Returns
    -------
    callable
        A decorator that returns the function unchanged.
    """
    settings = dict(EXTRA_ARGS) if overrides else {}

    def register(function: Callable) -> Callable:
        (parent or app).command(name, context_settings=settings)(function)
        _SETTINGS[function] = settings
        return function

    return register


def group(name: str, help: str) -> typer.Typer:
    """A command group ``spacy NAME SUBCOMMAND`` (as spaCy's ``debug`` and ``init``)."""
    sub = typer.Typer(name=name, help=help, no_args_is_help=True, rich_markup_mode=None,
                      add_completion=False)
    app.add_typer(sub)
    return sub


def run(target: Union[Callable, typer.Typer], argv: Optional[List[str]], prog: str) -> int:
    """Run a command (or group) as ``prog`` with ``argv``; its exit code.

    ``argv`` None reads ``sys.argv[1:]``. Help, usage errors (2) and the
    command's own ``msg.fail(..., exits=N)`` all end in an exit code, which is
    returned rather than raised, so that ``main(argv)`` can be called from Python.
    """
    if isinstance(target, typer.Typer):
        click_command = get_command(target)
    else:
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(context_settings=_SETTINGS.get(target, {}))(target)
        click_command = get_command(single)
    try:
        click_command.main(args=argv, prog_name=prog)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)  # sys.exit("text"): Python's meaning, exit 1
        return 1
    return 0


@contextmanager
def our_errors(exits: Union[int, Dict[type, int]] = 2) -> Iterator[None]:
    """Our errors as a ``✘`` line and an exit code, rather than a traceback.

    Parameters
    ----------
    exits : int or dict
        The exit code of a ValueError or RuntimeError whose message is one of
        ours (``[CRF-E...]``, naming the problem and the fix), or a code for each
        of the two, e.g. ``{ValueError: 2, RuntimeError: 1}``. Any other
        exception is a bug and keeps its traceback.
    """
    codes = exits if isinstance(exits, dict) else {ValueError: exits, RuntimeError: exits}
    try:
        yield
    except (ValueError, RuntimeError) as err:
        code = next((c for kind, c in codes.items() if isinstance(err, kind)), None)
        # ours, or spaCy's own (a config that names no factory, say: [E002])
        if code is None or not (is_ours(str(err)) or SPACY_CODE.match(str(err))):
            raise
        msg.fail(str(err), exits=code)


def check_input(path: Path, name: str = "INPUT") -> None:
    """E236 unless ``path`` is an existing file: a missing path or a folder would
    otherwise reach the command's reader and end in a traceback.

    Parameters
    ----------
    path : Path
        The file the command reads.
    name : str
        Its name on the command line, for the message (``INPUT``, ``--conllu``).
    """
    if not path.exists():
        why = "no such file"
    elif path.is_dir():
        why = "it is a folder, not a file"
    elif not path.is_file():
        why = "it is not a regular file"
    else:
        return
    raise ValueError(Errors.E236.format(name=name, path=path, why=why))


def check_output(path: Path, name: str = "OUTPUT", folder: bool = False) -> None:
    """E237 unless ``path`` can be written: a file (``folder``: a folder) that is
    new or of that kind already, under folders that are folders or missing (the
    command creates those), so that nothing is written before the check fails.

    Parameters
    ----------
    path : Path
        The file (or folder) the command writes.
    name : str
        Its name on the command line, for the message (``OUTPUT``, ``OUTPUT_DIR``).
    folder : bool
        Whether the command writes a folder of files there.
    """
    expected = "a folder, new or existing" if folder else "a file name, new or existing"
    blocking = next((parent for parent in path.parents
                     if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        why = f"'{blocking}' is a file, not a folder"
    elif folder and path.exists() and not path.is_dir():
        why = "it is a file, not a folder"
    elif not folder and path.is_dir():
        why = "it is a folder, not a file"
    else:
        return
    raise ValueError(Errors.E237.format(name=name, path=path, why=why, expected=expected))


def config_overrides(ctx: typer.Context) -> Dict[str, Any]:
    """The config overrides (``--paths.train X``, ``--training.seed=1``) among a command's
    extra arguments; a usage error (exit 2) for any other argument, which spaCy's
    parser would take for a bad override and answer with exit 1."""
    bad = not_overrides(ctx.args)
    if bad:
        # typer's BadParameter: its click is typer's own copy, whose errors are the ones
        # it catches and prints as usage errors
        raise typer.BadParameter(f"{' '.join(bad)} (config overrides are --section.key VALUE)",
                                 ctx, param_hint="extra arguments")
    return parse_config_overrides(list(ctx.args))


def not_overrides(args: Sequence[str]) -> List[str]:
    """The arguments that are neither ``--section.key[=VALUE]`` nor its value."""
    bad, expect_value = [], False
    for arg in args:
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            if "." not in name or not name.strip("."):
                bad.append(arg)
            expect_value = "=" not in arg
        elif expect_value:
            expect_value = False
        else:
            bad.append(arg)
    return bad


def parse_copy(value: Optional[str]) -> Optional[List[str]]:
    """``--copy HEAD,DEP`` as a list (``--copy ""`` as none); None where not given.
    Names are upper-cased: spaCy's attribute names are, and ``head,dep`` means them."""
    return None if value is None else [name.upper() for name in string_to_list(value)]


def copy_option(nlp: Language, value: Optional[str]) -> List[str]:
    """The attributes ``--copy`` names, or where it is not given those the model's
    training config copied (:func:`spacy_crf.evaluation.attrs_to_copy`, said in an
    info line): crf-evaluate's and crf-plots' default alike."""
    from ..evaluation import attrs_to_copy

    attrs = attrs_to_copy(nlp, parse_copy(value))
    if value is None:
        msg.info(f"Copying {attrs or 'nothing'} from the corpus, as the model's training config "
                 f"did (--copy overrides)")
    elif attrs:
        # a copy comes with the corpus's tokens (spacy-crf.copy_attrs.v1): every
        # component then reads those, not the tokenizer's, and scores move
        msg.info(f"Copying {attrs} from the corpus (--copy), with its tokens: every "
                 f"component reads the corpus's tokens, not the tokenizer's")
    return attrs


def load_model(model: str) -> Language:
    """``spacy.load(model)``; a path or name that holds no pipeline (spaCy's E050, or
    E053 for a directory without config.cfg: OSErrors) is E248, a usage error that
    :func:`our_errors` prints."""
    import spacy

    try:
        return spacy.load(model)
    except OSError as err:
        if not SPACY_CODE.match(str(err)):
            raise
        # spaCy's message ends with a full stop, E248 goes on after it
        raise ValueError(Errors.E248.format(model=model, why=str(err).rstrip("."))) from None
