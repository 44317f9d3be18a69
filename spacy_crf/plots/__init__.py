"""What ``python -m spacy_crf.plots`` (``spacy crf-plots``, :mod:`spacy_crf.commands.plots`) draws.

* :mod:`.figures`: the figures (label-interaction heatmaps, the confusion
  matrix, the learning curve, span confusion and span confidence); needs
  matplotlib, the ``plots`` extra.
* :mod:`.entities`: entity-level outcomes of a span target (span confusion,
  reliability bins, expected calibration error), without matplotlib.
* :mod:`.train_log`: the score table of a ``spacy train`` run, read back.
* :mod:`.confidence_html`: ``confidence.html``, tokens coloured by confidence.

The package stays where the command was so that ``python -m spacy_crf.plots``
(its ``__main__``) and imports of these modules keep working; it does not
import the command, which imports it.
"""
