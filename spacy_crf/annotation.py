"""Annotate a corpus of document shards with a trained pipeline, on a Dask cluster.

:func:`annotate` is the driver behind ``python -m spacy_crf.annotate MODEL INPUT
OUTPUT`` (``spacy crf-annotate``, :mod:`spacy_crf.commands.annotate`); each
worker runs :func:`annotate_shard` on one shard at a time.

INPUT is a directory of shards, ``.jsonl`` or ``.parquet`` files (the suffix in
any case) with one row per document holding ``id`` (a string, or an integer
of 64 bits) and ``text``. Only the files directly in INPUT are read: subfolders,
compressed shards and other files are left out with a warning naming them
(W047); hidden files (``.name``) are skipped. OUTPUT gets one file per input
shard, with the same name (so the same stem and format), whose rows are::

    {"id": ..., "tokens": [{"text", "label", "confidence"}, ...],
     "spans": [{"start", "end", "label", "confidence"}, ...]}   # span targets

``label`` is the crf_tagger's label of each token (``B-PER``, ``NOUN``...),
``spans`` its entities or spans in token offsets (``end`` exclusive), and
``confidence`` the CRF's marginal probability of the token's label or of the
span. Both are null where the structure computes no span probabilities for
a span target (a chain with input-dependent transitions, ``transition_templates``:
E096); every other structure that labels spans gives them, ``order = 2`` and
the semi-Markov CRF included.

One shard is one task. Each worker process loads the pipeline once and keeps
it. A shard's output is written to a temporary file and renamed, so OUTPUT
never holds part of a shard: a killed run started again skips the finished
shards and redoes the rest, a lost worker's shards are retried on the others,
and a run over finished output does nothing and changes nothing. Just before
the rename the worker records the file (its size and modification time, which
the rename keeps, and the pipeline) in ``OUTPUT/.done``: a shard is finished
when its output is the file recorded there. A file named like a shard that
annotate has no record of (a copy of the inputs, a stale file) is never taken
for finished output: the run stops with E254 before annotating anything.

Bad rows (not valid UTF-8, not a JSON object, no ``id``, an integer ``id``
outside 64 bits, an ``id`` of a valid row before it in the shard, a missing or
non-string ``text``, a ``text`` or ``id`` with a lone surrogate such as the
JSON escape ``\\ud800``, a ``text`` longer than the pipeline's
``nlp.max_length``, a text the pipeline fails on) are left
out of the output and listed in ``OUTPUT/_errors.jsonl`` with their shard,
1-based line and reason; the shard's good rows are written, the run goes on
and exits with status 1. A shard that fails as a whole (unreadable) is listed
there too, with no line, and has no output, so the next run retries it. An
input shard may not be named ``_errors.jsonl`` (E140).

Ctrl-C stops the run with "N of M shard(s) done; run the same command again
to resume" and exit status 130; the workers ignore the interrupt and are shut
down by the driver. The driver records the Ctrl-C and stops at its next safe
point (it looks every 0.1 s while it waits for shards), because a
KeyboardInterrupt raised wherever the signal lands can be lost: inside a
callback whose exceptions Python only prints (distributed's garbage-collection
callback, say), the run would go on. A second Ctrl-C raises at once.

OUTPUT remembers the pipeline that wrote each shard: a run with another
pipeline stops (E102) rather than mix the two, unless ``--overwrite`` is
given, which annotates every shard again. Exit status: 0 all good, 1 bad rows
or failed shards, 2 a usage, input, output or model error (nothing annotated),
130 interrupted.
"""

import hashlib
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import srsly

from . import token_values
from .pipeline.extensions import CONFIDENCE, SPAN_CONFIDENCE, stem
from .errors import Errors, Warnings, warn
from .shard_io import (list_shards, name_list, not_unicode, output_schema, parquet_id_type,
                       read_rows, remove_stale_temp_files, shard_format, unread_entries,
                       write_rows)
from .util import make_writable_dir

ERRORS_FILE = "_errors.jsonl"
#: per-shard records of the output files annotate wrote, and with which pipeline:
#: a shard is finished when its output is the file recorded (else E254, or E102)
DONE_DIR = ".done"
#: per-shard lists of bad rows, kept beside the output until merged into ERRORS_FILE
ERRORS_DIR = ".errors"
#: the integer ids the output holds: JSON lines (srsly) and Parquet (int64, uint64)
ID_RANGE = (-2 ** 63, 2 ** 64 - 1)

# pipelines loaded in this process: each worker loads its pipeline once and keeps it
_PIPELINES: Dict[Tuple[str, Optional[str]], Tuple[Optional[str], Any, Any]] = {}
#: the pipelines a worker keeps loaded: a cluster that outlives runs (--address)
#: loads each model it is given, a few hundred MB each
MAX_PIPELINES = 2
#: seconds between two looks at a recorded Ctrl-C while the driver waits for shards
_TICK = 0.1


@dataclass
class AnnotateReport:
    """What a run did: counts over the shards it annotated (not those it skipped).

    Attributes
    ----------
    shards, skipped : int
        Shards annotated in this run, and shards already finished before it.
    documents, tokens : int
        Documents and tokens written in this run.
    bad_rows : int
        Rows listed in ``_errors.jsonl`` (every finished shard's, this run's or not).
    failed_shards : list of str
        Shards that failed as a whole in this run (no output; retried next run).
    seconds, startup_seconds : float
        Wall time of the whole run, and of starting the cluster and loading the
        pipeline on every worker.
    worker_memory_mb : dict
        Resident memory of each worker at the end.
    worker_peak_memory_mb : dict
        Peak resident memory of each worker process over its life (the run's
        high-water mark, not what is left at the end).
    """

    shards: int = 0
    skipped: int = 0
    documents: int = 0
    tokens: int = 0
    bad_rows: int = 0
    failed_shards: List[str] = field(default_factory=list)
    seconds: float = 0.0
    startup_seconds: float = 0.0
    worker_memory_mb: Dict[str, float] = field(default_factory=dict)
    worker_peak_memory_mb: Dict[str, float] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        return not self.bad_rows and not self.failed_shards


def annotate(model: Path, input_dir: Path, output_dir: Path, *, n_workers: int = 2,
             address: Optional[str] = None, batch_size: int = 256,
             component: Optional[str] = None, overwrite: bool = False,
             log: Optional[IO] = None,
             client: Any = None, on_shard_done: Optional[Callable[[str], None]] = None
             ) -> AnnotateReport:
    """Annotate every unfinished shard of ``input_dir`` into ``output_dir``.

    Parameters
    ----------
    model : Path
        A pipeline directory with a crf_tagger (``nlp.to_disk``, ``spacy train``).
    input_dir, output_dir : Path
        The shards to read, and where their annotated copies go.
    n_workers : int
        Processes of the local cluster (without ``address`` or ``client``).
    address : str, optional
        A running Dask scheduler to use instead of a local cluster.
    batch_size : int
        Documents per ``nlp.pipe`` batch on the workers.
    component : str, optional
        The crf_tagger whose labels are written (default: the last one).
    overwrite : bool
        Delete the shards of an earlier run first and annotate everything again
        (needed when they were annotated with another pipeline).
    log : file, optional
        Where progress and the summary go (default ``sys.stderr``).
    client : distributed.Client, optional
        A client to use as it is (the caller closes it).
    on_shard_done : callable, optional
        Called with each shard's name as it finishes (tests lose a worker here).

    Returns
    -------
    AnnotateReport

    Raises
    ------
    ValueError
        A usage error (E097-E099, E101, E102, E140, E141, E254): nothing annotated.
    KeyboardInterrupt
        On Ctrl-C, after saying how many shards are done (finished shards are
        kept): at the driver's next safe point (:func:`interrupts_recorded`), or
        at once on a second Ctrl-C.
    """
    begin = time.perf_counter()
    log = log or sys.stderr
    model, input_dir, output_dir = Path(model), Path(input_dir), Path(output_dir)
    shards = list_shards(input_dir)
    _check_dirs(model, input_dir, output_dir)
    _check_shard_names(input_dir, shards)
    _warn_unread(input_dir)
    run = _run_record(model, component)
    _prepare_output(output_dir, run, shards, overwrite)
    todo = [s for s in shards if not _is_done(output_dir / s.name, run)]
    report = AnnotateReport(skipped=len(shards) - len(todo))
    failures: List[Dict[str, Any]] = []
    try:
        with interrupts_recorded() as interrupts:
            if todo and client is not None:
                _run(client, model, component, run, todo, output_dir, batch_size, report,
                     failures, log, on_shard_done, begin, interrupts)
            elif todo:
                from .dask_client import dask_client

                with dask_client(n_workers=n_workers, address=address) as own:
                    interrupts.check()  # (starting the cluster takes seconds)
                    _run(own, model, component, run, todo, output_dir, batch_size, report,
                         failures, log, on_shard_done, begin, interrupts)
    except KeyboardInterrupt:
        n_done = sum(_is_done(output_dir / s.name, run) for s in shards)
        _say(log, f"Interrupted: {n_done} of {len(shards)} shard(s) done. Run the same "
                  "command again to resume: finished shards are kept and skipped.")
        raise
    report.bad_rows = _merge_errors(output_dir, shards, failures, run)
    report.seconds = time.perf_counter() - begin
    _say(log, _summary(report, len(shards)))
    return report


def annotate_shard(model: str, component: Optional[str], shard: str, output: str,
                   batch_size: int, run: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Annotate one shard (runs on a worker): write its output, its bad rows and
    the record of its output in ``DONE_DIR``.

    ``run`` is the driver's :func:`_run_record` of the pipeline, kept in the
    record. Returns the shard's counts: ``documents``, ``tokens``, ``bad_rows``,
    ``seconds``.
    """
    begin = time.perf_counter()
    nlp, pipe = _pipeline(model, component, (run or {}).get("fingerprint"))
    shard_path, output_path = Path(shard), Path(output)
    rows, bad = _valid_rows(shard_path, nlp.max_length)
    records, failed, n_tokens = _annotate_rows(nlp, pipe, rows, batch_size, shard_path.name)
    if failed:
        bad = sorted(bad + failed, key=lambda row: row["line"])
    errors_path = output_path.parent / ERRORS_DIR / (output_path.name + ".jsonl")
    if bad:
        write_rows(errors_path, bad)
    elif errors_path.exists():
        errors_path.unlink()
    schema = (output_schema(pipe.target.is_span_target, parquet_id_type(shard_path),
                            pipe.target.record_fields)
              if shard_format(shard_path) == "parquet" else None)
    # the rename of the output is what marks the shard finished: its errors and its
    # record first (a record whose file is missing or other marks nothing)
    write_rows(output_path, records, schema,
               before_rename=_recorder(output_path, run or {"model": model, "fingerprint": None}))
    return {"shard": shard_path.name, "documents": len(records), "tokens": n_tokens,
            "bad_rows": len(bad), "seconds": time.perf_counter() - begin}


def _annotate_rows(nlp: Any, pipe: Any, rows: List[Tuple[int, Any, str]], batch_size: int,
                   shard: str) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], int]:
    """The output records of ``rows`` (``(line, id, text)``), the error rows of the
    texts the pipeline failed on, and the number of tokens written.

    Each batch goes through ``nlp.pipe``; a batch that raises is redone one
    text at a time, so one text the pipeline cannot handle costs that row
    alone, not the shard.
    """
    records: List[Dict[str, Any]] = []
    failed: List[Dict[str, Any]] = []
    n_tokens = 0
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        try:
            docs = list(nlp.pipe([text for _, _, text in batch], batch_size=batch_size))
        except Exception:  # noqa: BLE001 -- find the row(s) at fault below
            docs = [_doc_or_error(nlp, text) for _, _, text in batch]
        for (line, doc_id, _), doc in zip(batch, docs):
            if isinstance(doc, Exception):
                failed.append({"shard": shard, "line": line, "id": doc_id,
                               "error": f"the pipeline failed on this text: {_describe(doc)}"})
                continue
            records.append(doc_record(pipe, doc, doc_id))
            n_tokens += len(doc)
    return records, failed, n_tokens


def _doc_or_error(nlp: Any, text: str) -> Any:
    """``nlp(text)``, or the exception it raised."""
    try:
        return nlp(text)
    except Exception as err:  # noqa: BLE001 -- reported as the row's error
        return err


def _describe(err: BaseException) -> str:
    """``Type: message``, with the exception's repr where its message is empty."""
    return f"{type(err).__name__}: {str(err) or repr(err)}"


def doc_record(pipe: Any, doc: Any, doc_id: Any) -> Dict[str, Any]:
    """The output row of an annotated doc: its tokens with ``pipe``'s labels and
    confidences (and the target's ``record_fields``: the lemma target's lemma
    beside its tree), and for a span target its spans."""
    target = pipe.target
    keys = target.reference_keys(doc)
    ids = target.ids_of_keys(keys).tolist()
    names = list(pipe.tags)  # label ids are the model's columns
    # a value that is no label, kept from the doc (keep_existing: a rule's tag),
    # is written as it is, not as a missing label; a target that writes its
    # value beside the label (the lemma) has it there already
    kept = {} if target.record_fields else {
        i: target.string_of(doc, int(keys[i])) for i in range(len(doc))
        if ids[i] < 0 and keys[i] != np.uint64(target.missing_key)}
    confidence = (token_values.doc_values(doc, CONFIDENCE, stem(pipe.name))
                  or [None] * len(doc))
    tokens = [{"text": token.text, "label": names[i] if i >= 0 else kept.get(token.i),
               "confidence": None if c is None else float(c)}
              for token, i, c in zip(doc, ids, confidence)]
    for field, values in target.record_values(doc).items():  # (the lemma target's lemma)
        for token, value in zip(tokens, values):
            token[field] = value
    record = {"id": doc_id, "tokens": tokens}
    if target.is_span_target:
        record["spans"] = [{"start": span.start, "end": span.end, "label": span.label_,
                            "confidence": token_values.span_value(span, SPAN_CONFIDENCE, stem(pipe.name))}
                           for span in target.spans_of(doc) or []]
    return record


def _valid_rows(path: Path, max_length: Optional[int] = None
                ) -> Tuple[List[Tuple[int, Any, str]], List[Dict[str, Any]]]:
    """``(line, id, text)`` of the good rows of a shard, and an error row for each bad one.

    ``max_length`` is the pipeline's ``nlp.max_length``: a longer text is a bad
    row (spaCy would raise E088 for the batch, and the shard would fail).
    """
    good: List[Tuple[int, Any, str]] = []
    bad: List[Dict[str, Any]] = []
    first_line: Dict[Any, int] = {}

    def reject(line: int, doc_id: Any, why: str) -> None:
        bad.append({"shard": path.name, "line": line, "id": doc_id, "error": why})

    for line, row, problem in read_rows(path):
        doc_id = None if row is None else row.get("id")
        problem = problem or _id_problem(doc_id)
        if problem is not None:  # (the id is left out: the error list could not hold it)
            reject(line, None, problem)
            continue
        if doc_id in first_line:
            reject(line, doc_id, f"duplicate id: line {first_line[doc_id]} has it too (only "
                                 "the first valid row of an id is annotated)")
            continue
        text = row.get("text")
        problem = _text_problem(text, max_length)
        if problem is not None:
            reject(line, doc_id, problem)
            continue
        # only a valid row claims its id: a rejected one is not written, so a later
        # row with its id is the document's only row, not a duplicate
        first_line[doc_id] = line
        good.append((line, doc_id, text))
    return good, bad


def _id_problem(doc_id: Any) -> Optional[str]:
    """Why ``doc_id`` cannot be a document's id (a string or an integer that the
    output and the error list can hold), or None."""
    if doc_id is None:
        return "no 'id' (a string or an integer)"
    if isinstance(doc_id, (bool, float, list, dict)):
        return f"'id' is a {type(doc_id).__name__}, not a string or an integer"
    if isinstance(doc_id, int) and not ID_RANGE[0] <= doc_id <= ID_RANGE[1]:
        # JSON allows any integer, but srsly cannot write one beyond 64 bits
        return (f"'id' is an integer outside 64 bits ({ID_RANGE[0]} to {ID_RANGE[1]}), "
                "which the output cannot hold: write such ids as strings")
    where = not_unicode(doc_id) if isinstance(doc_id, str) else None
    if where is not None:
        return (f"'id' is not valid Unicode ({where}): write ids as UTF-8 text, without "
                "\\ud800-\\udfff escapes")
    return None


def _text_problem(text: Any, max_length: Optional[int]) -> Optional[str]:
    """Why ``text`` cannot be annotated (not a string, not Unicode, longer than
    ``max_length``), or None."""
    if not isinstance(text, str):
        return "no 'text'" if text is None else f"'text' is a {type(text).__name__}, not a string"
    where = not_unicode(text)
    if where is not None:
        return (f"'text' is not valid Unicode ({where}): write texts as UTF-8, without lone "
                "\\ud800-\\udfff escapes")
    if max_length is not None and len(text) > max_length:
        return (f"'text' has {len(text)} characters, more than the pipeline's "
                f"nlp.max_length = {max_length}: split the document into shorter ones")
    return None


def _pipeline(model: str, component: Optional[str],
              fingerprint: Optional[str] = None) -> Tuple[Any, Any]:
    """This process's copy of the pipeline and its crf_tagger, loaded on first use.

    ``fingerprint`` (the run's record of the model's files): a copy loaded from
    other files at the same path is loaded again (a cluster that outlives a
    run wrote the old model's labels, recorded as the new one's). A worker
    keeps the last :data:`MAX_PIPELINES` it loaded.

    Raises
    ------
    ValueError
        E098 when the pipeline does not load, E099 when it has no such crf_tagger.
    """
    key = (str(model), component)
    cached = _PIPELINES.get(key)
    if cached is None or (fingerprint is not None and cached[0] != fingerprint):
        import spacy

        from .pipeline.crf_tagger import CRFTagger

        try:
            nlp = spacy.load(model)
        except Exception as err:  # noqa: BLE001 -- any load failure is the model's
            raise ValueError(Errors.E098.format(path=model, why=f"{type(err).__name__}: {err}"))
        taggers = [(name, pipe) for name, pipe in nlp.pipeline if isinstance(pipe, CRFTagger)
                   and (component is None or name == component)]
        if not taggers:
            raise ValueError(Errors.E099.format(path=model, pipes=nlp.pipe_names,
                                                named=f" named '{component}'" if component else ""))
        pipe = taggers[-1][1]
        _enable_confidence(pipe)
        _PIPELINES.pop(key, None)
        while len(_PIPELINES) >= MAX_PIPELINES:  # the oldest first
            del _PIPELINES[next(iter(_PIPELINES))]
        _PIPELINES[key] = (fingerprint, nlp, pipe)
    return _PIPELINES[key][1:]


def _enable_confidence(pipe: Any) -> None:
    """Have the crf_tagger store marginals, where its structure computes them for its
    target (a span target needs span probabilities)."""
    if not pipe.target.is_span_target or pipe.crf_structure.supports_span_probabilities:
        pipe.cfg["store_confidence"] = True


def load_on_workers(client: Any, model: str, component: Optional[str],
                    fingerprint: Optional[str] = None) -> None:
    """Load the pipeline in every worker now and run it once: start-up cost paid
    once, load errors reported before any shard is given out."""
    client.run(_load_here, model, component, fingerprint)


def _load_here(model: str, component: Optional[str], fingerprint: Optional[str]) -> None:
    # (returns nothing: the pipeline stays in the worker)
    nlp, _ = _pipeline(model, component, fingerprint)
    # one short text through every component: the first call loads the numba
    # kernels from their cache (about 2 s), part of start-up, not of the first shard
    nlp("Warm up the pipeline .")


def _run(client: Any, model: Path, component: Optional[str], run: Dict[str, Any],
         todo: List[Path], output_dir: Path, batch_size: int, report: AnnotateReport,
         failures: List[Dict[str, Any]], log: IO, on_shard_done: Optional[Callable],
         begin: float, interrupts: "Interrupts") -> None:
    from .dask_client import worker_memory_mb, worker_peak_memory_mb

    model_path = str(model.resolve())
    load_on_workers(client, model_path, component, run["fingerprint"])
    interrupts.check()
    report.startup_seconds = time.perf_counter() - begin
    _say(log, f"{len(client.scheduler_info()['workers'])} worker(s) ready in "
              f"{report.startup_seconds:.1f} s; {len(todo)} shard(s) to annotate")
    futures = {client.submit(annotate_shard, model_path, component, str(shard.resolve()),
                             str((output_dir / shard.name).resolve()), batch_size, run,
                             key=f"annotate-{shard.name}-{time.time_ns()}", pure=False,
                             retries=1): shard for shard in todo}
    progress = _Progress(log, len(todo))
    for future in _completed(futures, interrupts):
        shard = futures[future]
        try:
            done = future.result()
        except Exception as err:  # noqa: BLE001 -- one shard's failure must not stop the rest
            failures.append({"shard": shard.name, "line": None, "id": None,
                             "error": f"the shard failed: {_describe(err)}"})
            report.failed_shards.append(shard.name)
            progress.update(shard.name, None)
            continue
        report.shards += 1
        report.documents += done["documents"]
        report.tokens += done["tokens"]
        progress.update(shard.name, done)
        if on_shard_done is not None:
            on_shard_done(shard.name)
    progress.close()
    report.worker_memory_mb = worker_memory_mb(client)
    report.worker_peak_memory_mb = worker_peak_memory_mb(client)


def _completed(futures: Dict[Any, Path], interrupts: "Interrupts") -> Iterator[Any]:
    """The futures as they finish; a recorded Ctrl-C stops the run before each one
    and every :data:`_TICK` seconds while none has (as_completed would wait for
    the next shard, however long it takes, before the driver could look)."""
    from distributed import as_completed

    pending = as_completed(futures)
    while not pending.is_empty():
        interrupts.check()
        batch = pending.next_batch(block=False)
        if not batch:
            time.sleep(_TICK)
        for future in batch:
            interrupts.check()
            yield future


class Interrupts:
    """Ctrl-C during a run, recorded by :meth:`handle` and acted on by :meth:`check`.

    The first Ctrl-C only sets :attr:`requested`: a KeyboardInterrupt raised
    where the signal lands is lost when that is a callback whose exceptions
    Python prints and drops (``Exception ignored in ...``), as distributed's
    garbage-collection callback is, and the run went on annotating. The driver
    calls :meth:`check` at its safe points instead. A second Ctrl-C raises at
    once (the driver may be stuck; the flag stays set should that be lost too).
    """

    def __init__(self) -> None:
        self.requested = False

    def handle(self, signum: int, frame: Optional[FrameType]) -> None:
        """The SIGINT handler."""
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def check(self) -> None:
        """At a safe point: KeyboardInterrupt if Ctrl-C was pressed."""
        if self.requested:
            raise KeyboardInterrupt


@contextmanager
def interrupts_recorded() -> Iterator[Interrupts]:
    """:class:`Interrupts` as the SIGINT handler for the block; the previous handler
    is restored after it, whether it ends, fails or is interrupted.

    Only the main thread may set a handler, and a SIGINT that is ignored (a job
    started in the background) stays ignored: there the block gets an
    :class:`Interrupts` that nothing sets, and Ctrl-C acts as it did before.
    """
    interrupts = Interrupts()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) == signal.SIG_IGN):
        yield interrupts
        return
    before = signal.signal(signal.SIGINT, interrupts.handle)
    try:
        yield interrupts
    finally:
        # None: a handler not set from Python, which cannot be put back; the default is
        signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)


def _merge_errors(output_dir: Path, shards: List[Path], failures: List[Dict[str, Any]],
                  run: Dict[str, Any]) -> int:
    """Write ``_errors.jsonl``: the bad rows of every finished shard, then this run's
    failed shards; rewritten only when it changes. Returns the number of bad rows."""
    rows: List[Dict[str, Any]] = []
    for shard in shards:
        listed = output_dir / ERRORS_DIR / (shard.name + ".jsonl")
        if _is_done(output_dir / shard.name, run) and listed.exists():
            rows.extend(srsly.read_jsonl(listed))
    n_bad = len(rows)
    rows.extend(failures)
    path = output_dir / ERRORS_FILE
    if not rows:
        if path.exists():
            path.unlink()
        return 0
    text = "".join(srsly.json_dumps(row) + "\n" for row in rows)
    if not path.exists() or path.read_text(encoding="utf8") != text:
        write_rows(path, rows)
    return n_bad


def _fingerprint(model: Path, component: Optional[str]) -> Dict[str, Any]:
    """What identifies a pipeline directory: its path, the component, and the
    size and modification time of each of its files."""
    files = sorted(p for p in model.rglob("*") if p.is_file())
    return {"model": str(model.resolve()), "component": component,
            "files": {str(p.relative_to(model)): [p.stat().st_size, p.stat().st_mtime_ns]
                      for p in files}}


def _run_record(model: Path, component: Optional[str]) -> Dict[str, Any]:
    """What a shard's record says of the pipeline that wrote it: its path, and a
    digest of its :func:`_fingerprint` (equal for the same files, unchanged)."""
    fingerprint = srsly.json_dumps(_fingerprint(model, component), sort_keys=True)
    return {"model": str(model.resolve()),
            "fingerprint": hashlib.sha256(fingerprint.encode("utf8")).hexdigest()}


def _record_path(output: Path) -> Path:
    """Where annotate records the output file ``output`` it wrote."""
    return output.parent / DONE_DIR / (output.name + ".jsonl")


def _recorder(output: Path, run: Dict[str, Any]) -> Callable[[Path], None]:
    """A ``before_rename`` for :func:`write_rows`: records the finished temporary
    file of ``output`` (size and modification time, which its rename keeps)."""
    def record(temp: Path) -> None:
        stat = temp.stat()
        _record_path(output).parent.mkdir(exist_ok=True)
        write_rows(_record_path(output),
                   [{**run, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}])
    return record


def _record_of(output: Path) -> Optional[Dict[str, Any]]:
    """The record of ``output`` if annotate wrote that file as it is now; None if
    there is no file, no record, or the file is not the one recorded."""
    try:
        stat = output.stat()
        records = list(srsly.read_jsonl(_record_path(output)))
    except (OSError, ValueError):  # srsly: ValueError for a missing or broken file
        return None
    if len(records) != 1 or not isinstance(records[0], dict):
        return None
    record = records[0]
    if (record.get("size"), record.get("mtime_ns")) != (stat.st_size, stat.st_mtime_ns):
        return None
    return record


def _is_done(output: Path, run: Dict[str, Any]) -> bool:
    """Whether the shard output ``output`` is finished: written by annotate with the
    pipeline of ``run``, and not changed since."""
    record = _record_of(output)
    return record is not None and record.get("fingerprint") == run["fingerprint"]


def _claim_output(output_dir: Path, run: Dict[str, Any], shards: List[Path],
                  overwrite: bool) -> None:
    """Check that every shard output already in ``output_dir`` is annotate's, from
    the pipeline of ``run``: E254 for files annotate has no record of writing,
    E102 for shards of another pipeline. ``overwrite`` deletes them instead."""
    outputs = [output_dir / s.name for s in shards]
    if overwrite:
        for output in outputs:
            for old in (output, output_dir / ERRORS_DIR / (output.name + ".jsonl"),
                        _record_path(output)):
                if old.exists():
                    old.unlink()
        return
    present = [output for output in outputs if output.exists()]
    records = [_record_of(output) for output in present]
    unrecorded = [output.name for output, record in zip(present, records) if record is None]
    if unrecorded:
        raise ValueError(Errors.E254.format(output=output_dir, names=name_list(unrecorded)))
    other = [r for r in records if r is not None and r.get("fingerprint") != run["fingerprint"]]
    if other:
        raise ValueError(Errors.E102.format(output=output_dir, model=run["model"],
                                            then=other[0].get("model")))


def _check_shard_names(input_dir: Path, shards: List[Path]) -> None:
    """E140 for an input shard that has the name of annotate's error list: its
    output would be overwritten by the list (or deleted with it)."""
    if any(shard.name.lower() == ERRORS_FILE for shard in shards):
        raise ValueError(Errors.E140.format(path=input_dir / ERRORS_FILE, name=ERRORS_FILE))


def _prepare_output(output_dir: Path, run: Dict[str, Any], shards: List[Path],
                    overwrite: bool) -> None:
    """Create OUTPUT, claim it for the pipeline of ``run`` and clear a killed run's
    temporary files; E141 when OUTPUT cannot be created or written."""
    try:
        # a directory that exists but refuses writes fails here, not on every worker
        make_writable_dir(output_dir)
        (output_dir / ERRORS_DIR).mkdir(exist_ok=True)
        (output_dir / DONE_DIR).mkdir(exist_ok=True)
        _claim_output(output_dir, run, shards, overwrite)
        for directory in (output_dir, output_dir / ERRORS_DIR, output_dir / DONE_DIR):
            remove_stale_temp_files(directory)
    except OSError as err:
        raise ValueError(Errors.E141.format(output=output_dir, why=_describe(err))) from err


def _warn_unread(input_dir: Path) -> None:
    """W047 naming what INPUT holds that is not read (a shard in a subfolder or
    compressed would otherwise be left out without a word)."""
    unread = unread_entries(input_dir)
    if unread:
        warn(Warnings.W047.format(path=input_dir, names=name_list(unread)))


def _check_dirs(model: Path, input_dir: Path, output_dir: Path) -> None:
    if not (model / "config.cfg").exists():
        raise ValueError(Errors.E098.format(
            path=model, why="it is not a pipeline directory (no config.cfg)"))
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(Errors.E101.format(output=output_dir, why="a file, not a directory"))
    if output_dir.resolve() == input_dir.resolve():
        raise ValueError(Errors.E101.format(output=output_dir, why="the INPUT directory"))


class _Progress:
    """A tqdm bar on a terminal; otherwise one log line per shard."""

    def __init__(self, log: IO, total: int) -> None:
        self.log, self.total, self.n = log, total, 0
        self.bar = None
        if getattr(log, "isatty", lambda: False)():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="shard", file=log)

    def update(self, name: str, done: Optional[Dict[str, Any]]) -> None:
        self.n += 1
        if self.bar is not None:
            self.bar.update(1)
            return
        what = ("FAILED (listed in _errors.jsonl)" if done is None else
                f"{done['documents']} docs, {done['tokens']} tokens, {done['bad_rows']} bad rows, "
                f"{done['seconds']:.1f} s")
        _say(self.log, f"[{self.n}/{self.total}] {name}: {what}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary(report: AnnotateReport, n_shards: int) -> str:
    if not report.shards and not report.failed_shards:
        head = f"Nothing to do: all {n_shards} shard(s) are annotated already."
    else:
        head = (f"Annotated {report.shards} shard(s) ({report.skipped} already done): "
                f"{report.documents} documents, {report.tokens} tokens in "
                f"{report.seconds:.1f} s, {report.tokens_per_second:,.0f} tokens/s "
                f"(start-up {report.startup_seconds:.1f} s).")
        if report.worker_peak_memory_mb:
            peaks = ", ".join(f"{mb:,.0f}" for mb in sorted(report.worker_peak_memory_mb.values()))
            head += f" Worker peak memory: {peaks} MB."
    failures = (f" Failures: {report.bad_rows} bad row(s), {len(report.failed_shards)} failed "
                f"shard(s), listed in {ERRORS_FILE}." if not report.ok else " Failures: none.")
    return head + failures


def _say(log: IO, line: str) -> None:
    log.write(line + "\n")
    log.flush()
