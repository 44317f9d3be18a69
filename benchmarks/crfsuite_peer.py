"""The sklearn-crfsuite peer's features: a spacy-crf config's templates
rendered as crfsuite attributes (``TEMPLATE=value|value``), with the token
attributes read from spaCy's lexemes of a blank English vocab, so that
sklearn-crfsuite and the FeatureCRF see the same values. A template window
that leaves the sentence gives a padding value, as FeatureCRF's hashing does;
a constant ``bias`` attribute is crfsuite's counterpart of the per-label bias.

Used by the UNER and EWT UPOS benchmarks: :func:`phase_fit_and_decode` is
their whole crfsuite system.
"""

from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from common import Stopwatch, best_of, disk_bytes


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


def phase_fit_and_decode(train: Sequence[Tuple[List[str], List[str]]],
                         test_words: Sequence[List[str]], templates: List[str],
                         params: Dict[str, Any], model_file: str,
                         decode_runs: int) -> Dict[str, Any]:
    """sklearn-crfsuite as a benchmark system: featurize train, ``fit``, then time
    featurize + predict on the test words.

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
        Train and decode times and CPU shares, L-BFGS figures, model size and
        ``pred`` (one label list per test sentence).
    """
    import sklearn_crfsuite

    featurizer = CrfsuiteFeaturizer(templates)
    with Stopwatch() as feat:
        X_train = [featurizer.sentence(words) for words, _ in train]
    y_train = [list(tags) for _, tags in train]
    crf = sklearn_crfsuite.CRF(model_filename=str(model_file), **params)
    with Stopwatch() as fit:
        crf.fit(X_train, y_train)
    last = crf.training_log_.last_iteration if crf.training_log_ else {}
    del X_train, y_train

    def featurize_and_predict() -> List[List[str]]:
        return crf.predict([featurizer.sentence(words) for words in test_words])

    # warm-up: fills the lexeme cache with the test types, as the warm-up of the
    # spaCy systems leaves the test words' lexemes in their vocab
    featurize_and_predict()
    decode = best_of(decode_runs, featurize_and_predict)
    X_test = [featurizer.sentence(words) for words in test_words]
    predict_only = best_of(decode_runs, lambda: crf.predict(X_test))
    n_tokens = sum(len(words) for words in test_words)
    first = test_words[0]
    return {
        "params": dict(params, all_possible_transitions="default (False)",
                       all_possible_states="default (False)"),
        "n_templates": len(featurizer.names),
        "featurize_train_s": feat.wall_s,
        "train_s": fit.wall_s,
        "train_cpu_share": fit.cpu_share,
        "iterations": last.get("num"),
        "final_loss": last.get("loss"),
        "active_features": last.get("active_features"),
        "num_attributes": crf.num_attributes_,
        "n_labels": len(crf.classes_),
        "model_bytes": disk_bytes(Path(model_file)),
        "n_test_docs": len(test_words),
        "n_test_tokens": n_tokens,
        "decode_s": decode["best_s"],
        "decode_runs_s": decode["runs_s"],
        "decode_cpu_share": decode["cpu_share"],
        "decode_tokens_per_s": n_tokens / decode["best_s"],
        "predict_only_tokens_per_s": n_tokens / predict_only["best_s"],
        "pred": [list(tags) for tags in decode["result"]],
        "example_attributes": sorted(f"{k}={v}" for k, v in
                                     featurizer.sentence(first)[min(1, len(first) - 1)].items()),
    }
