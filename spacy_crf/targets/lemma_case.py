"""The case a lemma label rewrites first: ``"lower (m 0 1 () (s 's' ''))"``
lowercases the form, then applies the edit tree.

An edit tree rewrites characters, so a tree that takes ``Laughter`` to
``laughter`` names the letter it lowercases: ``L`` and ``M`` are two trees,
each rare, and a model cannot learn "a capitalised common noun takes its
lowercase lemma" once for all letters. On UD English EWT six errors in ten
of the lemma target's were of case alone (504 of 807 on test).

So a lemma label is a *case* and a tree. The case is applied to the form
first, then the tree to the result:

* ``""`` (no prefix): the form as it is (every label before this module);
* ``"lower"``: the form lowercased, for a form with capitals whose lemma has
  none (``Laughter`` -> ``laughter``, ``IPO`` -> ``ipo``, ``Dogs`` ->
  ``dog``: ``lower`` and the tree that strips ``s``);
* ``"capitalize"``: the form with its first letter upper and the rest lower,
  for a lemma written so that the form is not (``TEHRAN`` -> ``Tehran``,
  ``israelians`` -> ``Israelian``).

Gold takes the first case in that order that fits (:func:`case_of`), so a
pair has one label. A cased label applies only to a form its case changes
(the plain label of the same tree serves the others), and the label string
keeps the case as a prefix: ``"lower "`` + the tree, which cannot start with
anything but ``(``.
"""

from typing import Callable, Dict, Optional, Tuple

#: the capital whose lowercase is two characters: ``"İ".lower()`` is ``i`` and a
#: COMBINING DOT ABOVE (U+0307), which no lemma has (Turkish ``İSTANBUL`` ->
#: ``istanbul``): every İ would need a tree of its own that deletes the dot, and
#: an unseen word would keep it. The cases lowercase it to ``i``.
DOTTED_CAPITAL_I = "\u0130"


def lower(form: str) -> str:
    """``form`` lowercased, one character for each (İ -> i)."""
    return form.replace(DOTTED_CAPITAL_I, "i").lower()


def capitalize(form: str) -> str:
    """``form`` with its first character in title case and the rest in
    lowercase, as ``str.capitalize`` but for İ after the first (-> i)."""
    return (form[:1] + form[1:].replace(DOTTED_CAPITAL_I, "i")).capitalize()


#: the cases, each with what it does to a form
CASES: Dict[str, Callable[[str], str]] = {
    "": lambda form: form,
    "lower": lower,
    "capitalize": capitalize,
}


def case_of(form: str, lemma: str) -> str:
    """The case the label of ``(form, lemma)`` applies first (see the module)."""
    if form != lower(form) and lemma == lower(lemma):
        return "lower"
    if (capitalize(form) != form and lemma != lower(lemma)
            and lemma == capitalize(lemma)):
        return "capitalize"
    return ""


def split_label(label: str) -> Tuple[str, str]:
    """``(case, tree string)`` of a lemma label (a label without a known case
    prefix is a tree string alone, case ``""``)."""
    head, space, rest = label.partition(" ")
    if space and head in CASES and head and rest.startswith("("):
        return head, rest
    return "", label


def join_label(case: str, tree: str) -> str:
    """The label of ``tree`` applied after ``case``."""
    return f"{case} {tree}" if case else tree


def cased_form(case: str, form: str) -> Optional[str]:
    """``form`` with ``case`` applied, or None where the case does not change
    it (a cased label then does not apply: the plain one does)."""
    if not case:
        return form
    changed = CASES[case](form)
    return changed if changed != form else None
