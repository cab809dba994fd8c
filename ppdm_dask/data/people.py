"""The synthetic ``people`` sample: the table on which a careless release leaks.

Columns ``name`` (unique "First Last", a direct identifier), ``zip`` (five-digit strings, most
with a leading zero, 30 distinct), ``age`` (18-90), ``sex`` and ``diagnosis`` (8 values). Every
value is drawn from fixed lists with a fixed public seed, so :func:`generate_people` rebuilds
``samples/people.csv`` byte for byte; :func:`zip_hierarchy` gives the ARX hierarchy of the zip
codes (``02138;0213*;021**;02***;0****;*``) shipped as ``samples/people_hierarchy_zip.csv``,
beside ``samples/people_hierarchy_sex.csv`` (``female;*``, ``male;*``) so that the full-domain
methods find a hierarchy for each of zip and sex (age takes ``interval:0:100:10``).
Nobody in it exists.

Regenerate with ``python -m ppdm_dask.data.people ppdm_dask/data/samples``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["generate_people", "zip_hierarchy", "write_samples", "ZIPS", "DIAGNOSES", "SEED"]

#: public seed of the sample (not a secret: the sample is meant to be reproducible)
SEED = 20140611
FIRST = (
    "Aaliyah Adam Alice Amir Ana Anton Ava Ben Bianca Carlos Chen Chloe Daniel Dara Diego Elena Eli Emma Farah Felix "
    "Grace Hana Hugo Ines Isaac Ivy Jamal Jana Jonas Julia Kai Kira Leo Lina Luca Maya Mei Milan Nadia Noah Nora "
    "Omar Paula Priya Rafael Rosa Sam Sara Tariq Tess Theo Uma Victor Wen Yara Yusuf Zoe Zara Liam Mila"
).split()
LAST = (
    "Abbott Ahmed Alvarez Andersen Baker Bauer Brown Chen Costa Cruz Dubois Evans Fischer Garcia Gomez Hansen Haddad "
    "Ito Jensen Johnson Kaur Kim Kowalski Larsen Lee Lopez Martin Meyer Moreau Murphy Nguyen Novak Okafor Olsen "
    "Park Patel Petrov Quinn Rahman Rossi Sato Schmidt Silva Singh Smith Sousa Tanaka Taylor Torres Walker Wang "
    "Weber Wilson Wong Yamamoto Young Zhang Ziegler Nowak"
).split()
#: 30 zip codes: New England (leading zero) and a few New York / New Jersey ones
ZIPS = (
    "02138 02139 02140 02141 02142 02143 02144 02145 02446 02445 02114 02115 02116 01002 01003 01060 01854 "
    "03101 03104 04101 05401 06511 06510 07030 07302 08540 10001 10002 10025 11201"
).split()
DIAGNOSES = ("asthma", "bronchitis", "diabetes", "flu", "gastritis", "healthy", "hypertension", "migraine")


def generate_people(n: int = 1000, seed: int = SEED) -> pd.DataFrame:
    """``n`` synthetic people (all columns strings, as a CSV holds them).

    Zip codes follow a Zipf-like law (a few large towns); ages a clipped normal law; the
    diagnosis depends mildly on age (hypertension and diabetes grow more likely with it).
    """
    if n > len(FIRST) * len(LAST):
        raise ValueError(f"at most {len(FIRST) * len(LAST)} distinct names")
    rng = np.random.default_rng(seed)
    pairs = rng.choice(len(FIRST) * len(LAST), size=n, replace=False)
    names = [f"{FIRST[p // len(LAST)]} {LAST[p % len(LAST)]}" for p in pairs]
    w = 1.0 / np.arange(1, len(ZIPS) + 1) ** 0.8
    zips = rng.choice(len(ZIPS), size=n, p=w / w.sum())
    ages = np.clip(np.round(rng.normal(46, 17, size=n)), 18, 90).astype(int)
    sex = rng.choice(["female", "male"], size=n)
    base = np.array([1.0, 0.8, 0.6, 1.2, 0.7, 1.5, 0.6, 0.9])
    old = (ages[:, None] - 18) / 72.0 * np.array([0, 0, 1.2, 0, 0, -0.6, 1.8, 0])
    p = base[None, :] * np.exp(old)
    p /= p.sum(axis=1, keepdims=True)
    diag = (p.cumsum(axis=1) > rng.random(n)[:, None]).argmax(axis=1)
    return pd.DataFrame(
        {
            "name": names,
            "zip": [ZIPS[z] for z in zips],
            "age": [str(a) for a in ages],
            "sex": sex.tolist(),
            "diagnosis": [DIAGNOSES[d] for d in diag],
        }
    )


def zip_hierarchy(zips: list[str] | tuple[str, ...] = ZIPS) -> list[list[str]]:
    """ARX rows ``[zip, zip[:4]+'*', zip[:3]+'**', ..., '*']`` for five-digit zip codes."""
    return [[z] + [z[: 5 - i] + "*" * i for i in range(1, 5)] + ["*"] for z in sorted(zips)]


def write_samples(folder: str | Path) -> None:
    """Write ``people.csv``, ``people_hierarchy_zip.csv`` and ``people_hierarchy_sex.csv`` into ``folder``."""
    folder = Path(folder)
    generate_people().to_csv(folder / "people.csv", index=False, lineterminator="\n")
    (folder / "people_hierarchy_zip.csv").write_text("".join(";".join(r) + "\n" for r in zip_hierarchy()))
    (folder / "people_hierarchy_sex.csv").write_text("female;*\nmale;*\n")


if __name__ == "__main__":  # pragma: no cover
    write_samples(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "samples")
