"""The kit's oracles: for each family, what a correct implementation must produce for a case.

A model is written from the seeds and the references (``../shared/reference/``), never by calling
``engine/``: a property that asked the reference engine for the answer could never fail on it.
Models may read fakels's public API (its decoder, its journal entries), since the fake is where the
wire is observed.
"""
