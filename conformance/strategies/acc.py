"""ACC: repeated requests (cache hits) and random mixes of hits and misses across two callers."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import unicode_text
from conformance.targets import Target

Case = dict[str, Any]


def usages() -> st.SearchStrategy[dict[str, int]]:
    return st.fixed_dictionaries(
        {
            "input_tokens": st.integers(1, 20_000),
            "output_tokens": st.integers(1, 4_000),
            "cache_read_tokens": st.integers(0, 9_000),
            "cache_write_tokens": st.integers(0, 900),
        }
    )


@st.composite
def repeat_cases(draw: st.DrawFn, target: Target) -> Case:
    """One question asked twice, identically (stream or not)."""
    return {
        "prompt": draw(unicode_text(min_size=1, max_size=40)),
        "answer": draw(unicode_text(min_size=1, max_size=60)),
        "thinking": draw(st.one_of(st.just(""), unicode_text(min_size=1, max_size=20))),
        "stream": draw(st.booleans()),
        "include_usage": draw(st.booleans()),
        "usage": draw(usages()),
    }


def replay_usage_cases(target: Target) -> st.SearchStrategy[Case]:
    return repeat_cases(target).map(lambda case: {**case, "include_usage": True})


@st.composite
def request_mixes(draw: st.DrawFn, target: Target) -> Case:
    """2-8 requests drawn from three questions and two callers: repeats are candidate hits."""
    requests = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "question": st.integers(0, 2),
                    "caller": st.integers(0, 1),
                    "stream": st.booleans(),
                    "include_usage": st.booleans(),
                }
            ),
            min_size=2,
            max_size=8,
        )
    )
    return {"requests": requests, "usages": draw(st.lists(usages(), min_size=len(requests), max_size=len(requests)))}


def _record() -> st.SearchStrategy[dict[str, int] | None]:
    """A generator record: its usage (cache reads may well exceed fresh input), or none (null)."""
    usage = st.fixed_dictionaries(
        {
            "input_tokens": st.integers(0, 20_000),
            "output_tokens": st.integers(1, 4_000),
            "cache_read_tokens": st.integers(0, 40_000),
            "cache_write_tokens": st.integers(0, 6_000),
        }
    )
    return st.one_of(usage, usage, usage, st.none())


@st.composite
def usage_mapping_cases(draw: st.DrawFn, target: Target) -> Case:
    """One scripted turn (1-4 generator records, at least one with usage) asked twice, once streamed and
    once not, in either order."""
    records = draw(st.lists(_record(), min_size=1, max_size=4).filter(lambda rs: any(r is not None for r in rs)))
    return {
        "prompt": draw(unicode_text(min_size=1, max_size=40)),
        "answer": draw(unicode_text(min_size=1, max_size=60)),
        "thinking": draw(st.one_of(st.just(""), unicode_text(min_size=1, max_size=20))),
        "records": records,
        "stream_first": draw(st.booleans()),
        "include_usage": draw(st.sampled_from([True, True, True, False])),
    }
