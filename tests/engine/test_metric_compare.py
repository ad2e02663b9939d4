"""A metric gate's rules (issue 23, item 3), on figures alone: direction, noise, tolerance, min_improvement, target."""

from __future__ import annotations

from odin_magic.engine.metric_compare import Figures, compare
from odin_magic.loop.schema import Measure


def measure(**fields) -> Measure:
    return Measure.model_validate({"cmd": "python bench.py", "regex": "([0-9.]+)", "name": "accuracy", "unit": "%",
                                   "direction": "higher", **fields})


def test_higher_is_better_when_the_direction_says_so():
    d = compare(measure(), Figures.of([91.0]), Figures.of([90.0]))
    assert d.passed and d.change == "improved" and d.delta == 1.0
    assert d.summary == "accuracy 90 % → 91 % (+1%) ✅"
    d = compare(measure(), Figures.of([89.0]), Figures.of([90.0]))
    assert not d.passed and d.change == "worse" and "worse than the baseline by 1 %" in d.reason


def test_a_tolerance_lets_a_little_worse_pass_and_no_more():
    assert compare(measure(tolerance="2%"), Figures.of([88.5]), Figures.of([90.0])).passed  # 1.5 <= 1.8
    d = compare(measure(tolerance="2%"), Figures.of([88.0]), Figures.of([90.0]))
    assert not d.passed and "the tolerance 2% (1.8 %)" in d.reason
    assert compare(measure(tolerance=3), Figures.of([88.0]), Figures.of([90.0])).passed


def test_the_spread_of_either_measurement_is_the_noise():
    noisy_after = Figures.of([89.0, 92.0, 90.5])  # median 90.5, spread 3
    assert compare(measure(), Figures.of([88.0, 88.0, 88.0]), Figures.of([89.0, 92.0, 90.5])).change == "no change"
    d = compare(measure(min_improvement=0.1), noisy_after, Figures.of([88.0, 88.0, 88.0]))
    assert d.change == "no change" and not d.passed and "no improvement beyond the noise (spread 3 %)" in d.reason


def test_min_improvement_beyond_the_noise_and_the_amount():
    d = compare(measure(min_improvement="5%"), Figures.of([92.0]), Figures.of([90.0]))
    assert not d.passed and "better by 2 %, less than min_improvement 5% (4.5 %)" in d.reason
    assert compare(measure(min_improvement="5%"), Figures.of([95.0]), Figures.of([90.0])).passed


def test_the_target_decides_with_or_without_a_baseline():
    assert not compare(measure(target=95), Figures.of([93.0]), Figures.of([90.0])).passed
    assert compare(measure(target=95), Figures.of([95.0]), Figures.of([90.0])).passed
    alone = compare(measure(target=95), Figures.of([96.0]), None, "bench.py does not exist")
    assert alone.passed and alone.summary == "accuracy 96 % (no baseline, target 95 %) ✅"
    blocked = compare(measure(), Figures.of([96.0]), None, "bench.py does not exist")
    assert not blocked.passed and "the baseline could not be measured: bench.py does not exist" in \
        blocked.blocked["reason"]


def test_a_baseline_noisier_than_the_tolerance_is_not_decided():
    d = compare(measure(tolerance=1), Figures.of([99.0]), Figures.of([88.0, 90.0, 92.0]))
    assert not d.passed and d.blocked is not None
    assert d.blocked["reason"].startswith("accuracy: the measurement is noisier than the tolerance: raise repeat or "
                                          "tolerance (the baseline's 3 samples spread 4 %, tolerance 1 %)")
