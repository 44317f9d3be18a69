"""Targets are a registry: a new target is one module that registers itself.

The target below is all it takes to add one (its module would live in
``spacy_crf/targets/``, or in a package of its own with an entry point in the
group ``spacy_crf_targets``): a ``crf_tagger`` with ``target = "stop"`` then
trains, predicts, scores and names what it assigns with no other change. And
no module outside ``spacy_crf/targets/`` asks a target's name any more.
"""

import ast
from typing import Callable, List

import catalogue
import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.util import registry
from spacy.vocab import Vocab

from spacy_crf import targets
from spacy_crf.targets import Target, make_target, register_target, registered_targets

from conftest import PACKAGE
#: the extension the new target writes its predictions to
GUESS = "stop_guess"
STOP, WORD = "STOP", "WORD"


@register_target
class StopTarget(Target):
    """Whether a token is a stop word, ``STOP`` or ``WORD``: gold read from the
    reference's ``Token.is_stop``, predictions written to ``token._.stop_guess``
    (a token's label is its guess where one is written, else what ``is_stop``
    says, so token accuracy compares the guesses with the reference)."""

    name = score_attr = "stop"
    assigns = (f"token._.{GUESS}",)

    def __init__(self) -> None:
        super().__init__()
        if not Token.has_extension(GUESS):
            Token.set_extension(GUESS, default=None)

    def key_of(self, label: str, vocab: Vocab) -> int:
        return vocab.strings.add(label)

    def labels_of(self, doc: Doc) -> List[str]:
        return [token._.get(GUESS) or (STOP if token.is_stop else WORD) for token in doc]

    def reference_keys(self, doc: Doc) -> np.ndarray:
        return np.asarray([doc.vocab.strings.add(label) for label in self.labels_of(doc)],
                          dtype=np.uint64)

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        for token, label in zip(doc, self._label_array[ids]):
            token._.set(GUESS, label)

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: self.labels_of(token.doc)[token.i]


TEXTS = ["the cat sat on the mat", "a dog ran to the park", "it is what it is",
         "she gave him a book about the war", "we went there and came back"]


def teardown_module():
    # (the process's other tests list the registered targets: leave it as it was)
    catalogue._remove((*registry.crf_targets.namespace, StopTarget.name))


def stop_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "stop"})
    return nlp


def examples_of(nlp) -> List[Example]:
    return [Example(nlp.make_doc(text), nlp.make_doc(text)) for text in TEXTS]


def test_the_new_target_is_registered_and_made_by_name():
    assert registered_targets()["stop"] is StopTarget
    assert isinstance(make_target("stop"), StopTarget)
    # E006 lists it with the package's own
    with pytest.raises(ValueError, match=r"\[CRF-E006\] Unknown target 'stops'. Use 'tag', "
                                         r".*'_\.NAME' \(a custom token extension, e.g\. "
                                         r"'_\.chunk'\) or 'stop'\."):
        make_target("stops")


def test_a_component_of_the_new_target_trains_predicts_and_scores(tmp_path):
    nlp = stop_nlp()
    examples = examples_of(nlp)
    optimizer = nlp.initialize(lambda: examples)
    assert nlp.get_pipe("crf_tagger").labels == (STOP, WORD)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    predicted = [[token._.get(GUESS) for token in nlp(text)] for text in TEXTS]
    gold = [[STOP if token.is_stop else WORD for token in nlp.make_doc(text)] for text in TEXTS]
    assert predicted == gold
    scores = nlp.evaluate(examples)
    assert scores["stop_acc"] == scores["crf_score"] == scores["crf_acc"] == 1.0
    # what it writes and weighs, as its target says
    meta = nlp.get_pipe_meta("crf_tagger")
    assert meta.assigns == [f"token._.{GUESS}"]
    assert meta.default_score_weights == {"stop_acc": 1.0}
    assert nlp.config["training"]["score_weights"] == {"stop_acc": 1.0}
    assert nlp.analyze_pipes()["summary"]["crf_tagger"]["assigns"] == [f"token._.{GUESS}"]
    # and it saves and loads as any target
    nlp.to_disk(tmp_path / "stop")
    loaded = spacy.load(tmp_path / "stop")
    assert [[t._.get(GUESS) for t in loaded(text)] for text in TEXTS] == predicted


def test_the_package_targets_register_in_the_order_e006_names_them():
    assert list(registered_targets())[:9] == ["tag", "pos", "dep", "morph", "lemma",
                                              "sent_starts", "ents", "spans:KEY", "_.NAME"]
    assert make_target("spans:sc").spans_key == "sc"
    assert make_target("_.chunk").assigns == ("token._.chunk",)


# ------------------------------------------- nothing else asks a target's name


def _target_strings():
    """The strings that name targets: the registered names, and the prefixes
    of those that are patterns (``spans:``, ``_.``)."""
    names, prefixes = set(), set()
    for name in registered_targets():
        for sep in (":", "."):
            if sep in name:
                prefixes.add(name.split(sep)[0] + sep)
                break
        else:
            names.add(name)
    return names, prefixes


def _target_classes():
    return {name for name, value in vars(targets).items()
            if isinstance(value, type) and issubclass(value, Target)}


def _strings_in(node: ast.AST) -> List[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _strings_in(elt)]
    return []


def _name_tests(source: str, where: str) -> List[str]:
    """Where a module's ``source`` compares a value with a target's name,
    tests a string for a target prefix or asks whether an object is of a
    target class."""
    names, prefixes = _target_strings()
    classes = _target_classes()
    found: List[str] = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(s in names for operand in operands for s in _strings_in(operand)):
                found.append(f"{line} compares with a target name")
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in ("startswith", "endswith")
                    and any(s in prefixes for arg in node.args for s in _strings_in(arg))):
                found.append(f"{line} tests a target prefix")
            if (isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2
                    and any(isinstance(n, ast.Name) and n.id in classes
                            for n in ast.walk(node.args[1]))):
                found.append(f"{line} tests a target class")
    return found


def test_the_name_tests_are_found():
    # (the check itself: the kinds of test this package had are caught)
    source = ('if target == "ents" or x in ("dep", "y"):\n    pass\n'
              'ok = target.startswith("spans:") or isinstance(t, SpanGroupTarget)\n')
    assert len(_name_tests(source, "probe")) == 4


def test_no_module_outside_the_targets_asks_a_target_name():
    outside = [path for path in sorted(PACKAGE.rglob("*.py"))
               if (PACKAGE / "targets") not in path.parents]
    assert outside
    found = [hit for path in outside
             for hit in _name_tests(path.read_text(encoding="utf8"),
                                    str(path.relative_to(PACKAGE)))]
    assert not found, found
