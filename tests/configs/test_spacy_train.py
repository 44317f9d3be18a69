"""End to end: corpus conversion and ``spacy train`` with the shipped configs (the
command's function in this process: conftest.spacy_train)."""


import pytest
import spacy
import srsly
from spacy.tokens import DocBin
from spacy.training import Corpus
from conftest import convert_ewt_sample, run_main, spacy_train

from conftest import ROOT
CONFIGS = ROOT / "configs"


# ------------------------------------------------------------------ UD EWT, target "pos"


@pytest.fixture(scope="module")
def ewt_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("ewt")
    corpus = convert_ewt_sample(work, ("train", "dev"))
    train, dev = corpus["train"], corpus["dev"]
    out = work / "output"
    # smaller batches than the config's, so that one epoch has a few dozen steps and
    # several evaluations (at steps 0, 20, 40)
    spacy_train(CONFIGS / "ewt_upos.cfg", out, "--paths.train", train, "--paths.dev", dev,
                "--training.max_epochs", "1", "--training.eval_frequency", "20",
                "--training.batcher.size", "250", cwd=work)
    return {"train": train, "dev": dev, "out": out}


@pytest.mark.parametrize("which", ["model-best", "model-last"])
def test_ewt_models_load_and_report_scores(ewt_run, which):
    path = ewt_run["out"] / which
    nlp = spacy.load(path)
    assert nlp.pipe_names == ["crf_tagger"]
    perf = srsly.read_json(path / "meta.json")["performance"]
    assert "pos_acc" in perf
    assert perf["pos_acc"] > 0.5
    doc = nlp("The dog barked at the mailman yesterday .")
    assert all(t.pos_ for t in doc)


def test_ewt_model_best_reproduces_its_dev_score(ewt_run):
    """The saved weights are the ones that were evaluated (the synced parameter averages)."""
    path = ewt_run["out"] / "model-best"
    nlp = spacy.load(path)
    dev = list(Corpus(str(ewt_run["dev"]))(nlp))
    scores = nlp.evaluate(dev)
    perf = srsly.read_json(path / "meta.json")["performance"]
    assert scores["pos_acc"] == pytest.approx(perf["pos_acc"], abs=1e-6)
    # and it tags sensibly: frequent function words
    doc = nlp("the")
    assert doc[0].pos_ == "DET"


@pytest.mark.slow
def test_the_neural_config_fits_its_pool_weight_on_dev_and_keeps_it(tmp_path):
    """configs/ewt_upos_neural.cfg refits NeuralCRF.v3's pool weight before every
    evaluation (spacy-crf.fit_pool_weights.v1): the saved models carry a fitted
    weight, and model-best scores on dev what it scored when it was chosen."""
    from spacy_crf.models.pooled_experts import WEIGHTS, pool_weights_node

    corpus = convert_ewt_sample(tmp_path, ("train", "dev"))
    out = tmp_path / "output"
    spacy_train(CONFIGS / "ewt_upos_neural.cfg", out,
                "--paths.train", corpus["train"], "--paths.dev", corpus["dev"],
                "--training.max_steps", "40", "--training.eval_frequency", "20",
                "--training.batcher.size", "250", cwd=tmp_path)
    for which in ("model-best", "model-last"):
        nlp = spacy.load(out / which)
        weights = pool_weights_node(nlp.get_pipe("crf_tagger").model).attrs[WEIGHTS]
        assert weights != [0.8, 0.2] and sum(weights) == pytest.approx(1.0)
    perf = srsly.read_json(out / "model-best" / "meta.json")["performance"]
    best = spacy.load(out / "model-best")
    dev = list(Corpus(str(corpus["dev"]))(best))
    assert best.evaluate(dev)["pos_acc"] == pytest.approx(perf["pos_acc"], abs=1e-6)


def test_ewt_labels_are_upos(ewt_run):
    from spacy.parts_of_speech import IDS

    nlp = spacy.load(ewt_run["out"] / "model-last")
    labels = nlp.get_pipe("crf_tagger").labels
    assert {"NOUN", "VERB", "DET", "PUNCT"} <= set(labels)
    assert all(label in IDS for label in labels)


# ------------------------------------------------------------------ CoNLL-2000 style chunking

# A few made-up sentences in the WORD POS CHUNK column format.
TINY_CHUNKS = """\
The DT B-NP
small JJ I-NP
dog NN I-NP
chased VBD B-VP
a DT B-NP
red JJ I-NP
ball NN I-NP
. . O

My PRP$ B-NP
sister NN I-NP
reads VBZ B-VP
long JJ B-NP
books NNS I-NP
in IN B-PP
the DT B-NP
evening NN I-NP
. . O

Farmers NNS B-NP
will MD B-VP
plant VB I-VP
corn NN B-NP
next JJ B-NP
spring NN I-NP
. . O

Our PRP$ B-NP
team NN I-NP
won VBD B-VP
the DT B-NP
final JJ I-NP
game NN I-NP
on IN B-PP
Sunday NNP B-NP
. . O
"""


@pytest.fixture(scope="module")
def chunk_run(tmp_path_factory):
    from spacy_crf.commands.convert import main as convert_main

    work = tmp_path_factory.mktemp("chunks")
    (work / "tiny.txt").write_text(TINY_CHUNKS, encoding="utf8")
    spacy_file = work / "corpus" / "tiny.spacy"
    proc = run_main(convert_main, ["chunks", work / "tiny.txt", spacy_file])
    assert proc.returncode == 0, proc.stderr
    assert "4 docs" in proc.stdout
    out = work / "output"
    spacy_train(CONFIGS / "conll2000_chunking.cfg", out,
                "--paths.train", spacy_file, "--paths.dev", spacy_file,
                "--training.max_epochs", "1", "--components.crf_tagger.model.n_buckets", "4096",
                cwd=work)
    return {"spacy_file": spacy_file, "out": out}


def test_chunk_conversion(chunk_run):
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(chunk_run["spacy_file"]).get_docs(nlp.vocab))
    assert len(docs) == 4
    first = docs[0]
    assert [t.text for t in first] == ["The", "small", "dog", "chased", "a", "red", "ball", "."]
    assert [t.tag_ for t in first] == ["DT", "JJ", "NN", "VBD", "DT", "JJ", "NN", "."]
    from spacy_crf.targets import register_extension

    register_extension("chunk")
    assert [t._.chunk for t in first] == ["B-NP", "I-NP", "I-NP", "B-VP", "B-NP", "I-NP", "I-NP", "O"]
    assert [t._.chunk for t in docs[2]][:3] == ["B-NP", "B-VP", "I-VP"]


def test_chunking_model_reports_chunk_f(chunk_run):
    for which in ("model-best", "model-last"):
        path = chunk_run["out"] / which
        perf = srsly.read_json(path / "meta.json")["performance"]
        assert "chunk_score" in perf and "chunk_acc" in perf
        assert 0.0 <= perf["chunk_score"] <= 1.0
        nlp = spacy.load(path)
        tagger = nlp.get_pipe("crf_tagger")
        assert tagger.cfg["target"] == "_.chunk"
        assert {"B-NP", "I-NP", "B-VP", "O"} <= set(tagger.labels)
        # the small n_buckets override took effect
        linear = [n for n in tagger.model.walk() if n.name == "crf_hashed_linear"][0]
        assert linear.get_param("W").shape[0] == 4096
        doc = nlp("The dog chased a ball .")
        assert all(t._.chunk in tagger.labels for t in doc)
