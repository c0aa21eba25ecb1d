"""The engine's OpenAI-compatible HTTP front: ``cascade-engine serve``.

:func:`engine.http.app.build_app` is the ASGI application (Starlette); :mod:`engine.http.chat` the
chat turn behind it (cache, Cascade turn, structured output, ledger), independent of HTTP.
"""
