"""The pytest plugins the spec runner names on pytest command lines (``-p mutations.plugins.netdeny``), so
their names are public: the loopback-only network guard, the outcome summary and the collection listing."""
