"""The kit's oracles: for each family, what a correct implementation must produce for a case.

A model is written from the seeds and the references (``../shared/reference/``), never by calling
``engine/``: a property that asked the reference engine for the answer could never fail on it.
Models may read fakels's public API (its decoder, its journal entries), since the fake is where the
wire is observed.

A family's model (``models/<family>.py``) never imports another family's model: what several families
read alike is in :mod:`~conformance.models.journal` (the fake's journal, the kit's ledgers) and
:mod:`~conformance.models.stream` (a streamed answer), and JavaScript's string length is
:mod:`~conformance.models.js_text`; besides those, a model may use
:mod:`conformance.fixtures`, :mod:`conformance.wire_bytes` and fakels's public API. A family may have a
second module of its own (``store_wire`` beside ``store``).
"""
