"""Every command's output on the samples and the corpus matches tests/golden.json.

See ``tests/golden_outputs.py`` for how the cases are built and how to regenerate the file
when a change is meant to alter output."""

from __future__ import annotations

import pytest
from golden_outputs import Case, cases, load_golden, run_case

GOLDEN = load_golden()
CASES = list(cases())


def test_every_sample_case_is_recorded() -> None:
    missing = [c.key for c in CASES if c.key.startswith("samples/") and c.key not in GOLDEN]
    assert not missing, f"no golden output for {missing[:5]}: run tests/golden_outputs.py --update"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_output_matches_golden(case: Case) -> None:
    if case.key not in GOLDEN:
        pytest.skip("not recorded (a corpus file added after the golden file was written)")
    assert run_case(case) == GOLDEN[case.key], (
        f"{case.key}: output changed; if intended, regenerate with "
        "`.venv/bin/python tests/golden_outputs.py --update` and say why in the commit"
    )
