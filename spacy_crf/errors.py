"""Numbered error and warning messages, in one place (as spaCy does).

Every message names the problem and the fix. Code raises e.g.
``ValueError(Errors.E001.format(...))``; the code is part of the text, with
the prefix ``CRF-`` (``[CRF-E001]``), so users who search for it find ours,
not spaCy's own E001.
"""


import warnings
from typing import Dict


def warn(message: str) -> None:
    """Warn (a UserWarning) as coming from spacy_crf, not from a line of its code.

    ``warnings.warn`` prints the source line of its caller under the message,
    a line of our code that tells a user nothing; this prints the message
    alone. Python's filters apply as usual, and the same text is said once.
    """
    warnings.warn_explicit(message, UserWarning, "spacy_crf", 0, module="spacy_crf",
                           registry=_REGISTRY)


_REGISTRY: Dict = {}


#: what every code of ours starts with: spaCy's own codes are E001, W001, ...
#: (and mean other things), so a search for one of ours finds ours
PREFIX = "CRF-"


def is_ours(message: str) -> bool:
    """Whether an exception's message is one of ours (starts with a code)."""
    return message.startswith(f"[{PREFIX}")


class _Codes(type):
    def __getattribute__(self, code: str) -> str:
        msg = super().__getattribute__(code)
        if code.startswith("__"):
            return msg
        return f"[{PREFIX}{code}] {msg}"


class Errors(metaclass=_Codes):
    E001 = ("Unknown feature attribute '{attr}' in template '{template}'. Use one of: "
            "{options}.")
    E002 = ("Cannot parse feature template '{template}': {why}. A template is parts "
            "joined by '|', each 'ATTR' or 'ATTR[offset]', e.g. 'NORM[-1]|NORM[0]'; a "
            "single part may give a window, e.g. 'NORM[-2..2]'.")
    E003 = "Window offset {offset} in template '{template}' is out of range: use -{max} to {max}."
    E004 = "The feature template list is empty: give at least one template, e.g. ['NORM[0]']."
    E005 = "'{name}' must be a positive integer, got {value!r}."
    # {options}: the registered targets (spacy_crf.targets.registry), e.g. 'tag', 'pos',
    # 'dep', 'morph', 'lemma', 'sent_starts', 'ents', 'spans:KEY' or '_.NAME' (a custom
    # token extension, e.g. '_.chunk')
    E006 = "Unknown target '{target}'. Use {options}."
    E018 = ("Target '{target}' decodes spans with the scheme's transition constraints, "
            "which structure {structure} does not apply. Use "
            "structure = \"chain\" (order = 1 or 2), \"pruned_chain\" or \"semi_markov\".")
    E007 = ("The component '{name}' has no labels: it was not initialized. Call "
            "nlp.initialize() (or train it with `spacy train`) before using it, or load a "
            "trained pipeline. Under spacy train, a component in [training] "
            "frozen_components is not initialized: source it from a trained pipeline "
            "([components.{name}] source = PATH), or take it out of frozen_components.")
    E008 = ("No labels found for target '{target}' in the training examples of '{name}'. "
            "Check that the corpus carries that annotation (for '_.NAME' targets, that the "
            ".spacy files were saved with store_user_data=True; for '_.NAME' and spans:KEY "
            "targets, that [corpora.train] has max_length = 0 and gold_preproc = false: "
            "spaCy's reader rebuilds the docs it cuts or re-tokenizes without doc.user_data "
            "and doc.spans), or pass labels to initialize().")
    E009 = ("The CRF loss of '{name}' became {value}: training diverged. Lower the learning "
            "rate, or add gradient clipping ([training.optimizer] grad_clip).")
    E010 = ("Cannot load '{name}' from {path}: {why}. The directory is missing a file or was "
            "written by an incompatible version; re-save the pipeline with nlp.to_disk() or "
            "retrain it.")
    E011 = ("The model of '{name}' has {found} labels but the component has {expected}: the "
            "config and the weights do not match. Retrain, or load the pipeline they were "
            "saved with.")
    E012 = "Unknown structure '{structure}'. Use one of {allowed}."
    E013 = ("The emission scores have {n_labels} label columns but '{name}' expects {expected} "
            "(one per label, per CRF of its structure). This is a bug (the model and the label set went out of step); please "
            "report it.")
    E015 = ("'{name}' needs a dependency parse on every token ({why}) but a Doc has none, "
            "or has one on only some of its tokens (their DEP is unset). Add a parser "
            "before it in the pipeline (or list one in [training] annotating_components), "
            "copy gold trees onto the docs with the augmenter spacy-crf.copy_attrs.v1 "
            "(attrs [\"HEAD\", \"DEP\"]), or use structure = \"chain\" without tree features. "
            "To evaluate a model trained on gold trees, python -m spacy_crf.evaluate MODEL "
            "DATA.spacy copies them onto the docs as its training did.")
    E016 = ("Invalid dependency tree in a Doc: {why}. Heads must form a forest (no "
            "cycles, heads inside the doc).")
    E017 = ("Target 'dep' predicts the relation labels, so its features must not read DEP "
            "(found in templates {templates}) and a tree block must have n_relations = 1.")
    E019 = ("n_best must be a whole number from 0 (off) to 1000, on a structure with a "
            "k-best decoder: structure = \"chain\" (order = 1 or 2, without "
            "transition_templates), structure = \"pruned_chain\" or structure = "
            "\"semi_markov\"; got {value}.")
    E020 = ("The training corpus of '{name}' has no examples{where}. Check that "
            "[paths.train] points at a non-empty .spacy file (python -m spacy debug data "
            "CONFIG shows what it holds).")
    E021 = ("learn_rate_scale must be a number above 0 (it multiplies the optimizer's "
            "learning rate for the CRF's weights), got {value!r}.")
    E030 = ("python -m spacy_crf.fit trains one crf_tagger component with a "
            "spacy-crf.FeatureCRF model, but {why}. Pipeline: {pipeline}. Name the "
            "component with --component NAME, or train the pipeline with spacy train.")
    E031 = ("The model of this crf_tagger is '{model}', not spacy-crf.FeatureCRF: "
            "python -m spacy_crf.fit fits hashed-feature CRFs only. {route}")
    E032 = ("{name} must be {what}, got {value!r}.")
    E033 = ("python -m spacy_crf.fit trains only '{name}', but the pipeline also has the "
            "trainable components {others}, which [training] frozen_components does not "
            "list. Train them first (spacy train) and source them frozen, or remove them.")
    E034 = ("The objective of the batch trainer became {value} (iteration {iteration}): a "
            "gold labelling has probability zero or the weights diverged. Check the "
            "corpus' labels, or raise --c2 to keep the weights bounded.")
    E035 = ("The batch trainer's features of '{name}' do not give the model's own emission "
            "scores: the hashed rows are mapped differently. This is a bug; please report it.")
    E036 = ("python -m spacy_crf.fit cannot minimise '{name}''s loss = {loss!r}: its L-BFGS "
            "needs a smooth objective whose minimum is a model, which {loss!r} is not. Set "
            "a loss it supports, {supported} (e.g. --components.{name}.loss nll), or train "
            "that objective with spacy train.")
    E037 = ("The {split} corpus of the config reads '{path}', which does not exist. "
            "Point it at a .spacy file or folder: --paths.{split} PATH (or fix "
            "[corpora.{split}] path in the config).")
    E040 = ("Unknown loss {loss!r} for crf_tagger. Use one of: {allowed} (e.g. "
            "[components.crf_tagger] loss = \"nll\").")
    E050 = ("Span probabilities need the spans of a well-formed labelling: sorted by start, "
            "non-empty, each inside one sequence, with label ids in [0, {n_labels}). Read "
            "them with schemes.codes_to_spans from labels that satisfy the scheme's "
            "constraints (the component's Viterbi labels always do).")
    E051 = ("Span probabilities are computed on chains: use structure = \"chain\" for span "
            "targets.")
    E052 = ("Dropout must be at least 0 and below 1 (the share of hashed features dropped "
            "in training), got {rate!r}. Set [training] dropout (or nlp.update(drop=...)) "
            "in that range.")
    E060 = ("Unknown scheme '{scheme}': use 'BIO' or 'BILUO' (how span targets tag their "
            "spans, e.g. [components.crf_tagger] scheme = \"BILUO\"; the names are "
            "case-sensitive).")
    E061 = ("'{tag}' is not a span tag: use O, or B-/I-/L-/U- and a type (e.g. 'B-PER'). "
            "The model of a span target ('ents', 'spans:KEY') scores tags of the scheme "
            "(its tags, cfg[\"labels\"]); initialize(labels=...) and add_label() also take "
            "types ('PER').")
    E062 = "Labels must be strings, got {label!r}: pass the label's text, e.g. add_label(\"NOUN\")."
    E063 = ("The sequence lengths sum to {n_tokens} tokens but there are {n_rows} rows of "
            "emission scores: the batch layout and the CRFScores come from different batches. "
            "Build both from the same docs (e.g. ChainLayout(batch_sequence_lengths(docs)) "
            "beside model.predict(docs)).")
    E064 = ("Relation groups of a tree must lie in [0, {n_groups}) (the model's n_relations), "
            "got {low}..{high}. Build them from the component's relations (cfg[\"relations\"]), "
            "or raise n_relations in the model.")
    E065 = ("n-best decoding needs structure = \"chain\" and k >= 1, got k = {k} with a "
            "{structure}. Decode trees with viterbi(), and ask for at least one labelling.")
    E066 = ("The model has no 'crf_potentials' layer, so it gives no CRF scores: use a "
            "spacy-crf architecture (spacy-crf.FeatureCRF.v2 or spacy-crf.NeuralCRF.v3) as "
            "the crf_tagger's model.")
    E067 = ("python -m spacy_crf.plots draws its figures with matplotlib, which is not "
            "installed: pip install matplotlib (or, in a spacy-crf checkout, pip install -e \".[plots]\").")
    E068 = ("Component '{name}' is not a crf_tagger (the pipeline has {pipes}): pass "
            "--component the name of a crf_tagger, or leave it out to take the first.")
    E069 = ("The pipeline has no crf_tagger (it has {pipes}): the plots show a crf_tagger's "
            "labels and weights; give as MODEL a pipeline trained with one.")

    E094 = ("order = {order} does not exist for structure = '{structure}': its orders are "
            "{available} (order = 1 scores label pairs; 2 label triples too; null, the default, "
            "is 2 for span targets and 1 for the others).")
    E095 = ("The component's label pairs (cfg[\"label_pairs\"]) name labels outside its "
            "{n_labels} labels: the saved cfg and model do not belong together. Retrain, or "
            "load the model directory as it was saved.")
    E096 = ("store_confidence on the span target '{target}' needs span probabilities, which "
            "the structure {structure} does not compute: use store_confidence = false, or "
            "a structure that does: spacy-crf.Chain.v1 (order 1 or 2; with "
            "transition_templates, order = 2), spacy-crf.PrunedChain.v1 or "
            "spacy-crf.SemiMarkov.v1.")
    E090 = ("Cannot join sentence {i} (sent_id {sid}: {words} ...) to the CoNLL-U file: "
            "{why}. Tried sent_id, the token sequence and the position. Pass the CoNLL-U "
            "split of the same sentences as --conllu.")
    E091 = ("A CoNLL NER line has one column: '{line}'. Lines are WORD [POS ...] TAG, "
            "separated by spaces or tabs, with blank lines between sentences.")
    E092 = ("--pos-as-tag reads the second column, but a line has only two: '{line}'. "
            "Leave out --pos-as-tag for WORD TAG files.")
    E093 = ("The tags of the sentence '{words} ...' are not IOB tags ({err}). "
            "The last column must hold O, B-TYPE or I-TYPE.")
    E097 = ("Cannot read documents from '{path}': {why}. INPUT is a directory of shards, "
            ".jsonl or .parquet files with one row per document holding 'id' and 'text'.")
    E098 = ("Cannot load the pipeline '{path}' to annotate with: {why}. MODEL is a directory "
            "written by nlp.to_disk or spacy train (e.g. training/model-best).")
    E099 = ("The pipeline '{path}' has no crf_tagger{named} (it has {pipes}). Pass "
            "--component with one of its crf_taggers, or a pipeline trained with one.")
    E100 = ("Cannot start or join the Dask cluster ({why}). Without --address a local "
            "cluster of --n-workers processes is started; with it, ADDR is a running "
            "scheduler's address (tcp://HOST:8786), which must be up and reachable. Where "
            "the engine is missing, install it with "
            "pip install \"dask[distributed]\" pyarrow (or, in a spacy-crf checkout, pip install -e \".[distributed]\").")
    E101 = ("OUTPUT '{output}' is {why}. Give annotate an output directory of its own, "
            "apart from INPUT.")
    E103 = ("The model '{model}' scores only the structure(s) {allowed}, not structure "
            "{structure}. Use {fix} with it, or a FeatureCRF / NeuralCRF model, which scores "
            "every structure.")
    E104 = ("'smoothing' of spacy-crf.HMM.v1 must be a number > 0 (added to the transition "
            "counts, and times P(tag) to the word-tag counts), got {value!r}.")
    E105 = ("transition_templates (input-dependent transitions) work with structure = "
            "\"chain\" (order 1 or 2) and \"tree\"; this component has structure "
            "{structure}. Remove transition_templates from the model (spacy-crf.FeatureCRF.v1), or "
            "use a chain or a tree block and give them there.")
    E106 = ("python -m spacy_crf.fit does not train transition_templates yet: train this "
            "config with python -m spacy train, or remove transition_templates.")
    E107 = ("The scores given to structure '{structure}' have no token transitions of shape "
            "{expected} (got {got}): it scores a model with transition_templates. Build the "
            "scores with such a model, or use the structure without them.")
    E102 = ("OUTPUT '{output}' holds shards annotated with another pipeline ({then}), not "
            "'{model}': finished shards are skipped, so the output would mix the two. Pass "
            "--overwrite to annotate everything again with this one, or a new OUTPUT.")
    E108 = ("structure = \"semi_markov\" labels segments, so it needs a span target "
            "(\"ents\" or \"spans:KEY\"); '{name}' has target '{target}'. Use structure = "
            "\"chain\" for token labels.")
    E109 = ("max_segment_length of {structure} must be an integer >= 0 (0: the longest gold "
            "span of the training data, capped at {cap}), got {value!r}.")
    E110 = ("python -m spacy_crf.fit does not train the semi-Markov CRF's segment features "
            "yet: train this config with python -m spacy train.")
    E111 = ("The scores given to structure 'semi_markov' have no segment scores of shape "
            "{expected} (got {got}): the structure wraps the component's model with "
            "segment features. Build the scores with the component's model.")
    E112 = ("sequence must be \"sentence\" (a CRF sequence per sentence where a parser, a "
            "senter or the corpus sets sentence boundaries, else per doc) or \"doc\" (one "
            "sequence per doc, whatever its sentence boundaries); got {value!r}.")
    E113 = ("structure = '{structure}' trains with loss = \"nll\" only (got loss = "
            "'{loss}'): it decodes from marginals, so it has no best labelling score for the "
            "perceptron or the hinge loss to compare. Set loss = \"nll\", or use structure = "
            "\"chain\" or \"tree\" for {loss}.")

    E114 = ("structure = \"chain_tree\" gives its chain the model's templates that read the "
            "words, but every template of this model reads the parse. Add word templates "
            "(e.g. \"NORM[-1..1]\", \"SUFFIX3\") to the model's templates.")
    E115 = ("structure = \"chain_tree\" needs a spacy-crf.FeatureCRF model (its chain and "
            "its tree each get a copy of the hashed features), got '{model}'. Use "
            "spacy-crf.FeatureCRF.v2, or structure = \"tree\" with this model.")
    E116 = ("python -m spacy_crf.fit does not train structure = \"chain_tree\" (two CRFs in "
            "one model): train this config with python -m spacy train.")

    E117 = ("structure = \"chain_tree\" reads emissions of shape (N, {expected}) for {n_labels} "
            "labels (the chain's scores, then the tree's), got {got}. Build the scores with "
            "the component's model.")
    E118 = ("A pool of experts needs two or more experts and one weight per expert, each "
            "above 0 and together 1 (got weights {weights} for {n} experts).")
    E119 = ("The experts of a pool must score the same things (emissions and label "
            "interactions), but only some of them have a score the others lack. Pool "
            "models of the same kind.")
    E120 = ("neural_weight must be a number strictly between 0 and 1: the share of the "
            "tok2vec's CRF in the pool with the hashed features' CRF (got {value!r}). "
            "The default is 0.2 (chosen on EWT UPOS dev); for the tok2vec alone, "
            "leave out templates.")
    E121 = ("structure = '{structure}' cannot train a pool of experts "
            "(spacy-crf.NeuralCRF.v3 with templates): {why}. Use structure = \"chain\", "
            "\"tree\" or order = 2, or spacy-crf.NeuralCRF.v1 (one CRF over the summed scores).")
    E122 = ("spacy-crf.fit_pool_weights.v1 (fitting a pool's weights on held-out data): "
            "{why}.")
    E123 = ("Cannot read the Brown cluster file {path}: {why}. Give Liang's 'paths' "
            "format (bits<TAB>word<TAB>count per line) or a JSON table {{\"word\": value}} "
            "as written by python -m spacy_crf.clusters import.")
    E124 = ("VECTOR_CLUSTERk templates cluster the pipeline's static vectors, but {why}. "
            "Add vectors in the default mode (spacy init vectors LANG VECTORS_FILE DIR, then "
            "[initialize] vectors = DIR), or leave the VECTOR_CLUSTERk templates out.")
    E125 = ("Cannot read the gazetteer: {why}. A gazetteer file has JSON lines "
            "{{\"label\": \"CITY\", \"pattern\": \"New York\"}} (.jsonl) or NAME<TAB>phrase "
            "lines (any other name).")
    E127 = ("boost_updates must be an integer of at least 0 (the updates that get a head "
            "start; 0 turns it off), got {value!r}.")
    E126 = ("The feature templates read {attrs}, but the component has no table for "
            "them. Word clusters, vector clusters, gazetteers and spaCy's lemma tables are "
            "read when the component is initialized: call nlp.initialize() (spacy train "
            "does), with a cluster table (spacy-lookups-data, nlp.vocab.lookups "
            "'lexeme_cluster', or [initialize.components.NAME] clusters = PATH), vectors, "
            "[initialize.components.NAME] gazetteer = PATH, or spacy-lookups-data's lemma "
            "tables for the language; or leave those templates out.")
    # E140-E159: issue 29 (fit, annotate, convert, order 2, divergence)
    E140 = ("The input shard '{path}' has the name annotate keeps for its list of bad rows "
            "in OUTPUT ({name}): its annotated copy would be overwritten by that list. "
            "Rename the shard (e.g. errors.jsonl) and run again.")
    E141 = ("Cannot write to OUTPUT '{output}' ({why}). Give annotate a directory it may "
            "create and write to, on a file system with free space.")
    E142 = ("The dev corpus '{path}' has no documents (an empty .spacy file, or a path "
            "with no .spacy file in it): every dev score would be 0.0 and model-best the "
            "first evaluation. Point --paths.dev at a .spacy file or folder of annotated "
            "docs (python -m spacy convert makes one).")
    E143 = ("--output '{path}' is a file, not a directory. Give python -m spacy_crf.fit a "
            "directory (new or existing) for model-best and model-last.")
    E144 = ("Line {line} (sentence {sid}) of the UNER file has the tag '{tag}', which is not "
            "IOB2: the third column must hold O, B-TYPE or I-TYPE (e.g. B-PER). Fix the tag, "
            "or convert IOB1 / BILUO files to IOB2 first.")
    E145 = ("Line {line} of the UNER file has {n} column(s), not at least 3 "
            "(index, token, tag, separated by tabs): '{text}'. Separate the columns with "
            "tabs, and sentences with a blank line.")
    E146 = ("The CoNLL-U tree joined to sentence {i} (sent_id {sid}: {words} ...) is not a "
            "tree: {why}. Fix the HEAD column (7th) of that sentence in the --conllu file, "
            "or leave out --conllu.")
    E147 = ("'{name}' has {n} labels, too many for order = 2: its label-pair states grow "
            "with the cube of the label count ({triples} label triples, about 60 bytes "
            "each), and order = 2 takes at most 2**22 triples, which is 160 labels. Use "
            "order = 1 (its memory grows with the square; order = null, the default, is 1 "
            "for span targets with more than 6 BILUO types), or fewer labels.")
    # E160-E179: the pipe contract (issue 35) and loading (issue 29 item 6)
    E160 = ("'{name}'.initialize() needs get_examples: a function that returns an iterable "
            "of Example objects, as nlp.initialize(lambda: examples) passes it; got {obj}. "
            "Pass a function returning at least one Example (or, with labels, "
            "initialize(labels=...) and a function returning the Examples to sample from).")
    E161 = ("The hashed weight table of '{layer}' would hold {n_buckets} rows x {n_labels} "
            "labels = {size:.1f} GiB, above the bound of {bound:.1f} GiB "
            "(spacy_crf.models.hashed_linear.MAX_TABLE_BYTES, or the environment variable "
            "SPACY_CRF_MAX_TABLE_BYTES). Lower n_buckets in the model config (e.g. "
            "n_buckets = {suggest} keeps it under the bound), use fewer labels, or raise "
            "the bound on a machine with the memory.")
    E162 = ("Cannot load '{name}': the saved {key} = {value!r} is invalid ({why}). The saved "
            "cfg was edited or written by an incompatible version: re-save the pipeline "
            "or retrain it. Nothing was changed.")
    E163 = ("keep_existing must be true, false or null (null: as spaCy's own pipe for the "
            "target, i.e. keep the entities already on a doc for target 'ents' and "
            "overwrite every other target), got {value!r}.")
    E164 = ("rehearse() of '{name}' got sgd = {sgd!r}: pass a thinc Optimizer, or a "
            "function (key, param, grad) -> (param, grad) as nlp.rehearse() does.")
    E165 = ("Cannot load '{name}' from {path}: {why}. The model would give NaN scores and "
            "confidences, so it is refused: retrain it from the last good checkpoint with a "
            "lower learning rate or gradient clipping ([training.optimizer] grad_clip).")
    E166 = ("max_segment_length = {value} is above {most}: the semi-Markov CRF scores every "
            "segment up to that length at every token, so its memory and time grow with it "
            "(10^6 took 0.9 GB for a 5-token doc). Use a value up to {most}, or 0 for the "
            "longest gold span of the training data, capped at {cap}.")
    # E167-E169: growing a trained model (issue 31)
    E167 = ("initialize(keep_weights=True) of '{name}' keeps its trained labels and adds "
            "new ones, but labels= lacks {missing}: a label cannot be removed from trained "
            "weights. Pass every trained label ({labels}) and the new ones, or re-initialize "
            "without keep_weights to train from scratch.")
    E168 = ("spacy-crf.add_labels.v1: the pipeline has no crf_tagger named '{name}' (its "
            "components: {pipeline}). Set [initialize.after_init] component to the name of "
            "the crf_tagger to grow.")
    E169 = ("python -m spacy_crf.fit --init-from {path}: cannot take its crf_tagger '{name}' "
            "({why}). Give the directory of a trained pipeline (e.g. model-best) with a "
            "crf_tagger of that name, or --component NAME.")
    # E170: structures as config blocks (issue 30)
    E170 = ("{setting} = {value!r} beside structure {structure}: a structure's settings are "
            "in its config block now, e.g. [components.NAME.structure] @structures = "
            "\"spacy-crf.Chain.v1\" order = 2, or @structures = \"spacy-crf.SemiMarkov.v1\" "
            "max_segment_length = 10 (the setting {setting} {why}).")
    # E171-E178: packaging a trained pipeline for deployment (issue 33 item 3)
    E171 = ("python -m spacy crf-package: the pipeline directory {path} {why}. Give the "
            "directory of a trained pipeline as nlp.to_disk() or spacy train writes it "
            "(e.g. training/model-best), with its meta.json and config.cfg.")
    E172 = ("python -m spacy crf-package needs the 'build' package: spacy package --build "
            "wheel and the spacy-crf wheel are built with python -m build. Install it: pip "
            "install build (or, in a checkout of spacy-crf, pip install -e \".[package]\").")
    E173 = ("python -m spacy crf-package cannot write to the output directory {path} "
            "({why}). Give a directory you can write to (it is created if missing).")
    E174 = ("python -m spacy crf-package builds the spacy-crf wheel from a source tree, "
            "but {why}. Pass --source DIR, a checkout of spacy-crf (the directory with its "
            "pyproject.toml), or install spacy-crf editable from a checkout (pip install -e "
            "DIR).")
    E175 = ("python -m spacy crf-package: {path} already exists (a package of this pipeline "
            "name and version). Delete it, pass --force to replace it, or give another "
            "--version or --name.")
    E176 = ("python -m spacy crf-package: the pipeline name {name!r} is not a valid Python "
            "module name, so spacy.load could not import its package. Use ASCII letters, "
            "digits and underscores, e.g. --name {suggest}.")
    E177 = ("python -m spacy crf-package: {step} failed ({why}); its messages are above. "
            "Fix what they name and run the command again.")
    E178 = ("python -m spacy crf-package: the pipeline package requires {requirement}, "
            "which the spacy-crf wheel just built ({wheel}) does not satisfy, so pip could "
            "not install the two together. Package the pipeline with the spacy-crf version "
            "it was trained with, or edit \"requirements\" in the pipeline's meta.json.")
    # E179: reading spans from decoded tags
    E179 = ("Span tags that are not well-formed {scheme} ({why}) were to be written as "
            "spans. Decoding obeys the scheme, so this is a bug in spacy-crf: please report "
            "it with the model's config.")
    # E180: a semi-Markov model run outside its component
    E180 = ("A semi-Markov CRF model was run on Docs without the longest segment to score: "
            "its component tells it (the batch layout it builds from its cfg's "
            "segment_length). Run the component (nlp(text), nlp.pipe, pipe.predict), or give "
            "the model's segment layer its length first: "
            "model.get_ref or walk to 'crf_with_segment_scores', then set_dim('nD', D).")
    # E181-E183: structure settings that shape the model (issue 30)
    E181 = ("The model's label-interaction scores already hold {found} relation group(s); "
            "the structure's n_relations = {n_groups} needs another model. Set n_relations "
            "in the structure block before the model is initialized or loaded.")
    E182 = ("{setting} is set both in the model ({model_value!r}, a setting of "
            "spacy-crf.FeatureCRF.v1 / NeuralCRF.v1-v2) and in the structure block "
            "({block_value!r}); it belongs in the block now: remove it from the model "
            "(use spacy-crf.FeatureCRF.v2 / NeuralCRF.v3) and keep it in "
            "[components.NAME.structure].")
    E183 = ("transition_templates need a spacy-crf.FeatureCRF model (a featurize, a hashed "
            "table and the label interactions); this component's model is '{model}'. Use "
            "spacy-crf.FeatureCRF.v2, or remove transition_templates from the structure block.")
    E184 = ("l1_penalty must be a number of at least 0 (the L1 penalty of the hashed "
            "weights per update; 0 turns it off), got {value!r}.")
    # E185-E189: the pipe contract, continued (issue 49)
    E185 = ("'{label}' (target '{name}') is a negative span annotation (\"not {positive}\", "
            "spaCy's deprecated '!' notation): span targets cannot learn from it, as spaCy's "
            "ner cannot (its E869), and take no span type that starts with '!'. Leave those "
            "tokens unannotated, or give the positive label where it is known.")
    E186 = ("Cannot load the weights of '{name}' from {path} into it: they were loaded "
            "without a cfg (the data has none, saved with exclude=[\"cfg\"], or it was "
            "excluded), so the component keeps its own, with {n_labels} labels, and the "
            "weights do not fit it: {why}. Load them into a component with the labels and "
            "model settings they were trained with, or save and load them with the cfg.")
    # E187: crf-shards into a directory that holds shards it did not write (issue 48)
    E187 = ("'{path}' holds shard(s) crf-shards would not write for '{corpus}': {names}. "
            "annotate reads every shard of its INPUT, so their documents would be "
            "annotated with the corpus's. Write the shards into a new or empty directory, "
            "or remove those files.")
    # E190: two components' own extensions (issue 49)
    E190 = ("crf_tagger components '{other}' and '{name}' would store their confidences "
            "and n-best lists in one place, and read them through the same extensions "
            "(token._.{stem}_confidence, doc._.{stem}_nbest): their names read the same as "
            "identifiers. Give one of them another name.")
    E191 = ("{shared} reads the values of the one crf_tagger that stored them on a doc "
            "(or of the one named 'crf'), but {owners} each stored theirs on this one. Read "
            "each component's own extension instead: {own} (a process without the "
            "pipeline registers them first: spacy_crf.register_extensions({names})).")
    E192 = ("The extension {name} that this crf_tagger would store its confidences or "
            "n-best lists through is registered by something else. Give the component "
            "another name (nlp.add_pipe(\"crf_tagger\", name=...)), or remove the other "
            "extension.")
    # E200-E209: the morph target (issue 51)
    E200 = ("Label '{label}' (target 'morph') has POS '{pos}', which is not a Universal POS "
            "tag: the component writes it to Token.pos. Give the POS field as UPOS (NOUN, "
            "VERB, ...), e.g. 'Number=Sing|POS=NOUN'.")
    E201 = ("Label {label!r} (target 'morph') is not FEATS: a morph label is Field=Value "
            "pairs joined by '|', each field once and neither part empty, the POS among "
            "them as a field, e.g. "
            "'Number=Sing|POS=NOUN' ('POS=PUNCT' for a POS alone, '_' for neither). Take "
            "the labels from a trained component (its 'labels') or from spacy init labels.")
    # E202: a '_.NAME' target over a crf_tagger's own extension (issue 49, as E190-E192);
    # E203: crf-debug-data --component
    E202 = ("Target '_.{attr}' would keep its labels in token._.{attr}, which is {whose}: "
            "the labels and the confidences would overwrite each other. Give the target "
            "another name, e.g. '_.{attr}_label'.")
    E203 = ("The pipeline has no crf_tagger '{name}' (its components: {pipes}; its "
            "crf_tagger components: {crf_pipes}): pass --component the name of one of them, "
            "or leave it out to report on every crf_tagger.")
    E206 = ("Label {label!r} (target 'pos') is not a Universal POS tag: the component writes "
            "it to Token.pos, which takes these only: {tags}. Map the labels to UPOS, or use "
            "target 'tag' (Token.tag_) for a tag set of your own.")
    # E210-E211: the pruned chain (issue 51)
    E210 = ("candidates of spacy-crf.PrunedChain.v1 must be an integer of at least 1 (the "
            "labels each token keeps; at least the label count for the exact chain), got "
            "{value!r}.")
    E211 = ("python -m spacy_crf.fit does not train spacy-crf.PrunedChain.v1 (its lattice "
            "changes with the weights), which spacy-crf.Chain.v1 with order = null also "
            "picks for a target whose labels come by the hundred (morph, lemma, over 200 "
            "entity tags): train "
            "this config with python -m spacy train, or with fit and spacy-crf.Chain.v1 "
            "with order = 1 in the component's structure block (the same parameters: the "
            "model loads in either){also}.")
    # E212-E219: the sent_starts target (issue 52)
    E212 = ("'{name}' (target '{target}') predicts the sentence boundaries, so its CRF "
            "sequence is the whole doc: {what} would cut it at the boundaries the doc "
            "already has. Set sequence = \"doc\" (the default) and structure "
            "spacy-crf.Chain.v1.")
    E213 = ("Label '{label}' is not one of target 'sent_starts': its labels are 'S' (the "
            "token starts a sentence) and 'I' (it does not).")
    # E220-E229: the lemma target (issue 52)
    E220 = ("Label {label!r} (target 'lemma') is not an edit tree: a lemma label is a tree "
            "as spaCy's EditTrees.tree_to_str writes it, e.g. \"(m 0 1 () (s 's' ''))\" "
            "(strip a final s) or \"(s 'is' 'be')\", after a case or not (\"lower "
            "(m 0 1 () (s 's' ''))\": lowercase, then strip the s; or \"capitalize ...\"). "
            "Take the labels from a trained "
            "component's labels, or let initialize() read them from lemmas in the corpus.")
    # E230: how a word is usually written, as a feature (issue 52); E231: the pruned
    # chain's margin (issue 51)
    E230 = ("The feature templates of '{name}' read USUAL_CASE, but {why}. USUAL_CASE reads "
            "spaCy's word probabilities (lexeme_prob) for the pipeline's language from "
            "spacy-lookups-data (pip install spacy-lookups-data; English, German, Spanish "
            "and Greek have them): give the component such a language, or leave the "
            "USUAL_CASE templates out of its model.")
    E231 = ("margin of spacy-crf.PrunedChain.v1 must be a positive number or null, not "
            "{value!r}: in decoding, a token keeps the candidates whose emission is within "
            "margin of its best (e.g. 6.0, what the factory sets for the morph target); "
            "null keeps them all.")
    # E232-E234: CoNLL-U as documents, line breaks kept (issue 52)
    E232 = ("Could not read the CoNLL-U text ({err}). Each sentence is a block of lines "
            "between blank lines: '#' comments first, then a line of 10 tab-separated "
            "columns per word (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC). Check "
            "that the file is CoNLL-U, with no stray blank line inside a sentence.")
    E233 = ("The sentence '{text}' cannot take a line-break token: spaCy's whitespace "
            "augmentation leaves alone a doc with spans, entity links or a partial tree. "
            "Convert without --line-breaks, or give every word of the sentence a head.")
    E234 = ("n_sents must be 0 (the corpus's documents, cut at '# newdoc') or a positive "
            "number of sentences a doc, not {n_sents}.")
    # E235-E237: crf-convert's inputs and outputs (chunks lines, paths)
    E235 = ("Line {line} of the chunks file {why}: '{text}'. A CoNLL-2000 line is WORD POS "
            "CHUNK, three columns separated by spaces or tabs (e.g. 'He PRP B-NP'), the "
            "chunk tag O, B-TYPE or I-TYPE, and a blank line ends each sentence. Fix that "
            "line.")
    E236 = ("Cannot read {name} '{path}': {why}. Give the path of an existing file (for a "
            "folder of files, give each file).")
    E237 = ("Cannot write {name} '{path}': {why}. Give {expected}; missing folders are "
            "created.")
    # E240-E241: emissions factored over label parts (issue 51)
    E240 = ("factored = {value!r} in a spacy-crf.FeatureCRF block: it takes true (a weight "
            "per label part), false (a weight per label) or null (factor where the target's "
            "labels are made of parts, as the morph target's are).")
    E241 = ("The model of '{name}' holds a weight per label part (factored emissions: the "
            "target's labels are made of parts), and the batch trainer fit trains a weight "
            "per label. Set factored = false in the [components.{name}.model] block to train "
            "it with fit, or train this model with spacy train.")
    # E242-E244: feature sources as a registry (issue 50)
    E242 = ("[initialize.components.{name}] has {settings}, which neither '{name}' nor any "
            "registered feature source takes. The component takes labels and keep_weights; "
            "the feature sources take (source: settings) {options}.")
    E243 = ("The saved word tables hold {keys}, which no registered feature source reads "
            "(registered: {sources}). Install the package that registered the source the "
            "component was trained with.")
    E244 = ("Feature source '{source}' takes the initialize setting(s) {settings}, which "
            "feature source '{other}' takes too: give the settings of a new source names "
            "of its own (e.g. prefixed with the source's name).")
    # E245-E249: the inputs of crf-evaluate, crf-plots and the copy_attrs augmenter
    E245 = ("spacy-crf.copy_attrs.v1 cannot copy {unknown}: it copies {allowed}. Name "
            "attributes of that list, e.g. --copy HEAD,DEP (crf-evaluate, crf-plots) or "
            "attrs = [\"TAG\"] in the augmenter of [corpora].")
    E246 = ("spacy-crf.copy_attrs.v1 copies a parse as HEAD and DEP together, but it was "
            "given {attrs}: list both (--copy HEAD,DEP, or attrs = [\"HEAD\", \"DEP\"] in the "
            "augmenter of [corpora]).")
    E239 = ("spacy-crf.copy_attrs.v1 copies {attr} from the gold docs, but '{name}' predicts "
            "it and keeps a value already on a doc (a crf_tagger's keep_existing, spaCy's "
            "overwrite = false): it would keep the gold, and its scores would be those of "
            "the gold. Leave {attr} out "
            "of the copied attributes (attrs in the augmenter of [corpora], --copy of "
            "crf-evaluate and crf-plots), or set keep_existing = false (overwrite = true for "
            "spaCy's pipes) on '{name}'.")
    E247 = ("The pipeline has no component '{name}' (its crf_tagger components: {crf_pipes}): "
            "pass --component one of them, or leave it out to take the first.")
    E248 = ("Cannot load the pipeline '{model}': {why}. Give MODEL as the directory of a "
            "trained pipeline (one holding config.cfg and meta.json, e.g. "
            "training/model-best) or the name of an installed pipeline package.")
    E249 = ("The corpus {path} holds no docs, so there is nothing to score or draw: give "
            "DATA a .spacy file of annotated docs (python -m spacy crf-debug-data CONFIG, or "
            "spacy debug data, shows what a corpus holds).")
    # E250: spaCy's lemma tables as features (issue 52)
    E250 = ("The feature templates of '{name}' read {attrs}, but {why}. LOOKUP_LEMMA and "
            "RULE_LEMMA_POS read spaCy's lemma tables for the pipeline's language from "
            "spacy-lookups-data (pip install spacy-lookups-data): give the component a "
            "language that has them, or leave those templates out of its model.")
    # E251-E253: a relabelled parse, the settings the saved weights mean, fit's warm start
    E251 = ("Target 'dep' labels the relations of a doc's own parse, but a doc of {n} tokens "
            "('{text}') has none, or has one on only some of its tokens (no heads there): "
            "writing its labels would make those tokens their own heads, a broken parse. Put a parser before the component in the pipeline (or "
            "list it in [training] annotating_components), or copy the gold trees onto the "
            "docs with the augmenter spacy-crf.copy_attrs.v1 (attrs [\"HEAD\", \"DEP\"]); "
            "python -m spacy_crf.evaluate MODEL DATA.spacy copies them as the training did.")
    E252 = ("Cannot load '{name}' from {path}: its weights were trained with {key} = "
            "{saved!r}, but the config it is loaded with says {key} = {given!r} (an override "
            "given to spacy.load, an edited config.cfg, or another component's files). The "
            "{key} is what the weights mean: drop the override, or train a component for "
            "{given!r}.")
    E253 = ("python -m spacy_crf.fit --init-from {path}: its component '{name}' replaces "
            "the config's, its structure and model settings included, so the config's "
            "settings do not apply, and fit cannot train that component: {why} Warm-start "
            "from a pipeline whose '{name}' fit can train (one fit trained, or one spacy "
            "train trained with those settings), or fit without --init-from.")
    # E254: files in annotate's OUTPUT that it has no record of writing
    E254 = ("OUTPUT '{output}' holds {names}, named like input shards, but annotate has no "
            "record of writing them as they are (OUTPUT/.done): a copy of the inputs, a "
            "stale file, the output of an older spacy-crf, or an output changed (or copied "
            "without its modification time) since. Taken as finished they would never be "
            "annotated, so nothing was. Use a new or empty OUTPUT, delete those files, or "
            "pass --overwrite to annotate every shard again.")
    # E255: vectors that VECTOR_CLUSTERk cannot cluster
    E255 = ("VECTOR_CLUSTERk templates cluster the pipeline's static vectors, but {n} of "
            "the {total} words' vectors in nlp.vocab.vectors hold NaN or infinite values "
            "(e.g. {example}), which k-means cannot place. Fix or drop those rows before "
            "initialize (e.g. numpy.nan_to_num on nlp.vocab.vectors.data, or vectors made "
            "again from a clean file with spacy init vectors), or leave the VECTOR_CLUSTERk "
            "templates out.")
    # E257-E259: crf-fit's checks before training (dev gold, --output, a warm start's target)
    E257 = ("The dev corpus '{path}' carries no annotation of target '{target}', which "
            "'{name}' learns: none of its {n} document(s) has a '{target}' label, so every "
            "dev score would be 0.0 and model-best the first evaluation. Point --paths.dev "
            "at a corpus annotated for '{target}', as the training corpus is (python -m "
            "spacy crf-debug-data CONFIG counts the labels of each corpus); for a '_.NAME' "
            "target, save its .spacy files with store_user_data=True.")
    E258 = ("Cannot write to --output '{path}' ({why}). Give python -m spacy_crf.fit a "
            "directory it may create and write to, on a file system with free space; it is "
            "checked before training, so that no trained model is lost when saving.")
    E259 = ("python -m spacy_crf.fit --init-from {path}: its component '{name}' was trained "
            "for target '{trained}', but the config says target = '{given}'. A warm start "
            "continues the trained component as it is, its target included, so fit would "
            "train and save a '{trained}' model. Set target = \"{trained}\" in "
            "[components.{name}] to continue training that model, or fit without "
            "--init-from to train a '{given}' model anew.")
    # E260: spaCy's pipe API: get_loss given what predict returns
    E260 = ("get_loss of '{name}' takes the model's scores, pipe.model.predict(docs), as "
            "spaCy's get_loss takes them; it was given {got}, which is what pipe.predict "
            "returns (the decoded labels). Pass pipe.model.predict(docs).")
    E261 = ("python -m spacy crf-package: the version {version!r} is not a version pip can "
            "install ({why}): give --version one such as 1.0.0 or 1.0.0rc1 (PEP 440), or fix "
            "the version in the pipeline's meta.json.")
    # E262: the text's spacing as a feature (issue 52)
    E262 = ("The feature templates of '{name}' read SPACE_AFTER, but "
            "[initialize.components.{name}] space_after = false leaves it out: take "
            "SPACE_AFTER out of the model's templates, or the setting out of the config.")
    E263 = ("A label cannot be the empty string: it is what an unannotated token reads "
            "(Token.tag_ of a token without a tag), so every unannotated token would be gold "
            "for it. Give each label its text, and leave unannotated tokens without one.")
    E264 = ("Gold values of '{attr}' (target '{target}') must be strings (the component "
            "writes strings back): found {kind} {value!r} in a doc starting {text!r}. Store "
            "str(value) in the extension, or map the values to label strings.")
    E265 = ("'{attr}' is an extension with a getter{what}: its values are computed, not "
            "stored, so the component can neither read gold from it nor write predictions "
            "to it. Register a plain extension for the target (Token.set_extension(NAME, "
            "default=None)), and copy the computed values into it for training.")
    E266 = ("spacy-crf.add_labels.v1 would add labels to '{name}', which [training] "
            "frozen_components keeps as it is: it could never learn them. Take '{name}' out of "
            "frozen_components to train it on the new labels, or remove the callback.")
    E267 = ("Cannot load '{name}': its weights were trained with the feature templates "
            "{saved}, but its config gives {given}. Each weight belongs to a feature of "
            "its templates, so other templates would read them as other features and "
            "predict nonsense. Load it with the templates it was trained with (leave "
            "[components.{name}.model] templates as saved in its config.cfg), or train "
            "it anew with the new ones.")
    E268 = ("'{name}' has the model '{model}', which does not make CRF scores (spaCy's "
            "own architectures, e.g. spacy.Tagger.v2, end in a softmax): give it a "
            "spacy-crf architecture: spacy-crf.FeatureCRF.v2 (the default), "
            "spacy-crf.NeuralCRF.v3 over a tok2vec, or spacy-crf.HMM.v1.")


class Warnings(metaclass=_Codes):
    W007 = ("'{name}' has cluster_templates, but no Brown cluster table was found for "
            "language '{lang}', so it reads words' spelling only. For clusters: pip install "
            "spacy-lookups-data (English, German, Spanish), or give a table of your own "
            "([initialize.components.{name}] clusters = PATH; python -m spacy_crf.clusters).")
    W006 = ("{n} gold span(s) of '{name}' are longer than max_segment_length = {length} "
            "(the longest is {longest} tokens); the semi-Markov CRF cannot label them, so "
            "their sentences are left out of training. Raise max_segment_length in the "
            "component's config to learn them.")
    W005 = ("'{name}' reads {attr} (its {why}), but no doc of the batch it was given has "
            "{attr}: it predicts as a model without that input, and its scores will be "
            "low. Put a component that sets {attr} before it (under spacy train, a "
            "frozen one sets it on training docs only when it is in [training] "
            "annotating_components too), or copy {attr} from the "
            "corpus (the augmenter spacy-crf.copy_attrs.v1 in [corpora], or python -m "
            "spacy_crf.evaluate MODEL DATA instead of spacy evaluate). Said once per "
            "component.")
    # {consequence}: what the component does without it (predicts worse, or cannot run)
    W004 = ("'{name}' reads {attr} (its {why}), but none of the {n} evaluation docs has "
            "{attr} and no component before it sets it: {consequence}. Copy it from the "
            "corpus with the --copy option of crf-evaluate and crf-plots: python -m "
            "spacy_crf.evaluate MODEL DATA --copy {copy}.")
    W002 = ("doc.spans['{key}'] has {n} overlapping span(s): a tagging CRF cannot "
            "represent overlaps, so it learns from (gold) or decodes around (keep_existing) "
            "the longest of each overlapping group (spacy.util.filter_spans); with "
            "keep_existing every span of the group stays in it.")
    W003 = ("{n} gold tag(s) of '{name}' break the {scheme} scheme (e.g. I-X after O, "
            "usually from a tokenisation that differs from the corpus): those tokens are "
            "treated as unannotated. To train on them, fix the tags in the corpus (an I-X "
            "that starts an entity is B-X; python -m spacy_crf.convert conll repairs them) "
            "or convert it with the pipeline's own tokenizer; a few are harmless.")
    W001 = ("Gold label '{label}' (target '{name}') was not seen at initialize(); tokens "
            "with it are treated as unannotated. Re-initialize with data that has it, or "
            "pass the full label set to initialize(labels=...); a trained component "
            "(sourced by spacy train) learns it through add_label, or the "
            "[initialize.after_init] callback spacy-crf.add_labels.v1.")
    # W010-W014: issue 29
    W010 = ("The only dev evaluation of this training was at step 0, after its first "
            "batch, of {n} steps: model-best is that barely trained model, and model-last "
            "has every update. Lower [training] eval_frequency below the number of steps "
            "(e.g. --training.eval_frequency {suggest}), or use model-last.")
    # W015-W019: the pipe contract (issue 35)
    W015 = ("Gold label '{label}' (target '{name}') is a negative annotation (\"not "
            "{positive}\"); crf_tagger does not learn from negative annotations and "
            "treats those tokens as unannotated. Give the positive label where it is "
            "known, or leave the tokens unannotated.")
    W016 = ("'{name}' (target '{target}') was initialized without annotated examples or "
            "labels: it has no {what} types and predicts none until updates add them (the "
            "model grows by each type an update's gold has first, as add_label() grows "
            "it; the HMM, which learns from counts, learns them at initialize only). To "
            "size it once, initialize it with examples that carry the annotation, "
            "or with labels (initialize(labels=...)).")
    W017 = ("'{name}' reads NORM (its feature templates), but the vocab has no "
            "'lexeme_norm' table for language '{lang}', so NORM is the lowercased text "
            "and accuracy may be lower (spaCy's W033). Install spacy-lookups-data "
            "(pip install spacy-lookups-data) and re-initialize, or ignore this if the "
            "pipeline is meant to run without the lookups.")
    # W035-W039: the lemma target (issue 52)
    W035 = ("{n} gold lemma(s) of a doc have an edit tree that is not among the "
            "component's labels (e.g. '{form}' -> '{lemma}', {tree}): those tokens are "
            "treated as unannotated. initialize() leaves out trees seen fewer than "
            "{min_freq} times, as spaCy's edit_tree_lemmatizer does (min_tree_freq); a few "
            "such tokens are expected. To learn a tree, add it (add_label) or give "
            "initialize(labels=...) the full set. Said once per component.")
    W036 = ("{n} gold lemma(s) of a doc have an edit tree that does not apply to the "
            "predicted token's form (e.g. '{form}' with {tree}; the tokenisations may "
            "differ): those tokens are treated as unannotated. Said once per component.")
    # W041: spaCy's lemma tables as features (issue 52)
    W041 = ("'{name}' has optional templates that read {attrs} (the lemma target's "
            "defaults, or cluster_templates), but {why}: they are left out, and it reads "
            "the words without what spaCy's lemma tables say of them. For the tables: pip "
            "install spacy-lookups-data, for a language that has them (English: "
            "lemma_lookup and the rule lemmatizer's tables).")
    # W039: a wide table's rows under n_buckets = null (issue 51)
    W039 = ("A weight table of {columns} columns (labels, or label parts) gets {rows} rows "
            "under n_buckets = null ({size:.0f} MiB), fewer than the 2**18 of other wide "
            "tables: its rows are shared by more features, so rare ones collide more. Set "
            "n_buckets in the [components.NAME.model] block for more rows (E161 above "
            "SPACY_CRF_MAX_TABLE_BYTES), or use fewer labels.")
    # W044: keep_existing and values that are no label
    W044 = ("'{name}' keeps the {target} values already on {n} token(s) (keep_existing), "
            "but some are not among its labels (e.g. {value!r}): they stay as they are, "
            "with confidence 1.0 (of a morph POS or FEATS given alone, the other part is "
            "decoded freely, with its label's confidence), yet the CRF cannot condition on "
            "them, so the tokens around "
            "them are decoded as if they were free, and the n-best lists show the label "
            "decoded there. Give the component that label (add_label, or the training "
            "data) to have the rest decoded consistently with it. Said once per component.")
    # W045: a gold labelling outside a second-order chain's kept label pairs
    W045 = ("'{name}' trains on {n} of the {total} sequence(s) of a batch as unannotated: "
            "their gold labels need a label pair (two adjacent labels, or a first label) "
            "that initialize did not see, and an order-2 chain keeps only the pairs it saw "
            "(cfg['label_pairs']). Every loss (nll, perceptron, hinge) learns nothing from "
            "them. Initialize with the whole training corpus (a sample of it leaves pairs "
            "out), or use order = 1. Said once per component.")
    W046 = ("'{name}' keeps the labels already on its docs (keep_existing), but in {n} of "
            "the {total} sequence(s) of a batch no labelling holds them all (an entity kept "
            "across a sentence boundary with sequence = \"sentence\", two kept labels "
            "an order-2 chain never saw side by side, or a kept POS whose morph labels "
            "leave it no pair it saw): those sequences are decoded as if "
            "nothing were kept, and the kept values are still written over the decoded "
            "ones. Use sequence = \"doc\", or order = 1, to have the rest decoded "
            "consistently with them. Said once per component.")
    # W047: files in annotate's INPUT that it does not read
    W047 = ("INPUT '{path}' holds {names}, which annotate does not read: it reads the "
            ".jsonl and .parquet files directly in INPUT (the suffix in any case, "
            "uncompressed) and leaves out subfolders, compressed shards (.gz, .zst...) and "
            "other files. To have them annotated, decompress them into INPUT, or run "
            "annotate on each subfolder with an OUTPUT of its own.")
    # W048: crf-fit --init-from: the config's settings the trained component replaces
    W048 = ("python -m spacy_crf.fit --init-from {path}: its component '{name}' replaces the "
            "config's with its own settings (a warm start continues the trained model as it "
            "is), so these settings of the config's [components.{name}] block are not used: "
            "{settings}. Fit without --init-from to train with them, or set them in the "
            "config as the trained component has them to silence this.")
    # W043: structure settings at a component's top level (issue 50)
    W049 = ("'{name}' trains on {n} of the {total} sequence(s) of a batch as unannotated: "
            "their gold labels are known on some tokens only, and the labels the pruned "
            "chain keeps for the others (each token's best candidates, and O for a span "
            "target) cannot join the known ones under the scheme (e.g. B-PER ? L-PER without "
            "I-PER among the unknown token's). Every loss learns nothing from them. Annotate "
            "those tokens, raise the structure's candidates, or use spacy-crf.Chain.v1 with "
            "order = 1. Said once per component.")
    W050 = ("'{old}' of another pipeline is sourced here as '{new}', and spaCy puts the one "
            "object in both pipelines (add_pipe(source=...) does not copy it): in the "
            "pipeline it comes from, it now stores its values as '{new}' too "
            "(token._.{new_stem}_confidence), where its crf_tagger '{clash}' stores its own: "
            "there, the two overwrite each other's. To keep using that pipeline, source from "
            "a copy of it (spacy.load it again, or copy.deepcopy it).")
    W051 = ("'{name}' runs the structure it was saved with, {saved}, not the one its config "
            "names, {given}: its weights were trained with the saved one, and a load keeps "
            "it (an override of the structure block at spacy.load, or a config.cfg edited "
            "after training, is not used). To run another structure, train the component "
            "with it.")
    W052 = ("'{name}' is an HMM, which learns from the counts of the examples initialize "
            "reads, and they hold no gold label of its target '{target}': its tables stay "
            "uniform (every token the first label), and updates do not change them. Give "
            "initialize examples annotated for that target (nlp.initialize(lambda: "
            "examples), or [initialize] in spacy train's config reading the corpus).")
    W054 = ("'{name}' (target '{target}') reads its gold from {where}, which spaCy's corpus "
            "reader leaves out of the docs it cuts or re-tokenizes, and the training corpus "
            "does so (max_length = {max_length}, gold_preproc = {gold_preproc}): those docs "
            "train it on nothing. Set max_length = 0 and gold_preproc = false in the "
            "training corpus's block ([corpora.train]).")
    W055 = ("'{name}' was trained in a pipeline of language '{trained}' and runs on docs of "
            "language '{lang}': it reads the word tables of '{trained}' (clusters, lemma "
            "tables, word probabilities) and the words as that language's tokenizer split "
            "them, so its predictions will be poor. Train it in a '{lang}' pipeline (a "
            "component sourced, loaded or warm-started from another pipeline keeps the "
            "language it was trained in). Said once per component.")
    W056 = ("'{name}' (target 'sent_starts') trains on docs of one sentence each (the "
            "first {n} of its corpus): a senter learns the boundaries inside docs, and these "
            "have none, so it learns that no token but a doc's first starts a sentence "
            "(and scores sents_f 100 on such a dev corpus). Join the sentences into "
            "documents: spacy convert -c conllu -n 10, or python -m spacy crf-convert "
            "conllu (the corpus's documents; --line-breaks keeps the paragraphs' breaks).")
    W053 = ("'{name}' (target '{target}') was scored on {n} example(s), and none has gold "
            "annotation for its target: its scores are None (the spacy train table shows "
            "0.00, so every checkpoint ties and model-best is the last). Give the dev corpus "
            "that annotation (convert it with the columns the target reads), or set the "
            "component's score weights to 0 under [training.score_weights]. Said once per "
            "component.")
    W043 = ("Structure settings at the top level of a crf_tagger's config ({settings}): "
            "read as the same settings of its [components.NAME.structure] block. "
            "Write them in that block; the config the pipeline keeps (nlp.config, a saved "
            "config.cfg) already has them there, so saving the pipeline again silences this.")
    # W020-W023: the kernels' cache (issue 48)
    W020 = ("The kernel cache directory {path} {why}, so spacy-crf does not use it: numba's "
            "cache files are pickles, which run code as they load, and a file another user "
            "put there would run as you. The kernels are cached where numba caches by "
            "default instead. Make the directory yours and writable by you alone (chmod -R "
            "go-w DIR), or point SPACY_CRF_NUMBA_CACHE at a directory of your own.")
    W021 = ("No place to cache spacy-crf's compiled kernels can be written (its own, "
            "~/.cache/spacy-crf/numba or SPACY_CRF_NUMBA_CACHE; numba's, beside the "
            "package's sources or in the user's cache directory): the kernels compile again "
            "in every process, 10-30 s. Point SPACY_CRF_NUMBA_CACHE at a directory of your "
            "own that can be written.")
    W022 = ("The kernel cache file {path} {why}: spacy-crf did not load it, and compiled the "
            "kernel, which writes the file anew (numba's cache files are pickles, which run "
            "code as they load: one that another user could have written is never loaded).")
    W023 = ("Cannot write compiled kernels to the cache in {path} ({why}): they run, and "
            "compile again in the next process. Free space there, or point "
            "SPACY_CRF_NUMBA_CACHE at a directory that can be written.")
