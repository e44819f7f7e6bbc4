"""continue's lazy index and validate's split give exactly what the full reader gives, on every input
(issue 6, item 3): a property test over damaged copies of the fixtures (see differential.py).

Bounded here (HARNESSKIT_EXAMPLES raises it); `make fuzz` runs the same comparison on 10,000 cases
and more, with a per-case timeout, and prints the counts.
"""

from __future__ import annotations

import os
from pathlib import Path

from differential import KINDS, SEEDS, disagreements, mutate
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=int(os.environ.get("HARNESSKIT_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ops = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
               min_size=1, max_size=4)


@SETTINGS
@given(seed=st.sampled_from(SEEDS), damage=ops)
@example(seed=SEEDS[0], damage=[("nul", 197, 0)])  # a NUL inside an entry: the index took it for one before
@example(seed=SEEDS[9], damage=[("cut-after-brace", 7, 0)])
@example(seed=SEEDS[9], damage=[("deep", 5, 2)])  # 1025 levels: too deep on every path
@example(seed=SEEDS[9], damage=[("surrogate", 5, 0), ("deep", 5, 1)])  # the stdlib fallback, 1024 levels
@example(seed=SEEDS[0], damage=[("bad-utf8", 60, 0)])  # inside the header
def test_fast_paths_agree_with_the_full_reader(tmp_path: Path, seed: Path, damage: list) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert disagreements(path) == []
