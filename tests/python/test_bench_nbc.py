"""bench.nbc's ratio of a nonblocking call to the blocking one: taken within each round (one job, one
placement of the ranks) and then the median, not a ratio of two medians taken over rounds that ran in
different placements."""
import math

from bobcat.bench import nbc

K, B = "iallreduce/8/t_avg", "allreduce/8/t_avg"


def test_ratio_is_formed_per_round_then_the_median() -> None:
    # Two rounds in a slow placement, one in a fast one: per round the call is 1.2x, 1.25x, 1.5x.
    rounds = [{K: 0.48, B: 0.40}, {K: 0.50, B: 0.40}, {K: 0.12, B: 0.08}]
    assert nbc.same_run_ratio(rounds, K, B) == 1.25
    # The ratio of the medians would mix the placements: 0.48 / 0.40.
    assert abs(0.48 / 0.40 - nbc.same_run_ratio(rounds, K, B)) > 0.04


def test_rounds_missing_either_value_are_left_out() -> None:
    rounds = [{K: 0.375, B: 0.25}, {K: 0.5}, {B: 0.1}, {K: 0.2, B: 0.0}]
    assert nbc.same_run_ratio(rounds, K, B) == 1.5
    assert math.isnan(nbc.same_run_ratio([{K: 1.0}], K, B))
