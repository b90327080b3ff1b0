"""Independent pieces of one statistic on the machine's cores, and the package's one BLAS thread limiter."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, else the CPU count)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not on Linux
        return max(os.cpu_count() or 1, 1)


def thread_map(fn: Callable[[T], R], items: Iterable[T], *, sizes: Sequence[float] | None = None,
               workers: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, the calls spread over threads; results in the order of ``items``.

    ``fn`` does numpy work (releasing the GIL) and must not depend on the order of the calls;
    ``sizes`` (each item's work) starts the largest first; ``workers`` defaults to
    :func:`available_cores`.

    Notes
    -----
    With one worker or one item the calls run here in turn. With more, BLAS is held to one
    thread (:func:`one_blas_thread`): the threads already use the cores. Each result is what
    the call returns alone, whatever the number of threads; an exception is raised here after
    the other calls finished.
    """
    items = list(items)
    n = min(len(items), available_cores() if workers is None else max(int(workers), 1))
    if n <= 1:
        return [fn(x) for x in items]
    order = list(range(len(items)))
    if sizes is not None:
        order.sort(key=lambda i: -float(sizes[i]))
    with one_blas_thread(), ThreadPoolExecutor(max_workers=n) as pool:
        futures = {i: pool.submit(fn, items[i]) for i in order}
        return [futures[i].result() for i in range(len(items))]


@contextlib.contextmanager
def one_blas_thread(when: bool = True) -> Iterator[None]:
    """Hold BLAS to one thread (``threadpoolctl``) while ``when``; the package's one thread limiter.

    Without ``threadpoolctl`` (a dependency, tolerated when missing) nothing changes.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency; tolerated when missing
        when = False
    if not when:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
