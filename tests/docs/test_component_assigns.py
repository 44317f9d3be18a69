"""docs/component.md says what ``nlp.analyze_pipes()`` shows each target writing:
the attributes it lists for a target are that component's ``assigns``, each
target's own and no other's."""

import re

import spacy

from conftest import ROOT

#: a target of each kind the page names by a placeholder, and the name it reads under
EXAMPLES = {"spans:KEY": ("spans:sc", {}), "_.NAME": ("_.chunk", {"token._.chunk": "token._.NAME"})}


def documented_assigns():
    """{target as the page names it: [attributes]} from the analyze_pipes sentence."""
    text = " ".join((ROOT / "docs" / "component.md").read_text(encoding="utf8").split())
    found = re.search(r"`nlp\.analyze_pipes\(\)` shows what each component writes: its "
                      r"target's attributes? \((.*?)\) and the confidence", text)
    assert found, "the analyze_pipes sentence of docs/component.md"
    pieces = re.split(r"\bfor `([^`]+)`,?", found.group(1))
    pairs = [(target, re.findall(r"`([^`]+)`", attrs))
             for attrs, target in zip(pieces[0::2], pieces[1::2])]
    targets = [target for target, _ in pairs]
    assert len(set(targets)) == len(targets), f"a target listed twice: {targets}"
    return dict(pairs)


def test_the_page_lists_each_targets_assigns():
    documented = documented_assigns()
    assert {"tag", "pos", "dep", "morph", "lemma", "sent_starts", "ents"} <= set(documented)
    for target, attrs in documented.items():
        name, rename = EXAMPLES.get(target, (target, {}))
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": name})
        assigns = nlp.analyze_pipes(pretty=False)["summary"]["crf_tagger"]["assigns"]
        assert sorted(attrs) == sorted(rename.get(a, a) for a in assigns), target
