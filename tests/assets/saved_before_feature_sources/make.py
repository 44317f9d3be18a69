"""Save small trained pipelines whose templates read every feature source (Brown
clusters, vector clusters, a gazetteer of a file, a ruler and the training
data), with the code on PYTHONPATH, and what they predict
(``python make.py OUT [CASE ...]``: every case, or those named).

Saved before feature sources became a registry: the word tables' format must
still load, and the pipelines predict bit-identically."""
import json, sys
from pathlib import Path
import numpy as np
import spacy
from spacy.training import Example
from spacy.vectors import Vectors

OUT = Path(sys.argv[1])
PATHS = {"the": "0010", "a": "0011", "cat": "110", "dog": "1101", "Paris": "10",
         "London": "100", "sat": "0111", "Alice": "1110", "Bob": "1111"}
TRAIN = [("Alice flew to Paris", [(0, 5, "PER"), (14, 19, "LOC")]),
         ("Bob lives in Rome", [(0, 3, "PER"), (13, 17, "LOC")]),
         ("the cat sat in London", [(15, 21, "LOC")]),
         ("a dog met Carol in Oslo", [(10, 15, "PER"), (19, 23, "LOC")])]
TEXTS = ["Alice sat in new york", "the dog ran to Oslo", "Bob met Carol in Paris",
         "a cat flew to London today"]
MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": 4096, "boost_updates": 0,
         "templates": ["NORM[-1..1]", "SUFFIX3", "VECTOR_CLUSTER3[-1..1]", "VECTOR_CLUSTER2",
                       "GAZETTEER[-1..1]", "GAZETTEER[0]|NORM[0]"],
         "cluster_templates": ["CLUSTER[-1..1]", "CLUSTER2"]}
CASES = {"ents_every_source": {"gazetteer_ruler": "entity_ruler", "gazetteer_from_training": True,
                               "gazetteer_case_sensitive": False},
         "ents_gazetteer_file": {"gazetteer_case_sensitive": True}}


def vectors(nlp):
    rng = np.random.default_rng(0)
    groups = [["cat", "dog"], ["Paris", "London", "Rome", "Oslo"], ["sat", "ran", "flew", "met"]]
    words, rows = [], []
    for i, names in enumerate(groups):
        for w in names:
            words.append(w)
            rows.append(np.eye(8, dtype=np.float32)[i] * 10 + rng.normal(0, 0.5, 8))
    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=np.asarray(rows, dtype=np.float32),
                                keys=words)


for name, settings in CASES.items():
    if len(sys.argv) > 2 and name not in sys.argv[2:]:
        continue
    nlp = spacy.blank("en")
    nlp.vocab.lookups.add_table("lexeme_cluster", {w: int(p[::-1], 2) for w, p in PATHS.items()})
    vectors(nlp)
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "CITY", "pattern": "Oslo"}])
    nlp.add_pipe("crf_tagger", config={"target": "ents", "store_confidence": True, "model": MODEL})
    gaz = OUT / f"{name}.gazetteer.tsv"
    gaz.parent.mkdir(parents=True, exist_ok=True)
    gaz.write_text("CITY\tnew york\nCITY\tParis\nPER\tcarol\n", encoding="utf8")
    nlp.config["initialize"]["components"]["crf_tagger"] = {"gazetteer": str(gaz), **settings}
    examples = [Example.from_dict(nlp.make_doc(t), {"entities": e}) for t, e in TRAIN]
    with nlp.select_pipes(disable=["entity_ruler"]):
        optimizer = nlp.initialize(lambda: examples)
        for _ in range(8):
            nlp.update(examples, sgd=optimizer)
    gaz.unlink()
    nlp.to_disk(OUT / name)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(t) for t in TEXTS]
    np.save(OUT / name / "emissions.npy", pipe.model.predict(docs).emissions)
    docs = [pipe(d) for d in docs]
    expected = {"texts": TEXTS, "labels": [[t.ent_iob_ + "-" + t.ent_type_ for t in d] for d in docs],
                "token_confidence": [[t._.crf_confidence for t in d] for d in docs]}
    (OUT / name / "expected.json").write_text(json.dumps(expected))
    print(name, expected["labels"])
