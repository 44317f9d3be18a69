"""Numbered error and warning messages, in one place (as spaCy does).

Every message names the problem and the fix. Code raises e.g.
``ValueError(Errors.E001.format(...))``; the code is part of the text so users
can search for it.
"""


class _Codes(type):
    def __getattribute__(self, code: str) -> str:
        msg = super().__getattribute__(code)
        if code.startswith("__"):
            return msg
        return f"[{code}] {msg}"


class Errors(metaclass=_Codes):
    E001 = ("Unknown feature attribute '{attr}' in template '{template}'. Use one of: "
            "{options}.")
    E002 = ("Cannot parse feature template '{template}': {why}. A template is parts "
            "joined by '|', each 'ATTR' or 'ATTR[offset]', e.g. 'NORM[-1]|NORM[0]'; a "
            "single part may give a window, e.g. 'NORM[-2..2]'.")
    E003 = "Window offset {offset} in template '{template}' is out of range: use -{max} to {max}."
    E004 = "The feature template list is empty: give at least one template, e.g. ['NORM[0]']."
    E005 = "'{name}' must be a positive integer, got {value!r}."
    E006 = ("Unknown target '{target}'. Use 'tag', 'pos', 'dep', 'ents', 'spans:KEY' or "
            "'_.NAME' (a custom token extension, e.g. '_.chunk').")
    E018 = ("Target '{target}' decodes spans with the scheme's transition constraints, "
            "which need structure = \"chain\".")
    E007 = ("The component '{name}' has no labels: it was not initialized. Call "
            "nlp.initialize() (or train it with `spacy train`) before using it, or load a "
            "trained pipeline.")
    E008 = ("No labels found for target '{target}' in the training examples of '{name}'. "
            "Check that the corpus carries that annotation (for '_.NAME' targets, that the "
            ".spacy files were saved with store_user_data=True), or pass labels to "
            "initialize().")
    E009 = ("The CRF loss of '{name}' became {value}: training diverged. Lower the learning "
            "rate, or add gradient clipping ([training.optimizer] grad_clip).")
    E010 = ("Cannot load '{name}' from {path}: {why}. The directory is missing a file or was "
            "written by an incompatible version; re-save the pipeline with nlp.to_disk() or "
            "retrain it.")
    E011 = ("The model of '{name}' has {found} labels but the component has {expected}: the "
            "config and the weights do not match. Retrain, or load the pipeline they were "
            "saved with.")
    E012 = "Unknown structure '{structure}'. Use 'chain' or 'tree'."
    E013 = ("Doc has {n_labels} label columns in its emission scores but the component has "
            "{expected} labels. This is a bug; please report it.")
    E015 = ("'{name}' needs a dependency parse ({why}) but a Doc has none. Add a parser "
            "before it in the pipeline (or list one in [training] annotating_components), "
            "copy gold trees onto the docs with the augmenter spacy-crf.copy_attrs.v1 "
            "(attrs [\"HEAD\", \"DEP\"]), or use structure = \"chain\" without tree features.")
    E016 = ("Invalid dependency tree in a Doc: {why}. Heads must form a forest (no "
            "cycles, heads inside the doc).")
    E017 = ("Target 'dep' predicts the relation labels, so its features must not read DEP "
            "(found in templates {templates}) and the model must have n_relations = 1.")
    E019 = ("n_best must be a whole number >= 0 (0 turns it off), with structure = "
            "\"chain\"; got {value}.")
    E020 = ("The training corpus of '{name}' has no examples{where}. Check that "
            "[paths.train] points at a non-empty .spacy file (python -m spacy debug data "
            "CONFIG shows what it holds).")
    E014 = ("Label '{label}' is not in the label set of '{name}'. Labels: {labels}. Add it "
            "with add_label() before initialize(), or retrain.")


class Warnings(metaclass=_Codes):
    W002 = ("doc.spans['{key}'] has {n} overlapping gold span(s): a tagging CRF cannot "
            "represent overlaps, so the longest of each overlapping group is kept "
            "(spacy.util.filter_spans).")
    W003 = ("{n} gold tag(s) of '{name}' break the {scheme} scheme (e.g. I-X after O, "
            "usually from a tokenisation that differs from the corpus): those tokens are "
            "treated as unannotated.")
    W001 = ("Gold label '{label}' (target '{name}') was not seen at initialize(); tokens "
            "with it are treated as unannotated. Re-initialize with data that has it, or "
            "pass the full label set to initialize(labels=...).")
