"""foreigngw: a second, independent OpenAI-compatible gateway in front of the Cascade LS.

The kit's tests use it as a "foreign" (third-party-style) gateway: it is written apart from the
reference engine (nothing from ``engine/`` or ``conformance/`` is imported; only the generated
protobuf modules of ``fakels``), frames its prompts its own way and keeps its own state, so the
kit's models are judged against a gateway they were not written next to.

    python -m tests.support.foreigngw        # configured by FGW_* / CASCADE_* environment variables

Modules, one job each: :mod:`.settings` (environment), :mod:`.lsclient` (gRPC calls, the done rule),
:mod:`.images` (image blocks), :mod:`.entries` (requests to conversation entries), :mod:`.prompt`
(framing, history budget, history images), :mod:`.markup` (tools and ``<fgw_call>`` markup),
:mod:`.structured` (json_schema checks), :mod:`.knobs` (what else a request asks of the answer,
for the cache key), :mod:`.runner` (one turn: cool-down, cache, pool, LS),
:mod:`.chat` and :mod:`.responses` (the two routes), :mod:`.store` (the response store),
:mod:`.http_io` (errors and the reply interface) and :mod:`.server` (HTTP server, routing, main).
"""
