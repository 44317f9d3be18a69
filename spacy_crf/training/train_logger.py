"""``spacy-crf.ConsoleLogger.v1``: spaCy's console logger (``spacy.ConsoleLogger.v3``,
same settings and output) that says when ``model-best`` is a barely trained model.

``spacy train`` evaluates dev every ``[training] eval_frequency`` steps, the
first time at step 0, after the first batch. On a corpus of fewer steps than
``eval_frequency`` (the shipped configs' 500 on the shipped sample's ~110),
step 0 is the only evaluation: ``model-best`` is the model after one update
(POS 62.96 on the sample, against 91.39 for ``model-last``) and nothing says
so. This logger counts the steps and, at the end, warns (W010 on stderr) when
every evaluation came before the second update.
"""

from typing import IO, Any, Callable, Dict, List, Optional, Tuple, Union
from pathlib import Path

from spacy.util import registry

from ..errors import Warnings
from ..models.hooks import learns_from_counts

LogStep = Callable[[Optional[Dict[str, Any]]], None]


@registry.loggers("spacy-crf.ConsoleLogger.v1")
def console_logger(progress_bar: Optional[str] = None, console_output: bool = True,
                   output_file: Optional[Union[str, Path]] = None
                   ) -> Callable[[Any, IO, IO], Tuple[LogStep, Callable[[], None]]]:
    """spaCy's ``spacy.ConsoleLogger.v3`` with the W010 check at the end of training.

    Parameters
    ----------
    progress_bar, console_output, output_file
        As for ``spacy.ConsoleLogger.v3``.
    """
    inner = registry.loggers.get("spacy.ConsoleLogger.v3")(
        progress_bar=progress_bar, console_output=console_output, output_file=output_file)

    def setup(nlp: Any, stdout: IO, stderr: IO) -> Tuple[LogStep, Callable[[], None]]:
        log_inner, finalize_inner = inner(nlp, stdout, stderr)
        steps: List[int] = [0]  # log_step is called once per step, with info or None
        evaluated: List[int] = []  # the steps with a dev evaluation

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            steps[0] += 1
            if info is not None:
                evaluated.append(int(info.get("step", 0)))
            log_inner(info)

        def finalize() -> None:
            finalize_inner()
            warning = None if learned_at_initialize(nlp) else untrained_best(evaluated, steps[0])
            if warning:
                stderr.write(warning + "\n")
                stderr.flush()

        return log_step, finalize

    return setup


def learned_at_initialize(nlp: Any) -> bool:
    """Whether every component ``spacy train`` trains learns from counts at
    ``initialize`` (the HMM): no update changes it, so a model-best of step 0
    is the trained model, and W010 would be wrong."""
    trainable = [pipe for _, pipe in nlp.pipeline if getattr(pipe, "is_trainable", False)]
    return bool(trainable) and all(
        learns_from_counts(model) for model in (getattr(pipe, "model", None) for pipe in trainable)
        if model is not None)


def untrained_best(evaluated: List[int], n_steps: int) -> Optional[str]:
    """W010 when every dev evaluation of ``n_steps`` training steps was at step 0
    (after a single update), else None."""
    if not evaluated or max(evaluated) > 0 or n_steps <= 1:
        return None
    return Warnings.W010.format(n=n_steps, suggest=max(1, n_steps // 5))
