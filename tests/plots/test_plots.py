"""``python -m spacy_crf.plots`` on a tiny trained pipeline: PNGs and the confidence HTML.

The command runs as its ``main(argv)`` in this process (conftest.run_main: a
process of its own spent about 2.5 s importing spaCy, spacy-crf and matplotlib);
tests/commands/test_cli.py runs the ``python -m`` spelling itself, and the test
without matplotlib below runs in a process of its own."""

import re
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example

from conftest import FROM_INITIALIZE, run_main, train

pytest.importorskip("matplotlib")

from spacy_crf.commands.plots import main as plots_main  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plots_write_valid_pngs_and_html(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {"templates": ["NORM[-1..1]"], "n_buckets": 1024}})
    texts = [("the cat sat", ["DT", "NN", "VBD"]), ("a dog ran home", ["DT", "NN", "VBD", "NN"])]
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in texts]
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    out = tmp_path / "plots"
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy", out])
    assert result.returncode == 0, result.stderr
    for name in ("transitions.png", "confusion.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 2000, name
    html = (out / "confidence.html").read_text(encoding="utf8")
    # every token of the first doc, with its predicted and gold tag and a confidence
    tokens = re.findall(r'title="predicted: (\S+) \| gold: (\S+) \| confidence: ([0-9.]+)">'
                        r'<span class="w">([^<]*)</span>', html)
    assert [t[3] for t in tokens[:3]] == ["the", "cat", "sat"]
    assert [t[1] for t in tokens[:3]] == ["DT", "NN", "VBD"]
    assert all(0.0 <= float(t[2]) <= 1.0 for t in tokens)


# -- options, console-log parsing, the skip path

import html  # noqa: E402
import numpy as np  # noqa: E402

from spacy.tokens import Doc  # noqa: E402

from spacy_crf.plots import figures, train_log  # noqa: E402

SMALL_MODEL = {
    "@architectures": "spacy-crf.FeatureCRF.v2",
    "templates": ["NORM[-1..1]", "SUFFIX2"],
    "n_buckets": 4096,
}
SENTS = [
    ("the cat sat on a mat .", "DT NN VBD IN DT NN ."),
    ("a dog & a cat ran quickly .", "DT NN CC DT NN VBD RB ."),
    ("the big bird flew over the tree .", "DT JJ NN VBD IN DT NN ."),
    ("a red fox slept .", "DT JJ NN VBD ."),
]
CONSOLE_LOG = """\
\x1b[38;5;4mi Pipeline: ['crf_tagger']\x1b[0m
E    #       LOSS CRF_T...  CRF_ACC  TAG_ACC  SCORE 
---  ------  -------------  -------  -------  ------
  0       0          12.50    40.00    40.00    0.40
  1      10           3.25    80.00    80.00    0.80
  2      20           0.50   100.00   100.00    1.00
\x1b[38;5;2m✔ Saved pipeline to output directory\x1b[0m
"""


def _example(nlp, text, tags):
    words, tags = text.split(), tags.split()
    return Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, tags=tags))


def _train_and_save(nlp, examples, folder):
    """15 updates on ``examples``, then ``folder/model`` and ``folder/data.spacy``."""
    train(nlp, examples, 15)  # Adam(0.1)
    nlp.to_disk(folder / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(folder / "data.spacy")


@pytest.fixture(scope="module")
def plots(tmp_path_factory):

    tmp = tmp_path_factory.mktemp("plots")
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL, "target": "tag"})
    examples = [_example(nlp, text, tags) for text, tags in SENTS]
    _train_and_save(nlp, examples, tmp)
    (tmp / "train.log").write_text(CONSOLE_LOG, encoding="utf-8")
    out = tmp / "out"
    result = run_main(plots_main, [tmp / "model", tmp / "data.spacy", out,
                                   "--train-log", tmp / "train.log", "--n-docs", "3"])
    assert result.returncode == 0, result.stderr
    # wasabi wraps its messages at 80 columns: compare the text with its whitespace joined
    return out, " ".join(result.stdout.split()), [eg.reference for eg in examples]


@pytest.mark.parametrize("name", ["transitions.png", "confusion.png", "learning_curve.png"])
def test_pngs_are_valid(plots, name):
    out, stdout, _ = plots
    path = out / name
    assert path.is_file(), stdout
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR" and data[-8:-4] == b"IEND"
    assert len(data) > 5000
    assert f"wrote {path}" in stdout


def test_confusion_reports_perfect_training_fit(plots):
    _, stdout, _ = plots
    assert "accuracy 1.0000" in stdout
    assert "4 evaluations" not in stdout and "3 evaluations" in stdout


def test_html_shows_every_token_with_labels(plots):
    out, _, docs = plots
    text = (out / "confidence.html").read_text(encoding="utf-8")
    assert text.lstrip().startswith("<!DOCTYPE html>")
    assert "http://" not in text and "https://" not in text and "<script" not in text
    for doc in docs[:3]:
        for token in doc:
            assert f'<span class="w">{html.escape(token.text)}</span>' in text
    assert "&amp;" in text and ">&<" not in text  # token text is escaped
    assert ">fox<" not in text  # the 4th doc is beyond --n-docs 3
    assert "gold: DT" in text and "predicted: NN" in text
    assert "confidence: n/a" not in text  # store_confidence was switched on
    assert text.count('class="doc"') == 3


def test_learning_curve_skipped_without_log(plots, tmp_path):
    out, _, _ = plots
    model, data = out.parent / "model", out.parent / "data.spacy"
    result = run_main(plots_main, [model, data, tmp_path])
    assert result.returncode == 0, result.stderr
    assert "learning_curve.png skipped: no --train-log given" in " ".join(result.stdout.split())
    assert not (tmp_path / "learning_curve.png").exists()
    assert (tmp_path / "confidence.html").exists()


def test_learning_curve_from_the_jsonl_the_configs_write(tmp_path):
    """``--paths.train_log`` makes ``spacy train`` (ConsoleLogger.v3) write JSON
    lines; the plots read them with the console table's columns."""
    lines = [
        '{"epoch":0,"step":0,"losses":{"crf_tagger":10.5},"scores":{"crf_acc":50.0,"pos_acc":50.0},"score":0.5}',
        '{"epoch":1,"step":25,"losses":{"crf_tagger":4.0},"scores":{"crf_acc":75.0,"pos_acc":75.0},"score":0.75}',
    ]
    columns, rows = train_log.parse_train_log("\n".join(lines) + "\n")
    assert columns == ["E", "#", "LOSS CRF_TAGGER", "CRF_ACC", "POS_ACC", "SCORE"]
    assert rows == [[0.0, 0.0, 10.5, 50.0, 50.0, 0.5], [1.0, 25.0, 4.0, 75.0, 75.0, 0.75]]
    log = tmp_path / "run" / "train_log.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n", encoding="utf8")
    assert train_log.find_log_file(log.parent) == log  # a training output dir is searched too
    figures.plot_learning_curve(columns, rows, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == PNG_MAGIC


def test_tree_model_gets_one_named_panel_per_relation_group(tmp_path):
    """A tree CRF with its own pair matrices for the two most frequent relations:
    the heatmap names each group, and the whole command runs with ``--copy HEAD,DEP``."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={
        "model": SMALL_MODEL, "target": "tag",
        "structure": {"@structures": "spacy-crf.Tree.v1", "n_relations": 3}})
    # det -> noun, noun -> verb (nsubj), and a root verb; "obj" is rarer than the others
    rows = [
        (["the", "cat", "sat"], ["DT", "NN", "VBD"], [1, 2, 2], ["det", "nsubj", "ROOT"]),
        (["a", "dog", "ran"], ["DT", "NN", "VBD"], [1, 2, 2], ["det", "nsubj", "ROOT"]),
        (["dogs", "chase", "the", "cat"], ["NNS", "VBP", "DT", "NN"], [1, 1, 3, 1],
         ["nsubj", "ROOT", "det", "obj"]),
    ]
    examples = []
    for words, tags, heads, deps in rows:
        predicted = Doc(nlp.vocab, words=words, heads=heads, deps=deps)
        reference = Doc(nlp.vocab, words=words, tags=tags, heads=heads, deps=deps)
        examples.append(Example(predicted, reference))
    train(nlp, examples, 10)  # Adam(0.1)
    component = nlp.get_pipe("crf_tagger")
    assert figures.relation_group_names(component) == ["other relations", "det", "nsubj"]
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy",
                                   tmp_path / "out", "--copy", "HEAD,DEP"])
    assert result.returncode == 0, result.stderr
    L = len(component.labels)
    stdout = " ".join(result.stdout.split())  # wasabi wraps its lines at 80 columns
    assert f"pair matrices (tree), 3 relation groups of {L}x{L} + root" in stdout
    assert (tmp_path / "out" / "transitions.png").read_bytes()[:8] == PNG_MAGIC


def test_a_pool_of_experts_plots_the_pools_transitions(tmp_path):
    """NeuralCRF.v3 decodes the weighted sum of its experts' label interactions:
    that is what the heatmap draws, not the first expert's."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": {
        "@architectures": "spacy-crf.NeuralCRF.v3", "templates": SMALL_MODEL["templates"],
        "n_buckets": 256, "neural_weight": 0.3,
        "tok2vec": {"@architectures": "spacy.HashEmbedCNN.v2", "width": 16, "depth": 1,
                    "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
                    "subword_features": False, "pretrained_vectors": None}}})
    examples = [Example.from_dict(Doc(nlp.vocab, words=w), {"tags": t})
                for w, t in ((["the", "cat", "sat"], ["DT", "NN", "VBD"]),
                             (["dogs", "run"], ["NNS", "VBP"]))]
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
    component = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc("the cat sat")]
    decoded = component.model.predict(docs)
    params = figures.potentials_params(component)
    for name in ("transitions", "start", "end"):
        np.testing.assert_allclose(params[name], getattr(decoded, name), rtol=1e-6)
    assert not np.allclose(params["transitions"], decoded.experts[0].transitions)
    figures.plot_transitions(component, tmp_path / "transitions.png")
    assert (tmp_path / "transitions.png").read_bytes()[:8] == PNG_MAGIC


# -- installed as a user tool: no matplotlib, the wrong component


def test_without_matplotlib_the_error_names_the_extra(plots, tmp_path):
    """matplotlib is optional (the ``plots`` extra): without it the command stops
    with a message naming the extra, and the log and HTML helpers still import."""
    out, _, _ = plots
    block = "import sys; sys.modules['matplotlib'] = None; "
    run = "import runpy; runpy.run_module('spacy_crf.plots', run_name='__main__')"
    args = [str(out.parent / "model"), str(out.parent / "data.spacy"), str(tmp_path / "out")]
    result = subprocess.run([sys.executable, "-c", block + f"sys.argv[1:] = {args!r}; " + run],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "[CRF-E067]" in result.stderr and 'pip install matplotlib' in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
    helpers = subprocess.run(
        [sys.executable, "-c", block + "from spacy_crf.plots import train_log, confidence_html"],
        capture_output=True, text=True, timeout=120)
    assert helpers.returncode == 0, helpers.stderr


def test_component_that_is_not_a_crf_tagger():
    from spacy_crf.commands.plots import find_component

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    with pytest.raises(ValueError, match=r"\[CRF-E069\] The pipeline has no crf_tagger"):
        find_component(nlp, None)
    with pytest.raises(ValueError, match=r"\[CRF-E068\] Component 'sentencizer' is not a crf_tagger"):
        find_component(nlp, "sentencizer")
    nlp.add_pipe("crf_tagger", name="tagger2", config={"model": SMALL_MODEL})
    assert find_component(nlp, None)[0] == "tagger2"


# -- issue #33 (6): figures read at a glance

from spacy_crf import token_values  # noqa: E402
from spacy_crf.pipeline.extensions import SPAN_CONFIDENCE, register_extensions  # noqa: E402
from spacy_crf.plots import entities  # noqa: E402


def _cell_texts(ax):
    """(column, row) -> the Text written in that cell."""
    return {tuple(int(round(v)) for v in t.get_position()): t for t in ax.texts}


def test_confusion_ticks_give_row_support_and_text_contrasts_with_the_cell():
    labels = ["NOUN", "PROPN", "X"]
    counts = np.array([[95, 5, 0], [0, 11, 1], [1, 0, 0]])  # X: one token, wrong
    fig = figures.confusion_figure(labels, counts)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks == ["NOUN (n=100)", "PROPN (n=12)", "X (n=1)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == labels
    cells = _cell_texts(ax)
    assert cells[(1, 0)].get_text() == "0.05" and cells[(1, 0)].get_color() == "black"  # pale
    assert cells[(0, 0)].get_text() == "0.95" and cells[(0, 0)].get_color() == "white"  # dark
    assert (2, 0) not in cells  # zero cells stay blank
    image = ax.images[0]
    for (j, i), text in cells.items():
        luminance = figures.relative_luminance(image.cmap(image.norm(image.get_array()[i, j])))
        assert text.get_color() == ("black" if luminance > 0.179 else "white"), text.get_text()
    figures.plt.close(fig)


def test_cell_numbers_only_where_they_fit():
    rng = np.random.default_rng(0)
    for n, expect_numbers in ((4, True), (80, False)):
        matrix = rng.normal(size=(n, n)) * 10
        fig, ax = figures.plt.subplots(figsize=(5, 5))
        image = figures._heatmap(ax, matrix, [str(i) for i in range(n)], [str(i) for i in range(n)],
                                 "RdBu_r", **figures._symmetric(matrix))
        fig.tight_layout()
        size = figures.annotate_cells(fig, ax, image, matrix, ".1f")
        if not expect_numbers:  # colour alone: no unreadable 3-point numbers
            assert size is None and not ax.texts
        else:
            assert figures.MIN_CELL_FONT <= size <= figures.MAX_CELL_FONT
            assert len(ax.texts) == n * n
            fig.canvas.draw()
            cell_w = ax.get_window_extent().width / n
            renderer = fig.canvas.get_renderer()
            # every number fits inside its own cell: none overlap
            assert max(t.get_window_extent(renderer).width for t in ax.texts) < cell_w
        figures.plt.close(fig)


def test_transition_heatmap_numbers_fit_their_cells(plots):
    out, _, _ = plots
    component = spacy.load(out.parent / "model").get_pipe("crf_tagger")
    fig, matrix = figures.chain_transitions_figure(component)
    ax = fig.axes[0]
    assert len(ax.texts) == int(np.isfinite(matrix).sum())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    cell_w = ax.get_window_extent().width / matrix.shape[1]
    assert all(t.get_fontsize() >= figures.MIN_CELL_FONT for t in ax.texts)
    assert max(t.get_window_extent(renderer).width for t in ax.texts) < cell_w
    figures.plt.close(fig)


def test_learning_curve_plots_loss_per_step_and_one_line_per_distinct_score():
    columns, rows = train_log.parse_train_log(CONSOLE_LOG)
    fig = figures.learning_curve_figure(figures.learning_curve_series(columns, rows))
    ax, ax_loss = fig.axes
    # spaCy sums the loss over the steps since the previous row (step 0: one step)
    np.testing.assert_allclose(ax_loss.lines[0].get_ydata(), [12.5 / 1, 3.25 / 10, 0.5 / 10])
    assert "per step" in ax_loss.get_ylabel()
    # CRF_ACC, TAG_ACC and 100 x SCORE are one series: one line, named as all three
    assert [line.get_label() for line in ax.lines] == ["SCORE (main score) = CRF_ACC = TAG_ACC"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [40.0, 80.0, 100.0])
    figures.plt.close(fig)


def test_learning_curve_keeps_distinct_scores_and_a_weighted_main_score():
    columns = ["E", "#", "LOSS TOK2VEC", "LOSS NER", "ENTS_F", "ENTS_P", "ENTS_R", "TAG_ACC",
               "SCORE"]
    rows = [[0, 0, 1.0, 30.0, 10.00, 20.00, 6.67, 50.00, 0.30],
            [0, 200, 40.0, 600.0, 60.00, 62.00, 58.00, 90.00, 0.75],
            [1, 400, 20.0, 200.0, 70.00, 71.00, 69.00, 95.00, 0.82]]
    curve = figures.learning_curve_series(columns, rows)
    assert curve.main[0] == "SCORE (main score, x100)"  # 0.5 ENTS_F + 0.5 TAG_ACC: not a repeat
    np.testing.assert_allclose(curve.main[1], [30.0, 75.0, 82.0])
    assert [label for label, _ in curve.scores] == ["ENTS_F", "ENTS_P", "ENTS_R", "TAG_ACC"]
    np.testing.assert_allclose(curve.losses["LOSS NER"], [30.0, 3.0, 1.0])
    # with ents_f alone weighted, SCORE repeats it to the printed precision: ENTS_F is the main line
    rows_f = [row[:-1] + [round(row[4] / 100, 2)] for row in rows]
    curve = figures.learning_curve_series(columns, rows_f)
    assert curve.main[0] == "SCORE (main score) = ENTS_F"
    np.testing.assert_allclose(curve.main[1], [10.0, 60.0, 70.0])
    assert [label for label, _ in curve.scores] == ["ENTS_P", "ENTS_R", "TAG_ACC"]
    # a resumed run starts a new table: its first row counts from step 0 again
    np.testing.assert_allclose(figures.steps_per_row(np.array([0.0, 200, 400, 0, 200])),
                               [1, 200, 200, 1, 200])


def _ents_doc(vocab, words, iob):
    return Doc(vocab, words=words, ents=iob)


def _hand_made_span_docs():
    """Two annotated docs and an unannotated one, with hand-counted outcomes."""
    vocab = spacy.blank("en").vocab
    w1 = ["Alice", "met", "Bob", "in", "Paris", "."]
    w2 = ["Acme", "hired", "Carol", "on", "Tuesday"]
    gold = [_ents_doc(vocab, w1, ["B-PER", "O", "B-PER", "O", "B-LOC", "O"]),
            _ents_doc(vocab, w2, ["B-ORG", "O", "B-PER", "O", "O"]),
            Doc(vocab, words=["Dan", "left"])]  # no entity annotation: skipped
    pred = [_ents_doc(vocab, w1, ["B-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O"]),
            _ents_doc(vocab, w2, ["O", "O", "B-PER", "O", "B-PER"]),
            _ents_doc(vocab, ["Dan", "left"], ["B-PER", "O"])]
    return gold, pred


def test_entity_confusion_counts_by_exact_span_matching():
    from spacy.scorer import Scorer

    gold_docs, pred_docs = _hand_made_span_docs()
    gold = [list(d.ents) if d.has_annotation("ENT_IOB") else None for d in gold_docs]
    pred = [list(d.ents) for d in pred_docs]
    types, counts = entities.span_confusion(gold, pred)
    assert types == ["LOC", "ORG", "PER"]
    # Alice, Carol: PER -> PER; Bob: PER -> LOC; Paris vs "in Paris": a missed LOC and a
    # spurious LOC; Acme: a missed ORG; Tuesday: a spurious PER; "Dan" is not counted
    expected = np.array([[0, 0, 0, 1],   # LOC
                         [0, 0, 0, 1],   # ORG
                         [1, 0, 2, 0],   # PER
                         [1, 0, 1, 0]])  # spurious
    np.testing.assert_array_equal(counts, expected)
    p, r, f = entities.span_scores(counts)
    spacy_scores = Scorer.score_spans(
        [Example(pd, gd) for pd, gd in zip(pred_docs[:2], gold_docs[:2])], "ents")
    assert (p, r, f) == pytest.approx((spacy_scores["ents_p"], spacy_scores["ents_r"],
                                       spacy_scores["ents_f"]))
    assert p == pytest.approx(2 / 5) and r == pytest.approx(2 / 5)
    fig = figures.span_confusion_figure(types, counts)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "LOC (n=1)", "ORG (n=1)", "PER (n=3)", "spurious (n=2)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "LOC (n=2)", "ORG (n=0)", "PER (n=3)", "missed (n=2)"]
    assert {k: t.get_text() for k, t in _cell_texts(ax).items()} == {
        (3, 0): "1", (3, 1): "1", (0, 2): "1", (2, 2): "2", (0, 3): "1", (2, 3): "1"}
    figures.plt.close(fig)


def _store_span_confidences(pred_docs, stored):
    """``stored[doc][start] = (P(span), end)``, written as the component stores them:
    P(span) and the span's end at each span start."""
    for d, spans in stored.items():
        doc = pred_docs[d]
        starts = sorted(spans)
        token_values.store(doc, SPAN_CONFIDENCE, "crf_tagger", [doc[s].idx for s in starts],
                           [len(doc[s:spans[s][1]].text) for s in starts],
                           [spans[s][0] for s in starts])


def test_span_confidence_outcomes_and_reliability_bins(tmp_path):
    register_extensions("crf_tagger")
    gold_docs, pred_docs = _hand_made_span_docs()
    # stored as the component stores them: P(span) and the span end at each span start
    stored = {0: {0: (0.9, 1), 2: (0.6, 3), 3: (0.3, 5)}, 1: {2: (0.95, 3)}}  # Tuesday: none
    _store_span_confidences(pred_docs, stored)
    gold = [list(d.ents) if d.has_annotation("ENT_IOB") else None for d in gold_docs]
    conf, correct = entities.span_confidences(gold, [list(d.ents) for d in pred_docs])
    np.testing.assert_allclose(conf, [0.9, 0.6, 0.3, 0.95])
    assert correct.tolist() == [True, False, False, True]
    mean_conf, acc, n = entities.reliability_bins(conf, correct, n_bins=2)
    np.testing.assert_allclose(mean_conf, [0.3, (0.9 + 0.6 + 0.95) / 3])
    np.testing.assert_allclose(acc, [0.0, 2 / 3])
    assert n.tolist() == [1, 3]
    ece = entities.expected_calibration_error(conf, correct, n_bins=2)
    assert ece == pytest.approx((0.3 + 3 * abs((0.9 + 0.6 + 0.95) / 3 - 2 / 3)) / 4)
    info = figures.plot_span_confidence(conf, correct, tmp_path / "c.png", n_bins=2)
    assert info.startswith("4 predicted spans, 2 correct")
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG_MAGIC


def test_entity_model_gets_the_entity_views(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL, "target": "ents"})
    words = [["Alice", "met", "Bob", "in", "Paris", "."], ["Carol", "left", "Rome", "."]]
    iobs = [["B-PER", "O", "B-PER", "O", "B-LOC", "O"], ["B-PER", "O", "B-LOC", "O"]]
    examples = [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=e))
                for w, e in zip(words, iobs)]
    _train_and_save(nlp, examples, tmp_path)
    out = tmp_path / "out"
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy", out])
    assert result.returncode == 0, result.stderr
    stdout = " ".join(result.stdout.split())  # wasabi wraps its lines at 80 columns
    assert "2 span types, 5 gold spans" in stdout
    for name in ("entities.png", "span_confidence.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, stdout
        assert f"wrote {out / name}" in stdout


# -- issue #33 (6): the entity view of confidence.html

from spacy_crf.plots.confidence_html import render_html  # noqa: E402


def _entity_page(gold_docs, pred_docs):
    register_extensions("crf_tagger")
    gold = [list(d.ents) if d.has_annotation("ENT_IOB") else None for d in gold_docs]
    pred = [list(d.ents) for d in pred_docs]
    ids = [np.zeros(len(d), dtype=np.int64) for d in pred_docs]
    return render_html(pred_docs, ids, ids, ["O"], "ents <view>", gold_spans=gold,
                       pred_spans=pred)


def _ent_boxes(page):
    """(class, words, label text) of each span box of the page, in order."""
    return re.findall(r'<span class="(ent[^"]*)"[^>]*>([^<]*)<span class="el">([^<]*)</span>',
                      page.split("</div>", 1)[1])  # after the legend


def test_entity_view_marks_wrong_and_missed_spans():
    register_extensions("crf_tagger")
    gold_docs, pred_docs = _hand_made_span_docs()
    stored = {0: {0: (0.9, 1), 2: (0.6, 3), 3: (0.3, 5)}, 1: {2: (0.954, 3)}, 2: {0: (0.5, 1)}}
    _store_span_confidences(pred_docs, stored)
    page = _entity_page(gold_docs, pred_docs)
    boxes = _ent_boxes(page)
    # doc 0: Alice correct; Bob wrong label (gold PER, missed); "in Paris" a boundary
    # error (gold "Paris" missed); doc 1: Acme missed, Carol correct, Tuesday spurious
    # (no stored confidence); doc 2: unannotated, nothing marked
    assert boxes == [
        ("ent", "Alice", "PER 90%"),
        ("ent wrong", "Bob", "LOC 60%"), ("ent missed", "Bob", "PER (missed)"),
        ("ent wrong", "in Paris", "LOC 30%"), ("ent missed", "Paris", "LOC (missed)"),
        ("ent missed", "Acme", "ORG (missed)"), ("ent", "Carol", "PER 95%"),
        ("ent wrong", "Tuesday", "PER n/a"),
        ("ent", "Dan", "PER 50%"),
    ]
    # the wrong spans name the gold span there, the missed ones what was predicted
    assert "wrong, gold here: PER \u201cBob\u201d" in page
    assert "wrong, gold here: LOC \u201cParis\u201d" in page
    assert "wrong, gold here: no gold span" in page
    assert "missed gold span ORG \u201cAcme\u201d; predicted here: nothing" in page
    assert "gold unknown" in page and "no gold span annotation" in page
    assert "3 predicted, 3 gold, 2 wrong, 2 missed" in page
    # coloured by the span's confidence
    from spacy_crf.plots.confidence_html import confidence_colour
    assert f'style="background:{confidence_colour(0.6)}" title="predicted LOC' in page
    assert "<script" not in page and "http" not in page


def test_entity_view_escapes_text_and_labels():
    vocab = spacy.blank("en").vocab
    words = ["<b>", "&", "x>y", "ok"]
    gold = Doc(vocab, words=words, ents=["B-A<&>", "O", "B-Q\"", "O"])
    pred = Doc(vocab, words=words, ents=["B-A<&>", "O", "O", "B-Q\""])
    page = _entity_page([gold], [pred])
    assert "<b>" not in page and "A<&>" not in page and "x>y" not in page
    assert "&lt;b&gt;" in page and "A&lt;&amp;&gt;" in page and "x&gt;y" in page
    assert 'title="ents &lt;view&gt;"' not in page and "<title>ents &lt;view&gt;</title>" in page
    assert ("ent missed", "x&gt;y", "Q&quot; (missed)") in _ent_boxes(page)


def test_token_view_alone_without_spans():
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words=["a", "b"])
    ids = [np.zeros(2, dtype=np.int64)]
    page = render_html([doc], ids, ids, ["X"], "t")
    assert 'class="ents"' not in page and 'class="ent' not in page


def test_a_factored_model_plots_the_transitions_it_decodes_with(tmp_path):
    """A morphology model's transitions are its label pairs' own weights plus
    its parts' (models/part_transitions.py): the heatmap draws their sum."""
    from models.test_label_parts import gold_examples, morph_nlp

    nlp = morph_nlp()
    train(nlp, gold_examples(nlp), 10, optimizer=FROM_INITIALIZE)
    component = nlp.get_pipe("crf_tagger")
    decoded = component.model.predict([nlp.make_doc("The dogs ran home .")])
    params = figures.potentials_params(component)
    np.testing.assert_allclose(params["transitions"], decoded.transitions, rtol=1e-6)
    figures.plot_transitions(component, tmp_path / "transitions.png")
    assert (tmp_path / "transitions.png").read_bytes()[:8] == PNG_MAGIC


def test_a_structure_without_a_matrix_skips_the_transitions_plot_and_says_so(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": SMALL_MODEL,
                                       "structure": {"@structures": "spacy-crf.Independent.v1"}})
    examples = [_example(nlp, text, tags) for text, tags in SENTS]
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy",
                                   tmp_path / "out"])
    assert result.returncode == 0, result.stderr
    assert "transitions.png skipped" in " ".join(result.stdout.split())
    assert not (tmp_path / "out" / "transitions.png").exists()
    assert (tmp_path / "out" / "confusion.png").read_bytes()[:8] == PNG_MAGIC


def test_a_matrix_of_hundreds_of_labels_draws_the_weightiest_only():
    """A figure grows with the square of its labels: 321 morphology labels
    were a 138-megapixel PNG. Past MAX_DRAWN_LABELS, the most frequent labels
    (confusion) and those whose moves score most (transitions) are drawn."""
    n, cap = 100, figures.MAX_DRAWN_LABELS
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 3, size=(n, n))
    counts[np.arange(n), np.arange(n)] += np.arange(n)  # the later labels the most frequent
    fig = figures.confusion_figure([f"L{i}" for i in range(n)], counts)
    (ax,) = [a for a in fig.axes if a.get_title()]
    assert f"the {cap} most frequent of {n} labels" in ax.get_title()
    assert len(ax.get_xticklabels()) == cap and ax.get_xticklabels()[-1].get_text() == f"L{n - 1}"
    assert max(fig.get_size_inches()) < 30
    figures.plt.close(fig)

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag"})
    nlp.get_pipe("crf_tagger").initialize(lambda: [], nlp=nlp, labels=[f"T{i}" for i in range(n)])
    fig, matrix = figures.chain_transitions_figure(nlp.get_pipe("crf_tagger"))
    assert matrix.shape == (cap + 1, cap + 1)
    assert f"of the {cap} labels whose moves score most, of {n}" in fig.axes[0].get_title()
    figures.plt.close(fig)


def _entity_model(order):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={
        "target": "ents", "model": SMALL_MODEL,
        "structure": {"@structures": "spacy-crf.Chain.v1", "order": order}})
    docs = [nlp.make_doc("Ada met Bob Smith in Paris") for _ in range(6)]
    for doc in docs:
        doc.ents = [doc.char_span(0, 3, "PER"), doc.char_span(8, 17, "PER"),
                    doc.char_span(21, 26, "LOC")]
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
    return nlp, examples


def test_the_moves_a_scheme_forbids_are_blank_not_scores_of_zero():
    nlp, _ = _entity_model(1)
    component = nlp.get_pipe("crf_tagger")
    tags = list(component.tags)
    _, matrix = figures.chain_transitions_figure(component)
    cell = lambda a, b: matrix[1 + tags.index(a), tags.index(b)]  # noqa: E731
    assert np.isnan(cell("O", "I-PER")) and np.isnan(cell("B-PER", "O"))
    assert np.isfinite(cell("O", "B-PER")) and np.isfinite(cell("B-PER", "L-PER"))
    assert np.isnan(matrix[0, tags.index("I-LOC")])  # no sequence starts inside a span
    assert np.isnan(matrix[1 + tags.index("B-LOC"), len(tags)])  # nor ends in one


def test_an_order_2_chain_draws_its_second_order_scores_too(tmp_path):
    nlp, examples = _entity_model(2)
    component = nlp.get_pipe("crf_tagger")
    tags, L = list(component.tags), len(component.tags)
    pairs = {tuple(p) for p in component.cfg["label_pairs"]}
    triples = figures.potentials_params(component)["triples"]
    assert triples.shape == (L + 1, L, L)
    fig, matrix = figures.second_order_figure(component)
    assert matrix.shape == (len(pairs), L)  # a row per kept pair, START's included
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0].startswith("START ")
    row = labels.index("B-PER L-PER")  # after B-PER L-PER: O, B-X, U-X, never I-X or L-X
    a, b = tags.index("B-PER"), tags.index("L-PER")
    assert matrix[row, tags.index("O")] == pytest.approx(triples[a, b, tags.index("O")])
    assert np.isnan(matrix[row, tags.index("I-PER")])
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy", tmp_path / "out"])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "transitions_order2.png").read_bytes()[:8] == PNG_MAGIC


def test_a_lemma_models_figures_name_its_trees_by_their_rules(tmp_path):
    from targets.test_lemma import trained

    nlp, examples = trained(n_iter=3)
    component = nlp.get_pipe("crf_tagger")
    names = figures.label_names(component)
    assert "*s -> *" in names and "is -> be" in names
    assert not any(name.startswith("(") for name in names)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    result = run_main(plots_main, [tmp_path / "model", tmp_path / "data.spacy", tmp_path / "out"])
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "confidence.html").read_text(encoding="utf8")
    assert "predicted: *s -&gt; * | gold: *s -&gt; *" in page
