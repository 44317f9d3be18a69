"""``spacy_crf.evaluation.score`` (``crf-evaluate``) runs a few docs through the
pipeline before ``nlp.evaluate`` times its one pass: the kernels a process
loads on its first prediction would otherwise count in the reported speed."""

from spacy.training import Example

from conftest import make_nlp, train
from spacy_crf import evaluation


def test_the_pipeline_runs_untimed_before_the_timed_evaluation():
    nlp = make_nlp("tag")
    examples = [Example.from_dict(nlp.make_doc(f"the cat sat {i}"), {"tags": ["D", "N", "V", "C"]})
                for i in range(20)]
    train(nlp, examples, 2)
    events = []
    pipe, evaluate = nlp.pipe, nlp.evaluate

    def logged_pipe(docs, **kwargs):
        docs = list(docs)
        events.append(("pipe", len(docs)))
        return pipe(docs, **kwargs)

    def logged_evaluate(egs, **kwargs):
        events.append(("evaluate", len(egs)))
        return evaluate(egs, **kwargs)

    nlp.pipe, nlp.evaluate = logged_pipe, logged_evaluate
    before = [eg.predicted.to_json() for eg in examples]
    scores = evaluation.score(nlp, examples)
    # (nlp.evaluate then runs its own nlp.pipe over the 20)
    assert events[:2] == [("pipe", evaluation.WARM_UP_DOCS), ("evaluate", 20)]
    assert scores["tag_acc"] > 0.9
    # the warm-up ran on copies: the examples' inputs are as they were
    assert [eg.predicted.to_json() for eg in examples] == before
