"""The sklearn-crfsuite peer of every benchmark: its features, and :func:`fit_and_decode`,
the one way it is trained, run and timed.

Features, two sets on purpose:

* :class:`CrfsuiteFeaturizer`: a spacy-crf config's templates rendered as
  crfsuite attributes (``TEMPLATE=value|value``), with the token attributes read
  from spaCy's lexemes of a blank English vocab, so that sklearn-crfsuite and
  the FeatureCRF see the same values. A template window that leaves the
  sentence gives a padding value, as FeatureCRF's hashing does; a constant
  ``bias`` attribute is crfsuite's counterpart of the per-label bias.
* :func:`chunking_features`: CRFsuite's own example/chunking.py attributes of
  ``WORD POS CHUNK`` rows, for the CoNLL-2000 comparisons that run CRFsuite as
  its authors do.

:func:`fit_and_decode` featurizes the training sentences, fits, then times
featurize + predict on the test sentences (best of ``decode_runs``); what
differs between benchmarks (the features, the L-BFGS settings, a warm-up,
the predict-only figure) are its parameters. :func:`phase_fit_and_decode` is
the whole crfsuite system of the UNER, EWT UPOS and morphology benchmarks.
"""

import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from common import Sentence, Stopwatch, best_of, disk_bytes

# CRFsuite's example/chunking.py: fields "w pos y", these attribute templates,
# and __BOS__ / __EOS__ on the first and last token. A template whose window
# leaves the sentence gives no attribute (crfutils.apply_templates).
CHUNKING_TEMPLATES = (
    (("w", -2),), (("w", -1),), (("w", 0),), (("w", 1),), (("w", 2),),
    (("w", -1), ("w", 0)), (("w", 0), ("w", 1)),
    (("pos", -2),), (("pos", -1),), (("pos", 0),), (("pos", 1),), (("pos", 2),),
    (("pos", -2), ("pos", -1)), (("pos", -1), ("pos", 0)),
    (("pos", 0), ("pos", 1)), (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)), (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)
_FIELD = {"w": 0, "pos": 1}
_CHUNKING_NAMES = ["|".join(f"{f}[{o}]" for f, o in t) for t in CHUNKING_TEMPLATES]


def chunking_features(sent: Sentence) -> List[List[str]]:
    """CRFsuite's chunking attributes of one sentence (``name=value`` strings)
    from its ``WORD POS ...`` rows."""
    n = len(sent)
    items: List[List[str]] = [[] for _ in range(n)]
    for name, template in zip(_CHUNKING_NAMES, CHUNKING_TEMPLATES):
        for t in range(n):
            values = []
            for field, offset in template:
                p = t + offset
                if not 0 <= p < n:
                    break
                values.append(sent[p][_FIELD[field]])
            else:
                items[t].append(f"{name}={'|'.join(values)}")
    if n:
        items[0].append("__BOS__")
        items[-1].append("__EOS__")
    return items


class LexemeFeatures:
    """String values of template attributes, read from spaCy lexemes of a blank
    English vocab (cached per word type)."""

    BOOL = {"IS_ALPHA", "IS_ASCII", "IS_DIGIT", "IS_LOWER", "IS_UPPER", "IS_TITLE", "IS_PUNCT",
            "IS_SPACE", "IS_STOP", "IS_BRACKET", "IS_QUOTE", "IS_LEFT_PUNCT", "IS_RIGHT_PUNCT",
            "IS_CURRENCY", "LIKE_NUM", "LIKE_URL", "LIKE_EMAIL"}
    TEXT = {"ORTH": "orth_", "LOWER": "lower_", "NORM": "norm_", "SHAPE": "shape_",
            "PREFIX": "prefix_", "SUFFIX": "suffix_"}

    def __init__(self, attrs: Sequence[str]) -> None:
        import spacy

        from spacy_crf.feature_sources.brown_clusters import cluster_bits

        self.vocab = spacy.blank("en").vocab
        self.attrs = list(attrs)
        self.cluster_masks = {a: (1 << cluster_bits(a)) - 1 if cluster_bits(a) else -1
                              for a in self.attrs if cluster_bits(a) is not None}
        if self.cluster_masks:  # the same table the crf_tagger reads: spacy-lookups-data's
            from spacy.lookups import load_lookups

            table = load_lookups("en", ["lexeme_cluster"]).get_table("lexeme_cluster")
            self.vocab.lookups.add_table("lexeme_cluster", table)
        for attr in self.attrs:
            if not (attr in self.BOOL or attr in self.TEXT or attr == "LENGTH"
                    or attr in self.cluster_masks
                    or attr[:-1] in ("PREFIX", "SUFFIX") and attr[-1] in "1234"):
                raise ValueError(f"no crfsuite rendering of template attribute {attr}")
        self.cache: Dict[str, Dict[str, str]] = {}

    def __call__(self, word: str) -> Dict[str, str]:
        values = self.cache.get(word)
        if values is None:
            lex = self.vocab[word]
            lower = lex.lower_
            values = {}
            for attr in self.attrs:
                if attr in self.BOOL:
                    values[attr] = "1" if getattr(lex, attr.lower()) else "0"
                elif attr in self.TEXT:
                    values[attr] = getattr(lex, self.TEXT[attr])
                elif attr == "LENGTH":
                    values[attr] = str(lex.length)
                elif attr in self.cluster_masks:  # Token.cluster, as spaCy v2's models read it
                    values[attr] = str(lex.cluster & self.cluster_masks[attr])
                elif attr.startswith("PREFIX"):
                    values[attr] = lower[:int(attr[-1])]
                else:
                    values[attr] = lower[-int(attr[-1]):]
            self.cache[word] = values
        return values


class CrfsuiteFeaturizer:
    """One crfsuite attribute dict per token: ``{template name: joined values}``."""

    def __init__(self, templates: Sequence[str]) -> None:
        from spacy_crf.features.templates import FeatureTemplates

        parsed = FeatureTemplates(templates)
        if parsed.uses_tree:
            raise ValueError("tree templates have no crfsuite rendering here")
        self.names = parsed.names
        self.templates = [tuple((p.attr, p.offset) for p in t) for t in parsed.templates]
        attrs = sorted({a for t in self.templates for a, _ in t})
        self.lexemes = LexemeFeatures(attrs)

    def sentence(self, words: Sequence[str]) -> List[Dict[str, Any]]:
        values = [self.lexemes(w) for w in words]
        n = len(words)
        items = []
        for i in range(n):
            feats: Dict[str, Any] = {"bias": 1.0}
            for name, template in zip(self.names, self.templates):
                parts = []
                for attr, off in template:
                    j = i + off
                    parts.append(values[j][attr] if 0 <= j < n else f"<PAD{off:+d}>")
                feats[name] = "|".join(parts)
            items.append(feats)
        return items


def fit_and_decode(train: Sequence[Any], train_labels: Sequence[Sequence[str]],
                   test: Sequence[Any], featurize: Callable[[Any], List[Any]],
                   params: Dict[str, Any], model_file: Optional[str] = None, *,
                   decode_runs: int = 1, warm_up: bool = False,
                   predict_only: bool = False) -> Dict[str, Any]:
    """sklearn-crfsuite as a benchmark system: featurize train, ``fit``, then time
    featurize + predict on test.

    Parameters
    ----------
    train, test : sequence
        The sentences, each whatever ``featurize`` reads (its words, or its
        ``WORD POS ...`` rows); ``len`` of one is its number of tokens.
    train_labels : sequence of sequence of str
        The gold label of every training token.
    featurize : callable
        One sentence's crfsuite attributes, one item per token
        (:meth:`CrfsuiteFeaturizer.sentence`, :func:`chunking_features`).
    params : dict
        ``sklearn_crfsuite.CRF`` arguments (algorithm, c1, c2, max_iterations).
    model_file : str, optional
        Where crfsuite writes its model (its size is the model size); by
        default a temporary file, removed at the end.
    decode_runs : int
        Timed featurize + predict runs; the best is reported.
    warm_up : bool
        One untimed featurize + predict first: a featurizer that caches per word
        type (:class:`LexemeFeatures`) has the test types then, as the warm-up of
        the spaCy systems leaves the test words' lexemes in their vocab.
    predict_only : bool
        Also time predict alone on features computed beforehand (best of
        ``decode_runs``): ``predict_only_s``, ``predict_only_tokens_per_s``.

    Returns
    -------
    dict
        ``featurize_train_s`` and ``train_s`` (the fit alone) with its CPU share,
        the L-BFGS figures (iterations, final loss, active features), the
        number of attributes and labels, ``model_bytes``, the decode times and
        ``pred`` (one label list per test sentence).
    """
    import sklearn_crfsuite

    with tempfile.TemporaryDirectory() as scratch:
        model_path = Path(model_file) if model_file else Path(scratch) / "crfsuite.model"
        with Stopwatch() as feat:
            X_train = [featurize(sentence) for sentence in train]
        y_train = [list(labels) for labels in train_labels]
        crf = sklearn_crfsuite.CRF(model_filename=str(model_path), **params)
        with Stopwatch() as fit:
            crf.fit(X_train, y_train)
        last = crf.training_log_.last_iteration if crf.training_log_ else {}
        del X_train, y_train

        def featurize_and_predict() -> List[List[str]]:
            return crf.predict([featurize(sentence) for sentence in test])

        if warm_up:
            featurize_and_predict()
        decode = best_of(decode_runs, featurize_and_predict)
        n_tokens = sum(len(sentence) for sentence in test)
        result = {
            "params": dict(params),
            "featurize_train_s": feat.wall_s,
            "train_s": fit.wall_s,
            "train_cpu_share": fit.cpu_share,
            "iterations": last.get("num"),
            "final_loss": last.get("loss"),
            "active_features": last.get("active_features"),
            "num_attributes": crf.num_attributes_,
            "n_labels": len(crf.classes_),
            "model_bytes": disk_bytes(model_path),
            "n_test_docs": len(test),
            "n_test_tokens": n_tokens,
            "decode_s": decode["best_s"],
            "decode_runs_s": decode["runs_s"],
            "decode_cpu_share": decode["cpu_share"],
            "decode_tokens_per_s": n_tokens / decode["best_s"],
            "pred": [list(tags) for tags in decode["result"]],
        }
        if predict_only:
            X_test = [featurize(sentence) for sentence in test]
            only = best_of(decode_runs, lambda: crf.predict(X_test))
            result["predict_only_s"] = only["best_s"]
            result["predict_only_tokens_per_s"] = n_tokens / only["best_s"]
    return result


def phase_fit_and_decode(train: Sequence[Tuple[List[str], List[str]]],
                         test_words: Sequence[List[str]], templates: List[str],
                         params: Dict[str, Any], model_file: str,
                         decode_runs: int) -> Dict[str, Any]:
    """sklearn-crfsuite over a config's templates (:func:`fit_and_decode`, with a
    warm-up and the predict-only figure).

    Meant to run in a fresh process (``common.run_isolated``, which adds the
    process's ``peak_rss_mb``: crfsuite trains and decodes in that one process).

    Parameters
    ----------
    train : sequence of (words, labels)
        The training sentences.
    test_words : sequence of list of str
        The words of each test sentence.
    templates : list of str
        The spacy-crf config's feature templates (rendered by
        :class:`CrfsuiteFeaturizer`).
    params : dict
        ``sklearn_crfsuite.CRF`` arguments (algorithm, c1, c2, max_iterations).
    model_file : str
        Where crfsuite writes its model (its size is the model size).
    decode_runs : int
        Timed decode runs; the best is reported.

    Returns
    -------
    dict
        :func:`fit_and_decode`'s figures (but ``predict_only_s``), the number of
        templates and the attributes of one example token.
    """
    featurizer = CrfsuiteFeaturizer(templates)
    result = fit_and_decode([words for words, _ in train], [tags for _, tags in train],
                            test_words, featurizer.sentence, params, model_file,
                            decode_runs=decode_runs, warm_up=True, predict_only=True)
    del result["predict_only_s"]
    first = test_words[0]
    result.update(
        params=dict(params, all_possible_transitions="default (False)",
                    all_possible_states="default (False)"),
        n_templates=len(featurizer.names),
        example_attributes=sorted(f"{k}={v}" for k, v in
                                  featurizer.sentence(first)[min(1, len(first) - 1)].items()))
    return result
