"""Keyed randomness: reproducible per unit, secret by default."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ppdm_dask.errors import InvalidParameter
from ppdm_dask.random import Key, Tag, as_key, generator


def test_same_key_same_stream_and_units_independent():
    k = Key(12345)
    a = k.generator(Tag.DISTORT, 3).random(5)
    b = Key(12345).generator(Tag.DISTORT, 3).random(5)
    c = k.generator(Tag.DISTORT, 4).random(5)
    d = k.generator(Tag.QUEST, 3).random(5)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, d)


def test_matches_spec_seedsequence_convention():
    # docs/randomness.md#streams-and-tags: SeedSequence(entropy=key, spawn_key=(tag, *unit))
    ref = np.random.default_rng(np.random.SeedSequence(entropy=7, spawn_key=(4, 2))).random(3)
    assert np.array_equal(generator(Key(7), 4, 2).random(3), ref)


def test_default_key_is_fresh_and_never_shown(tmp_path):
    k1, k2 = as_key(None), as_key(None)
    assert k1 != k2
    assert "secret" in repr(k1) and str(k1._value) not in repr(k1)
    path = tmp_path / "key"
    k1.to_file(path)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert Key.from_file(path) == k1
    assert pickle.loads(pickle.dumps(k1)) == k1


def test_key_validation():
    for bad in (-1, 2**128, 1.5, "abc", True):
        with pytest.raises(InvalidParameter):
            as_key(bad)
    assert as_key(b"\x01") == Key(1)
    with pytest.raises(InvalidParameter):
        generator(5, Tag.QUEST)  # type: ignore[arg-type]


def test_digest_is_one_way_and_purpose_bound():
    k = Key(0xABCDEF)
    d1, d2 = k.digest("graph"), k.digest("other")
    assert d1 != d2 and len(d1) == 64 and Key(0xABCDEF).digest("graph") == d1
    assert format(0xABCDEF, "x") not in d1 and Key(1).digest("graph") != d1
