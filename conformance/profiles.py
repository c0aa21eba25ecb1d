"""The Hypothesis profiles the suite takes (``--profile``, ``--cascade-profile``): ``ci`` is
derandomized and bounded, ``thorough`` runs more examples. Their settings live in
:mod:`conformance.runner`; the names live here so option parsers need no Hypothesis."""

PROFILES = ("ci", "thorough")
