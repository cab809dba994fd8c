"""ppdm_dask.progress.compute_each: every result reaches the consumer once, and on a cluster
nothing stays held once consumed."""

from __future__ import annotations

import time

import dask
import numpy as np
import pytest

from ppdm_dask.progress import compute_each, ship


def _square(i: int) -> np.ndarray:
    return np.full(1000, i * i)


def test_compute_each_locally():
    got = []
    compute_each([dask.delayed(_square)(i) for i in range(7)], lambda i, r: got.append((i, int(r[0]))))
    assert sorted(got) == [(i, i * i) for i in range(7)]


@pytest.mark.cluster
def test_compute_each_on_a_cluster_releases_results(cluster_client):
    on_cluster = cluster_client  # passed explicitly, not the current client
    got = []
    tasks = [dask.delayed(_square, pure=True)(i) for i in range(12)]
    compute_each(tasks, lambda i, r: got.append((i, int(r[0]))), client=on_cluster)
    assert sorted(got) == [(i, i * i) for i in range(12)]
    keys = {t.key for t in tasks}
    deadline = time.monotonic() + 10
    while keys & set(on_cluster.who_has()) and time.monotonic() < deadline:
        time.sleep(0.05)  # releases reach the scheduler asynchronously
    assert not keys & set(on_cluster.who_has())
    with pytest.raises(ZeroDivisionError):
        compute_each([dask.delayed(lambda: 1 / 0)()], lambda i, r: got.append(r), client=on_cluster)


def test_ship_locally_hands_back_the_payloads():
    payloads = [np.arange(3), (np.ones(2), None)]
    out = ship(payloads)
    assert len(out) == 2 and all(a is b for a, b in zip(out, payloads))


@pytest.mark.cluster
def test_ship_scatters_to_a_cluster(cluster_client):
    futures = ship([np.arange(5), np.arange(7)], cluster_client)
    assert all(type(f).__name__ == "Future" for f in futures)
    got = dask.compute(*[dask.delayed(np.sum)(f) for f in futures], scheduler=cluster_client)
    assert list(got) == [10, 21]


def test_lists_of_delayed_are_computed_as_one_graph():
    """A list (or tuple) of delayed objects becomes one delayed object of the same type, so
    dask optimizes their shared graph once; results are unchanged."""
    import dask
    from dask.delayed import Delayed

    from ppdm_dask import progress as P

    base = dask.delayed(lambda: 10)()
    items = [dask.delayed(lambda b, i: b + i)(base, i) for i in range(4)]
    one = P._one_graph(items)
    assert isinstance(one, Delayed)
    assert P.compute(items, scheduler="sync") == ([10, 11, 12, 13],)
    assert P.compute(tuple(items), scheduler="sync") == ((10, 11, 12, 13),)
    mixed = [items[0], 5]
    assert P._one_graph(mixed) is mixed and P.compute(mixed, scheduler="sync") == ([10, 5],)
