"""Test modules added while a full mutmut run is under way.

mutmut runs only the tests its selection (``pytest_add_cli_args_test_selection`` in pyproject.toml) collects,
and resets every result when that selection changes. This folder is in the selection, so a test module put
here between the pieces of a run (``python -m mutations.explore --resume``) is collected, and the
survivors are tested again with it. Once the run has finished, move each module to the folder of what it tests
and add it to the selection there.
"""
