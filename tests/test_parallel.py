"""jagged.stats.parallel: thread_map keeps the order, runs every item once, and raises what a call raises."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from jagged.stats import parallel


def test_results_follow_the_items_whatever_order_the_sizes_start_them_in():
    seen: list[int] = []
    lock = threading.Lock()

    def square(x: int) -> int:
        with lock:
            seen.append(x)
        return x * x

    got = parallel.thread_map(square, range(7), sizes=[1, 9, 3, 8, 2, 7, 5], workers=3)
    assert got == [0, 1, 4, 9, 16, 25, 36]
    assert sorted(seen) == list(range(7))           # each item once


def test_the_threads_give_the_numbers_of_the_serial_loop():
    rng = np.random.default_rng(0)
    blocks = [rng.normal(size=(50, 40)) for _ in range(6)]

    def work(b: np.ndarray) -> np.ndarray:
        return np.linalg.solve(b.T @ b + np.eye(40), b.T @ b.sum(axis=1))

    serial = parallel.thread_map(work, blocks, workers=1)
    threaded = parallel.thread_map(work, blocks, workers=2)
    for s, t in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(s, t)
    assert parallel.thread_map(work, [], workers=2) == []


def test_two_workers_run_at_the_same_time_and_one_worker_runs_here():
    barrier = threading.Barrier(2, timeout=10)     # only passes when two calls are running together
    assert parallel.thread_map(lambda x: barrier.wait() >= 0 and x, [1, 2], workers=2) == [1, 2]
    main = threading.get_ident()
    assert parallel.thread_map(lambda x: threading.get_ident() == main, [1, 2], workers=1) == [True, True]


def test_an_exception_in_a_call_reaches_the_caller():
    def fail_on_three(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x

    with pytest.raises(ValueError, match="three"):
        parallel.thread_map(fail_on_three, range(5), workers=2)


def test_available_cores_is_at_least_one():
    assert parallel.available_cores() >= 1
