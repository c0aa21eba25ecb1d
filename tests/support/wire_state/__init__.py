"""The WIRE-4 harness: a client that plays Cascade actions against the fake LS and checks every
answer against a reference model of the documented semantics (wire.md sections 3 and 4) and
against what a client may rely on without the model.

- :mod:`.views`: what a client can tell about steps and generator records, the real client's
  rejection classes, the views a scripted turn must produce;
- :mod:`.model`: the reference model (:class:`~.model.Model`), written from the scenario alone;
- :mod:`.actions`: the client actions and the Hypothesis strategy that draws them;
- :mod:`.client`: the drivers (in-process core, real gRPC) and :class:`~.client.WireClient`.
"""
