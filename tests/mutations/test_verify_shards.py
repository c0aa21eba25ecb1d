"""``cascade-mutations verify --shard I/N``: the N shards verify every mutation of the specs exactly once, each
with its spec's baseline, in balanced shares, the same ones on every machine."""

from __future__ import annotations

import pytest

from conformance.shards import Shard
from mutations.cli import _parser, sharded
from mutations.spec import Spec, default_spec_paths, load_spec


def _mutations(specs: list[Spec]) -> list[tuple[str, str]]:
    return [(spec.family, mutation.name) for spec in specs for mutation in spec.mutations]


@pytest.mark.parametrize("count", [1, 2, 4, 5])
def test_the_shards_verify_every_mutation_once_with_their_specs_baselines(count: int) -> None:
    specs = [load_spec(path) for path in default_spec_paths()]
    shares = [sharded(specs, Shard(index, count)) for index in range(1, count + 1)]
    assert sorted(m for share in shares for m in _mutations(share)) == sorted(_mutations(specs))
    sizes = [len(_mutations(share)) for share in shares]
    assert max(sizes) - min(sizes) <= 1, sizes
    by_family = {spec.family: spec for spec in specs}
    for share in shares:
        for spec in share:
            whole = by_family[spec.family]
            assert (spec.tests, spec.expect_baseline_pass) == (whole.tests, whole.expect_baseline_pass)
    assert shares == [sharded(specs, Shard(index, count)) for index in range(1, count + 1)], "deterministic"


def test_verify_takes_a_shard_as_i_of_n() -> None:
    assert _parser().parse_args(["verify", "--shard", "2/3"]).shard == Shard(2, 3)
    with pytest.raises(SystemExit):
        _parser().parse_args(["verify", "--shard", "4/3"])
