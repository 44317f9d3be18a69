"""Shared helpers for the component-level tests: a toy corpus and tiny pipelines.

The toy corpus is a handful of made-up sentences over a small vocabulary with
PTB tags; UPOS and IOB chunk labels are derived from the PTB tags, so the same
sentences serve the ``tag``, ``pos`` and ``_.chunk`` targets.
"""

import io
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import pytest
import spacy
from spacy.tokens import Doc, Span
from spacy.training import Example
from thinc.api import Adam

from spacy_crf import set_doc_labels

# word/PTB pairs; NP = maximal runs of DT/JJ/NN
TOY_TEXT = [
    "the/DT cat/NN sat/VBD ./.",
    "a/DT dog/NN ran/VBD quickly/RB ./.",
    "the/DT big/JJ dog/NN slept/VBD ./.",
    "a/DT small/JJ cat/NN ran/VBD home/RB ./.",
    "the/DT bird/NN sang/VBD in/IN the/DT tree/NN ./.",
    "a/DT red/JJ bird/NN sat/VBD on/IN a/DT big/JJ box/NN ./.",
    "dogs/NN ran/VBD ./.",
    "the/DT old/JJ man/NN walked/VBD slowly/RB ./.",
]

UPOS = {"DT": "DET", "JJ": "ADJ", "NN": "NOUN", "VBD": "VERB", "RB": "ADV", "IN": "ADP", ".": "PUNCT"}
CHUNK_OF = {"VBD": "VP", "RB": "ADVP", "IN": "PP"}
NP_TAGS = {"DT", "JJ", "NN"}

#: the repository, the package's source and the tests' own files, wherever a test sits
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spacy_crf"
TEST_ASSETS = ROOT / "tests" / "assets"
EWT_SAMPLE = ROOT / "assets" / "ewt_sample"


def run_python(args: Sequence[Any], cwd: Path, timeout: int = 300,
               check: bool = True) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``cwd`` (this interpreter); fails the test with its
    output where it fails, unless ``check=False``."""
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=str(cwd), capture_output=True,
                          text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"{args}\nSTDOUT:\n{proc.stdout[-3000:]}\nSTDERR:\n{proc.stderr[-3000:]}"
    return proc


@contextmanager
def working_directory(cwd: Optional[Path]) -> Iterator[None]:
    """In ``cwd`` (None: where we are), back where we were after."""
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)


def run_main(main: Callable[[List[str]], int], args: Sequence[Any],
             cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """``python -m spacy_crf.X ARGS`` in ``cwd`` as the command's ``main(ARGS)`` in
    this process (a process of its own spent about 2.5 s on imports): its exit
    code, stdout and stderr, as ``run_python(..., check=False)`` gives a process's.
    For tests of what a command does and says; its ``python -m`` spelling is
    tested apart (tests/commands/test_command_spellings.py, test_cli.py)."""
    args = [str(arg) for arg in args]
    with working_directory(cwd), redirect_stdout(io.StringIO()) as stdout, \
            redirect_stderr(io.StringIO()) as stderr:
        code = main(args)
    return subprocess.CompletedProcess(args, code, stdout.getvalue(), stderr.getvalue())


def spacy_train(config: Path, output: Path, *overrides: Any, cwd: Optional[Path] = None) -> None:
    """``python -m spacy train CONFIG --output OUTPUT OVERRIDES`` in ``cwd`` (where
    a config's relative paths point), as spaCy's own ``train`` command function
    called in this process, its overrides parsed as the command line parses
    them: a process of its own spent about 2.5 s importing spaCy and spacy-crf
    before it trained. For tests that read what training wrote; a test of the
    command's own output, warnings or exit code runs it as a process."""
    from spacy.cli._util import parse_config_overrides
    from spacy.cli.train import train as train_command

    with working_directory(cwd):
        train_command(Path(config), Path(output), use_gpu=-1,
                      overrides=parse_config_overrides([str(arg) for arg in overrides]))


def convert_ewt_sample(work: Path, splits: Sequence[str] = ("train", "dev", "test")) -> Dict[str, Path]:
    """The shipped EWT sample's ``splits`` as .spacy files under ``work/corpus``,
    by split: ``spacy convert CONLLU CORPUS -c conllu -n 1``, the command's own
    function called in this process (a process of its own took 2 s to start)."""
    from spacy.cli.convert import convert

    conllu, corpus = work / "conllu", work / "corpus"
    conllu.mkdir()
    corpus.mkdir()
    # one `spacy convert` call for every file (the sample folder also has .iob2 files)
    for split in splits:
        shutil.copy(EWT_SAMPLE / f"en_ewt-{split}.conllu", conllu)
    convert(conllu, corpus, file_type="spacy", converter="conllu", n_sents=1, silent=True)
    paths = {split: corpus / f"en_ewt-{split}.spacy" for split in splits}
    assert all(path.exists() for path in paths.values())
    return paths


def ewt_sample_docs(split: str) -> List[Doc]:
    """The shipped EWT sample's ``split`` as Docs, one sentence each (as ``spacy convert``)."""
    from spacy.training.converters import conllu_to_docs

    text = (EWT_SAMPLE / f"en_ewt-{split}.conllu").read_text(encoding="utf8")
    return list(conllu_to_docs(text, n_sents=1, no_print=True))


def ewt_sample_corpus(folder: Path, train: Optional[int] = None,
                      dev: Optional[int] = None) -> Dict[str, Path]:
    """The first ``train`` and ``dev`` docs (None: all) of the EWT sample's
    splits as ``folder/train.spacy`` and ``folder/dev.spacy``, by split."""
    from spacy.tokens import DocBin

    paths = {}
    for split, n in (("train", train), ("dev", dev)):
        paths[split] = folder / f"{split}.spacy"
        DocBin(docs=ewt_sample_docs(split)[:n]).to_disk(paths[split])
    return paths


def fit_ewt_sample(tmp_path, structure: dict, n_docs: int = 200):
    """``python -m spacy_crf.fit`` of ``configs/ewt_upos.cfg`` with ``structure``
    as its block, on the first ``n_docs`` of the EWT sample (30 iterations):
    the trained pipeline and its UPOS accuracy on the sample's dev split."""
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_crf.training.fit import fit

    paths = ewt_sample_corpus(tmp_path, n_docs, n_docs)
    config = ROOT / "configs" / "ewt_upos.cfg"
    with open(tmp_path / "log", "w") as stream:
        nlp = fit(config, None, overrides={
            "paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
            "components.crf_tagger.model.n_buckets": 65536,
            "components.crf_tagger.structure": structure}, max_iterations=30,
            eval_frequency=30, stdout=stream)
    dev = DocBin().from_disk(paths["dev"]).get_docs(nlp.vocab)
    scores = nlp.evaluate([Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in dev])
    return nlp, scores["pos_acc"]


#: what a test model that trains at a high rate (Adam 0.1) leaves out of the
#: factory's defaults: the word clusters and the head start, whose 10x early
#: steps would make it certain at once (tests/features/test_word_features.py and
#: tests/models/test_boost.py test them)
SPELLING_ONLY = {"cluster_templates": None, "boost_updates": 0}
#: ``[initialize.components.NAME]`` settings that leave out the word tables a
#: target reads by default beside its model's templates (spaCy's lemma tables,
#: the usual case, the text's spacing): a model that reads its templates alone
NO_WORD_TABLES = {"lemma_lookups": False, "usual_case": False, "space_after": False}

SMALL_MODEL = {
    "@architectures": "spacy-crf.FeatureCRF.v2",
    "templates": ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX2", "PREFIX1"],
    "n_buckets": 4096,
    **SPELLING_ONLY,
}


#: a toy entity corpus: (text, [(start token, end token, label)])
TOY_NER = [
    ("Alice met Bob in Paris .", [(0, 1, "PER"), (2, 3, "PER"), (4, 5, "LOC")]),
    ("New York is big .", [(0, 2, "LOC")]),
    ("Carol Smith visited New York City yesterday .", [(0, 2, "PER"), (3, 6, "LOC")]),
    ("the cat sat on the mat .", []),
    ("Bob Jones lives in Berlin .", [(0, 2, "PER"), (4, 5, "LOC")]),
    ("Paris and Berlin are far .", [(0, 1, "LOC"), (2, 3, "LOC")]),
]


def tiny_tok2vec(width: int = 16) -> Dict:
    return {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": width,
            "attrs": ["NORM", "SUFFIX"],
            "rows": [200, 100],
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": width,
            "depth": 1,
            "window_size": 1,
            "maxout_pieces": 2,
        },
    }


def parse(line: str):
    pairs = [tok.rsplit("/", 1) for tok in line.split()]
    return [w for w, _ in pairs], [t for _, t in pairs]


def chunk_tags(ptb: List[str]) -> List[str]:
    out, prev_np = [], False
    for tag in ptb:
        if tag in NP_TAGS:
            out.append("I-NP" if prev_np else "B-NP")
            prev_np = True
        else:
            prev_np = False
            out.append(f"B-{CHUNK_OF[tag]}" if tag in CHUNK_OF else "O")
    return out


def labels_for(target: str, ptb: List[str]) -> List[str]:
    if target == "tag":
        return list(ptb)
    if target == "pos":
        return [UPOS[t] for t in ptb]
    if target == "_.chunk":
        return chunk_tags(ptb)
    raise AssertionError(target)


def make_example(nlp, words: List[str], labels: List[Optional[str]], target: str,
                 sent_starts=None) -> Example:
    """An Example whose reference carries ``labels`` for ``target`` (None = unannotated)."""
    predicted = Doc(nlp.vocab, words=words, sent_starts=sent_starts)
    reference = Doc(nlp.vocab, words=words, sent_starts=sent_starts)
    if target == "tag":
        for tok, lab in zip(reference, labels):
            tok.tag_ = lab or ""
    elif target == "pos":
        for tok, lab in zip(reference, labels):
            tok.pos_ = lab or ""
    else:
        set_doc_labels(reference, target[2:], labels)
    return Example(predicted, reference)


def ner_examples(nlp, data=TOY_NER, key: Optional[str] = None, drop=()) -> List[Example]:
    """Examples of an entity corpus (``TOY_NER``'s form): the spans as the
    reference's ``ents`` (every other token outside), or as its ``spans[key]``;
    spans with a label in ``drop`` left out."""
    examples = []
    for text, ents in data:
        words = text.split()
        ref = Doc(nlp.vocab, words=words)
        spans = [Span(ref, a, b, label=k) for a, b, k in ents if k not in drop]
        if key is None:
            ref.set_ents(spans, default="outside")
        else:
            ref.spans[key] = spans
        examples.append(Example(Doc(nlp.vocab, words=words), ref))
    return examples


def toy_examples(nlp, target: str = "tag") -> List[Example]:
    examples = []
    for line in TOY_TEXT:
        words, ptb = parse(line)
        examples.append(make_example(nlp, words, labels_for(target, ptb), target))
    return examples


def chain(order: int) -> Dict[str, Any]:
    """The config block of a chain of ``order``."""
    return {"@structures": "spacy-crf.Chain.v1", "order": order}


def semi_markov(max_segment_length: int = 0) -> Dict[str, Any]:
    """The config block of a semi-Markov CRF."""
    return {"@structures": "spacy-crf.SemiMarkov.v1", "max_segment_length": max_segment_length}


def make_nlp(target: str = "tag", model: Optional[Dict] = None, **config) -> "spacy.Language":
    """A blank English pipeline with one ``crf_tagger`` of ``target`` whose
    model is ``model`` (``SMALL_MODEL`` by default) and settings ``config``."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": dict(model or SMALL_MODEL), "target": target, **config})
    return nlp


def filled_config(folder: Path, name: str, target: str):
    """``spacy init fill-config`` of a pipeline of one ``crf_tagger`` named
    ``name`` whose config gives its ``target`` alone: the filled config."""
    from spacy.cli.init_config import fill_config
    from spacy.util import load_config

    base = folder / "base.cfg"
    base.write_text(f'[nlp]\nlang = "en"\npipeline = ["{name}"]\n\n'
                    f'[components]\n\n[components.{name}]\nfactory = "crf_tagger"\n'
                    f'target = "{target}"\n', encoding="utf8")
    filled = folder / "filled.cfg"
    fill_config(filled, base, silent=True)
    return load_config(filled)


#: ``train(..., optimizer=FROM_INITIALIZE)``: the optimizer ``nlp.initialize`` returns
FROM_INITIALIZE = object()


def train(nlp, examples, n_iter: int = 25, learn_rate: float = 0.1, optimizer=None,
          initialize: bool = True, component: Optional[str] = "crf_tagger") -> List:
    """Initialize (unless ``initialize=False``: training goes on) and train with
    ``n_iter`` full-batch updates (``Adam(learn_rate)``, or ``optimizer``);
    returns ``component``'s loss of every step (``component=None``: every
    component's losses, as ``nlp.update`` gives them)."""
    initialized = nlp.initialize(lambda: examples) if initialize else None
    if optimizer is FROM_INITIALIZE:
        assert initialize, "FROM_INITIALIZE needs initialize=True"
        optimizer = initialized
    elif optimizer is None:
        optimizer = Adam(learn_rate)
    history = []
    for _ in range(n_iter):
        losses: Dict[str, float] = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
        history.append(losses[component] if component else losses)
    return history


def train_epochs(nlp, examples, epochs: int = 5, size: int = 32) -> None:
    """Initialize, then ``epochs`` passes over ``examples`` in batches of ``size``
    with the optimizer ``nlp.initialize`` returns (a short plain loop)."""
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(epochs):
        for i in range(0, len(examples), size):
            nlp.update(examples[i:i + size], sgd=optimizer)


def trained_nlp(target: str = "tag", n_iter: int = 25, **kwargs):
    nlp = make_nlp(target, **kwargs)
    examples = toy_examples(nlp, target)
    train(nlp, examples, n_iter=n_iter)
    return nlp, examples


def predictions(nlp, docs_or_texts, target: str = "tag"):
    """(labels, confidences) of every token, docs processed by ``nlp``."""
    out = []
    for doc in docs_or_texts:
        if isinstance(doc, str):
            doc = nlp(doc)
        out.append(doc_labels(doc, target))
    return out


def doc_labels(doc, target: str = "tag"):
    if target == "tag":
        return [t.tag_ for t in doc]
    if target == "pos":
        return [t.pos_ for t in doc]
    return [t._.get(target[2:]) for t in doc]


@pytest.fixture(scope="session")
def toy():
    """The helpers above, as one namespace."""
    return SimpleNamespace(
        TOY_TEXT=TOY_TEXT, SMALL_MODEL=SMALL_MODEL, parse=parse, labels_for=labels_for,
        make_example=make_example, toy_examples=toy_examples, ner_examples=ner_examples,
        make_nlp=make_nlp, train=train,
        trained_nlp=trained_nlp, predictions=predictions, doc_labels=doc_labels,
        tiny_tok2vec=tiny_tok2vec,
    )


def featurize_layer(nlp, name: str = "crf_tagger"):
    """The featurize layer of the component ``name`` (its templates, optional
    templates and word tables are in its attrs)."""
    return next(node for node in nlp.get_pipe(name).model.walk()
                if node.name == "crf_featurize")


def said(caught, code: str) -> List[str]:
    """The messages of the warnings ``caught`` (``warnings.catch_warnings(record=True)``)
    that carry ``[CRF-code]``."""
    return [str(w.message) for w in caught if f"[CRF-{code}]" in str(w.message)]
