"""The shared fake-LS fixtures (tests/support/fake_ls_fixtures.py), run by pytester in process: a fake
is running when the fixture hands it over, ``start_fake_ls``'s fakes stop with their test, and
``start_module_fake_ls``'s fakes live through their module's tests and stop after them."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

FIRST_MODULE = """
import pytest

STARTED = []


@pytest.fixture(scope="module")
def shared(start_module_fake_ls):
    return start_module_fake_ls(csrf_token="shared-token")


def test_each_fake_is_running_with_its_options(start_fake_ls, shared):
    STARTED.extend([start_fake_ls(csrf_token="one"), start_fake_ls(csrf_token="two", control_port=0), shared])
    assert [fake.call(lambda: True) for fake in STARTED] == [True, True, True]
    assert STARTED[1].ports.control is not None and STARTED[0].ports.control is None


def test_a_tests_fakes_stopped_with_it_and_the_modules_fake_still_runs(shared):
    assert shared is STARTED[2]
    assert shared.call(lambda: True)
    for fake in STARTED[:2]:
        with pytest.raises(RuntimeError, match="not running"):
            fake.call(lambda: True)
"""

SECOND_MODULE = """
import pytest

from test_first import STARTED


def test_the_modules_fake_stopped_after_its_module():
    assert len(STARTED) == 3
    with pytest.raises(RuntimeError, match="not running"):
        STARTED[2].call(lambda: True)
"""


def test_the_fixtures_start_fakes_and_stop_each_at_the_end_of_its_scope(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_first=FIRST_MODULE, test_second=SECOND_MODULE)
    result = pytester.runpytest_inprocess("-p", "tests.support.fake_ls_fixtures", "-p", "no:randomly", "-p", "no:xdist")
    result.assert_outcomes(passed=3)
