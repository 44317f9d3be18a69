"""``python -m spacy_crf.fit`` / ``spacy crf-fit``: batch training with L-BFGS or OWL-QN.

    python -m spacy_crf.fit CONFIG --output DIR [--c1 0] [--c2 1] [--max-iterations 100]
        [--init-from TRAINED_PIPELINE] [--paths.train ... --training.* --components.* overrides]

The command line of :func:`spacy_crf.training.fit.fit`, which says what the
options do. ``--n-workers N`` evaluates the objective on a local Dask cluster
of N processes, ``--address ADDR`` on a running one.
"""

import sys
from configparser import InterpolationError
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from thinc.api import ConfigValidationError

from ..training.fit import fit
from ..training.optimize import Optimizer
from ._util import (CODE_HELP, Arg, Opt, command, config_overrides, import_code, msg, our_errors,
                    run)

#: what a config that does not validate is told, after spaCy's report of it
CONFIG_HINT = ("Fix or remove the setting named above (a misspelt name, or an override "
               "--section.key of a setting the block does not have); python -m spacy "
               "crf-debug-data CONFIG checks a config and its corpora without training.")


@command("crf-fit", overrides=True)
def fit_cli(
    # fmt: off
    ctx: typer.Context,  # this is only used to read additional arguments
    config_path: Path = Arg(..., help="Path to config file", exists=True, allow_dash=True),
    output_path: Optional[Path] = Opt(None, "--output", "--output-path", "-o", help="Output directory to store model-best and model-last in"),
    code_path: Optional[Path] = Opt(None, "--code", "-c", help=CODE_HELP),
    c1: float = Opt(0.0, "--c1", help="L1 coefficient (OWL-QN if above 0)", min=0),
    c2: float = Opt(1.0, "--c2", help="L2 coefficient", min=0),
    max_iterations: int = Opt(100, "--max-iterations", help="Maximum number of optimizer iterations", min=1),
    period: int = Opt(10, "--period", help="Iterations in the convergence test window", min=1),
    delta: float = Opt(1e-5, "--delta", help="Convergence threshold: the relative improvement over the window", min=0),
    eval_frequency: int = Opt(20, "--eval-frequency", help="Evaluate on dev every N iterations (and at the end)", min=1),
    component: Optional[str] = Opt(None, "--component", help="Name of the crf_tagger to train, if the pipeline has several"),
    threads: Optional[int] = Opt(None, "--threads", help="Threads (and corpus shards) for the objective (default: the CPUs this process may use)", min=1),
    n_workers: Optional[int] = Opt(None, "--n-workers", help="Evaluate the objective on a local Dask cluster of N worker processes", min=1),
    address: Optional[str] = Opt(None, "--address", help="Evaluate the objective on the running Dask cluster at this address (tcp://HOST:8786)"),
    optimizer: Optimizer = Opt("lbfgs", "--optimizer", help="lbfgs: ours (OWL-QN if c1 > 0); scipy: L-BFGS-B (c1 = 0 only)"),
    init_from: Optional[Path] = Opt(None, "--init-from", help="Start from the crf_tagger of this trained pipeline (warm start; labels the corpus adds are added). Its settings (model, structure) replace the config's component settings: a warning names those that differ; a different target is an error", exists=True, file_okay=False),
    # fmt: on
):
    """
    Train a crf_tagger with L-BFGS or OWL-QN. As CRFsuite trains (OWL-QN
    with an L1 penalty, --c1 above 0): the config and corpora are read as spacy train reads them
    (config overrides such as --paths.train included), the training corpus is
    featurized once, and CRFsuite's objective (-log-likelihood + c1 * |w|_1 +
    c2 * |w|^2) is minimised with the full gradient. One line per iteration,
    dev scores every --eval-frequency iterations, and model-best and
    model-last in the output directory, as spacy train writes them. The
    [training] optimizer, batcher and epochs are not used. With --init-from,
    the trained component's settings replace the config's component settings.
    Exit code 2 for a bad input found before training (a config setting that
    does not validate, a dev corpus without the target's annotation, an
    output directory that cannot be written), 1 if training failed.
    """
    import_code(code_path)
    overrides = config_overrides(ctx)
    with our_errors(), _config_errors(config_path):
        fit(config_path, output_path, overrides=overrides, c1=c1, c2=c2,
            max_iterations=max_iterations, period=period, delta=delta,
            eval_frequency=eval_frequency, component=component, n_threads=threads,
            n_workers=n_workers, address=address, optimizer=optimizer, init_from=init_from)


@contextmanager
def _config_errors(config_path: Path) -> Iterator[None]:
    """A config that does not validate (an unknown or misspelt setting, a value of
    the wrong type, a variable that names nothing) as a ✘ line with spaCy's
    report of it and exit code 2: a bad input found before any work, as
    crf-debug-data and a misspelt registry name (spaCy's E893) exit. spaCy's
    show_validation_error, used before, exits 1 for these.

    Parameters
    ----------
    config_path : Path
        The config, named in the message.
    """
    try:
        yield
    except ConfigValidationError as err:
        # spaCy's report as it prints it: one line per bad setting (wasabi would wrap them)
        report = err.from_error(err, title="", show_config=False).text.strip()
        msg.fail(f"Invalid config {config_path}: {err.title}")
        print(f"{report}\n\n{CONFIG_HINT}", file=sys.stderr)
        sys.exit(2)
    except InterpolationError as err:  # ${section.key} that names no setting
        msg.fail(f"Invalid config {config_path}: {err}")
        print(CONFIG_HINT, file=sys.stderr)
        sys.exit(2)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.fit``: :func:`fit_cli`; its exit code."""
    return run(fit_cli, argv, "python -m spacy_crf.fit")

