"""The values the oldest and the newest supported dependency versions must agree on.

``python .ci/release_values.py write OUT.json`` makes one release per family with fixed keys on
bundled and generated data (every anonymization method, access control, k^m-anonymity, EMASK,
δ-anonymous sketches, condensation, the KRIMP generator; and the baskets grouped from the bundled
event log) and writes the decoded contents of every Parquet file of each release (rows as pyarrow
reads them, not bytes: the Parquet metadata names the writing library's version), and the input
digests and persons' hashes that a ledger shared across versions joins by (``identities``).
``python .ci/release_values.py compare A.json B.json`` says, file by file, where two such records
differ and exits 1 if they do. ``.ci/run`` writes one record in each of its two environments and
compares them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any


def _decoded(folder: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    out = {}
    for path in sorted(folder.glob("*.parquet")):
        table = pq.read_table(path)
        out[path.name] = {"schema": [f"{f.name}: {f.type}" for f in table.schema], "rows": table.to_pylist()}
    return out


def _releases(work: Path) -> dict[str, Path]:
    import numpy as np

    from ppdm_dask import Key, read, read_table
    from ppdm_dask.anonymity import AccessControlAnonymizer, Hierarchy, KAnonymizer, KmAnonymizer
    from ppdm_dask.condensation import Condenser, privacy_levels
    from ppdm_dask.data.datasets import sample_path
    from ppdm_dask.data.events import read_events
    from ppdm_dask.data.quest import quest
    from ppdm_dask.emask import Distorter
    from ppdm_dask.krimp import KrimpGenerator
    from ppdm_dask.sketch import DeltaAnonymizer

    done: dict[str, Path] = {}

    def write(name: str, release: Any) -> None:
        # one input released by several methods to compare versions, never published: kept out of
        # the ledger (whose composition would refuse the second method's classes)
        release.write(str(work / name), ledger=None)
        done[name] = work / name

    people = read_table(str(sample_path("people")), dtype={"age": "int"})
    hier = {
        "zip": Hierarchy.from_csv(str(sample_path("people-hierarchy-zip")), name="zip"),
        "sex": Hierarchy.from_csv(str(sample_path("people-hierarchy-sex")), name="sex"),
        "age": Hierarchy.from_intervals(width=10, low=10, high=100, closed="left", name="age"),
    }
    for method in ("lattice", "datafly", "mondrian", "cluster"):
        write(
            f"relational-{method}",
            KAnonymizer(
                ["age", "sex", "zip"],
                k=5,
                l=2,
                sensitive="diagnosis",
                identifiers=["name"],
                method=method,
                hierarchies=hier,
                key=Key(2026),
            ).fit_release(people),
        )
    perms = [
        {"role": "clinic", "bound": 5, "where": {"zip": ["02138", "02139"]}},
        {"role": "study", "bound": 10, "where": {"age": [30, 45]}},
    ]
    write(
        "access-control",
        AccessControlAnonymizer(
            perms,
            ["age", "sex", "zip"],
            k=5,
            sensitive="diagnosis",
            identifiers=["name"],
            hierarchies={"zip": hier["zip"]},
            key=Key(2026),
        ).fit_release(people),
    )
    clicks = read(str(sample_path("bms-webview-1-5k")))
    items = Hierarchy.balanced(clicks.n_items, 5, labels=clicks.vocabulary.labels)
    write("km", KmAnonymizer(items, k=10, m=2, key=Key(6)).fit_release(clicks))
    baskets = quest("T10.I4.D20K.N1K", key=Key(42))
    write("emask", Distorter(0.4, 0.98, key=Key(7)).fit_transform(baskets))
    write("sketch", DeltaAnonymizer(delta=0.3, m_max=32, key=Key(8)).fit_transform(quest("C20.I4.D3K", key=Key(3))))
    ecoli = read_table(str(sample_path("ecoli")))
    cols = ["mcg", "gvh", "lip", "chg", "aac", "alm1", "alm2"]
    X = np.column_stack([ecoli[c].astype(float).compute().to_numpy() for c in cols])
    write("condensation", Condenser(key=Key(12)).fit(X, privacy_levels(len(X), 2, 6, key=Key(11))).release())
    led7 = read(str(sample_path("led7")))
    write("krimp", KrimpGenerator(min_support=10, key=Key(4)).fit(led7).release())
    # not a release, but its keyed order and its baskets must not change between versions either
    events = str(sample_path("events"))
    sessions, _ = read_events(events, user="user", item="item", time="ts", session_gap="30min", key=Key(39))
    sessions.to_parquet(str(work / "ingest-sessions"))
    done["ingest-sessions"] = work / "ingest-sessions"
    return done


def _identities() -> dict[str, Any]:
    """What a ledger shared by a team on two versions must agree on: the input digests (records
    and order) and the persons' hashes (the identifier column of a table, the events' user, the
    record itself), before the ledger keys them."""
    import dask
    import numpy as np

    from ppdm_dask import Key, read, read_table
    from ppdm_dask.data.datasets import sample_path
    from ppdm_dask.data.digest import content_digest
    from ppdm_dask.data.events import read_events
    from ppdm_dask.data.persons import frame_people, transaction_people

    def people_hashes(people: Any) -> list[str]:
        blocks = dask.compute(*people.blocks, scheduler="sync")
        return [f"{int(a):016x}{int(b):016x}" for blk in blocks for a, b in np.asarray(blk).reshape(-1, 2)]

    table = read_table(str(sample_path("people")), dtype={"age": "int"})
    clicks = read(str(sample_path("bms-webview-1-5k")))
    sessions, _ = read_events(
        str(sample_path("events")), user="user", item="item", time="ts", session_gap="30min", key=Key(39), person_key=Key(5)
    )
    out: dict[str, Any] = {}
    for name, obj in (("people", table), ("bms-webview-1-5k", clicks), ("sessions", sessions)):
        d = content_digest(obj)
        out[f"digest-{name}"] = {"records": d.records.hex(), "order": d.order.hex()}
    out["persons-people-by-name"] = people_hashes(frame_people(table, ["name"]))
    out["persons-people-records"] = people_hashes(frame_people(table))
    out["persons-clicks-records"] = people_hashes(transaction_people(clicks))[:2000]
    out["persons-sessions-users"] = people_hashes(transaction_people(sessions))
    return out


def write_record(out: Path) -> None:
    import importlib.metadata as md

    with tempfile.TemporaryDirectory() as tmp:
        releases = _releases(Path(tmp))
        record = {
            "versions": {p: md.version(p) for p in ("numpy", "pandas", "pyarrow", "dask", "scipy", "numba")},
            "releases": {name: _decoded(folder) for name, folder in releases.items()},
        }
    record["releases"]["identities"] = _identities()
    out.write_text(json.dumps(record))
    print(
        f"{len(record['releases'])} releases decoded into {out} ({', '.join(f'{k} {v}' for k, v in record['versions'].items())})"
    )


def _differences(a: Any, b: Any, where: str, out: list[str], worst: dict[str, float]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}/{k}: only in {'the first' if k in a else 'the second'}")
            else:
                _differences(a[k], b[k], f"{where}/{k}", out, worst)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} against {len(b)} entries")
        for i, (x, y) in enumerate(zip(a, b)):
            _differences(x, y, f"{where}[{i}]", out, worst)
    elif isinstance(a, float) and isinstance(b, float):
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            out.append(f"{where}: {a!r} against {b!r}")
            file = where.split("[", 1)[0]
            worst[file] = max(worst.get(file, 0.0), abs(a - b) / max(abs(a), abs(b), 1e-300))
    elif a != b or type(a) is not type(b):
        out.append(f"{where}: {a!r} against {b!r}")


def compare(first: Path, second: Path) -> int:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    print("first: " + ", ".join(f"{k} {v}" for k, v in a["versions"].items()))
    print("second: " + ", ".join(f"{k} {v}" for k, v in b["versions"].items()))
    diffs: list[str] = []
    worst: dict[str, float] = {}
    _differences(a["releases"], b["releases"], "", diffs, worst)
    for name in sorted(set(a["releases"]) | set(b["releases"])):
        mine = [d for d in diffs if d.startswith(f"/{name}/") or d == f"/{name}"]
        print(f"{name}: {'the same values' if not mine else f'{len(mine)} values differ'}")
        for d in mine[:5]:
            print(f"    {d}")
    for file, rel in sorted(worst.items()):
        print(f"largest relative difference in {file}: {rel:.3g}")
    return 1 if diffs else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("first", type=Path)
    cmp.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        write_record(args.out)
        return 0
    return compare(args.first, args.second)


if __name__ == "__main__":
    sys.exit(main())
