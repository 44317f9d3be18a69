"""Save small trained pipelines with the code on PYTHONPATH, and what they predict
(``python make.py OUT [CASE ...]``: every case, or those named)."""
import json, sys
from pathlib import Path
import spacy
from spacy.tokens import Doc
from spacy.training import Example

OUT = Path(sys.argv[1])
WORDS = [["the", "dog", "saw", "a", "cat", "."], ["a", "cat", "ran", "home", "."],
         ["the", "old", "man", "walked", "slowly", "."], ["Alice", "met", "Bob", "in", "Paris", "."]]
HEADS = [[1, 2, 2, 4, 2, 2], [1, 2, 2, 2, 2], [2, 2, 3, 3, 3, 3], [1, 1, 1, 4, 1, 1]]
DEPS = [["det", "nsubj", "ROOT", "det", "obj", "punct"], ["det", "nsubj", "ROOT", "advmod", "punct"],
        ["det", "amod", "nsubj", "ROOT", "advmod", "punct"], ["nsubj", "ROOT", "obj", "case", "obl", "punct"]]
POS = [["DET", "NOUN", "VERB", "DET", "NOUN", "PUNCT"], ["DET", "NOUN", "VERB", "ADV", "PUNCT"],
       ["DET", "ADJ", "NOUN", "VERB", "ADV", "PUNCT"], ["PROPN", "VERB", "PROPN", "ADP", "PROPN", "PUNCT"]]
ENTS = [["O"] * 6, ["O"] * 5, ["O"] * 6, ["B-PER", "O", "B-PER", "O", "B-LOC", "O"]]
MODEL = {"@architectures": "spacy-crf.FeatureCRF.v1", "templates": ["NORM[-1..1]", "SUFFIX2", "SHAPE"],
         "n_buckets": 1024, "cluster_templates": None, "boost_updates": 0}
CASES = {
    "chain_pos": {"target": "pos", "structure": "chain", "store_confidence": True, "model": MODEL},
    "chain_ents": {"target": "ents", "structure": {"@structures": "spacy-crf.Chain.v1", "order": 1},
                   "store_confidence": True, "model": MODEL},
    "tree_pos": {"target": "pos", "structure": "tree", "store_confidence": True,
                 "model": {**MODEL, "n_relations": 3}},
    "chain_tree_pos": {"target": "pos", "structure": "chain_tree", "store_confidence": True, "model": MODEL},
    "transitions_pos": {"target": "pos", "structure": "chain", "store_confidence": True,
                        "model": {**MODEL, "transition_templates": ["SUFFIX2"], "transition_buckets": 512}},
    # saved at 2511cc2, the last commit before the tree's settings moved into its block
    "tree_transitions_pos": {"target": "pos", "structure": "tree", "store_confidence": True,
                             "model": {**MODEL, "n_relations": 2, "tree_templates": ["head:NORM", "HEAD_DIST"],
                                       "transition_templates": ["head:NORM"], "transition_buckets": 512}},
}


def doc(vocab, i, gold=False, parse=True):
    kw = {"heads": HEADS[i], "deps": DEPS[i]} if parse else {}
    if gold:
        kw.update(pos=POS[i], ents=ENTS[i])
    return Doc(vocab, words=WORDS[i], **kw)


for name, config in CASES.items():
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config=config)
    examples = [Example(doc(nlp.vocab, i), doc(nlp.vocab, i, gold=True)) for i in range(len(WORDS))]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(8):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(OUT / name)
    attr = "ents" if config["target"] == "ents" else "pos"
    docs = [nlp(doc(nlp.vocab, i)) for i in range(len(WORDS))]
    expected = {"labels": [[t.ent_iob_ + "-" + t.ent_type_ if attr == "ents" else t.pos_ for t in d] for d in docs],
                "token_confidence": [[t._.crf_confidence for t in d] for d in docs]}
    (OUT / name / "expected.json").write_text(json.dumps(expected))
    print(name, expected["labels"][3])
