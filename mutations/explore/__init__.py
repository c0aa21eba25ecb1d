"""Exploratory mutmut runs (``python -m mutations.explore``, ``tox -e mutmut``): the scopes, their real scores
against each floor, the accepted survivors, and checkpoints to resume a run. Apart from the spec runner
(:mod:`mutations.runner`): neither imports the other."""
