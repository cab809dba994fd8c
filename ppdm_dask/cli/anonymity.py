"""``ppdm anonymize`` and ``ppdm access-control``: k-anonymous (l-diverse, t-close) releases of a table.

Every column needs a role (``--identifier`` dropped, ``--qi`` generalised, ``--sensitive`` and
``--insensitive`` published as is); nothing is guessed. Each command reads the table (typed:
CSV columns are strings unless ``--dtype``), fits the estimator, writes the release (keyed row
order, verified on the written files before the commit) and prints its summary. A sensitive
column declared without ``--l`` or ``--t`` is published without an attribute-disclosure model:
the job says so on stderr (and the report's summary warns).
``ppdm km-anonymize`` lives in :mod:`.km`.
"""

from __future__ import annotations

from typing import Any

import click

from ..anonymity.names import L_KINDS, METHODS, T_KINDS
from ._core import Context, job, write_release
from ._options import Number, release_output, roles, roles_from, split_list, stack, table_input
from ._summary import emit_release

#: hierarchies and the k / l parameters shared by both commands
privacy_options = stack(
    click.option(
        "--hierarchy",
        "hierarchy",
        multiple=True,
        metavar="ATTR=FILE|ATTR=interval:LO:HI:W",
        help="Hierarchy of a QI: an ARX CSV file (';', one row per leaf) or numeric intervals (the column is read as numbers). Repeatable.",
    ),
    click.option(
        "--hierarchies",
        "hierarchy_dir",
        default=None,
        metavar="DIR",
        help="Folder with one <attr>.csv or <...>_<attr>.csv hierarchy per QI (as shared/data/adult).",
    ),
    click.option("--k", "k", type=click.IntRange(min=1), required=True, help="Minimum equivalence class size (floor: 2)."),
    click.option("--l", "l", type=Number(min=1), default=None, help="l-diversity of --sensitive (floor: 2)."),
    click.option("--l-kind", type=click.Choice(L_KINDS), default="distinct", show_default=True),
    click.option("--c", "c", type=Number(min=0, min_open=True), default=None, help="c of recursive (c, l)-diversity."),
    click.option(
        "--t",
        "t",
        type=Number(0, 1),
        default=None,
        help="t-closeness of --sensitive: every class within Earth Mover's Distance t of the table (floor: t <= 0.5).",
    ),
    click.option(
        "--t-kind",
        type=click.Choice(T_KINDS),
        default="auto",
        show_default=True,
        help="EMD ground distance: ordered (numbers, in their order), equal (categories); auto: ordered for a numeric column.",
    ),
)


def warn_without_model(sensitive: Any, l: Any, t: Any) -> None:
    """On stderr, after a job that succeeded (a refused job says one line): sensitive columns
    declared without any attribute-disclosure model."""
    from ..anonymity.threat import model_warning

    w = model_warning(list(sensitive or ()), {"l": l, "t": t})
    if w:
        click.echo(f"ppdm: warning: {w}", err=True)


def _estimator_roles(rl: Any) -> dict[str, Any]:
    return {
        "identifiers": rl.identifiers,
        "sensitive": rl.sensitive,
        "insensitive": rl.insensitive,
        "allow_unique": rl.allow_unique,
    }


def _hierarchies(obj: Context, specs: Any, folder: str | None, qi: Any) -> dict[str, Any]:
    from ..anonymity.hierarchies import load_hierarchies

    return load_hierarchies(specs, folder, list(qi), storage_options=obj.storage_options)


def search_lines(report: dict[str, Any]) -> list[str]:
    if report.get("node"):
        return [
            f"  {'search':<12} node {report['node']}, {report.get('nodes_evaluated')} of {report.get('lattice_nodes')} lattice nodes evaluated"
        ]
    if report.get("n_partitions") is not None:
        return [
            f"  {'search':<12} {report['n_partitions']:,} partitions of {report.get('n_distinct_tuples', 0):,} distinct QI tuples"
        ]
    return []


@click.command()
@click.argument("src")
@click.argument("dst")
@roles
@privacy_options
@click.option(
    "--max-suppression",
    type=Number(0, 1),
    default=0.0,
    show_default=True,
    help="Fraction of records that may be suppressed (lattice, datafly); suppressed records are left out of the release.",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="lattice",
    show_default=True,
    help="lattice: optimal full-domain (min discernibility); datafly: greedy full-domain; mondrian: multidimensional partitioning; cluster: clustering l-diverse partition.",
)
@click.option("--keep-suppressed", is_flag=True, help="Publish suppressed records (every QI '*') instead of leaving them out.")
@click.option(
    "--consistent",
    is_flag=True,
    help="A refreshed extract: anonymise consistently with the earlier releases in the ledger that hold the same people "
    "(their intersection classes keep k people and diverse values; whom that cannot hold for is suppressed).",
)
@table_input
@release_output
@click.pass_obj
def anonymize(
    obj: Context,
    src: str,
    dst: str,
    identifiers: str | None,
    qi: str | None,
    sensitive: str | None,
    insensitive: str | None,
    allow_unique: str | None,
    person: str | None,
    hierarchy: tuple[str, ...],
    hierarchy_dir: str | None,
    k: int,
    l: float | None,
    l_kind: str,
    c: float | None,
    t: float | None,
    t_kind: str,
    max_suppression: float,
    method: str,
    keep_suppressed: bool,
    consistent: bool,
    sep: str | None,
    dtype: tuple[str, ...],
    schema: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """k-anonymise (and l-diversify, t-close) the table SRC (CSV or Parquet) and write the release to DST
    (DST.csv: one CSV file and DST.csv.manifest.json; otherwise a Parquet folder)."""
    from ..anonymity import KAnonymizer

    rl = roles_from(identifiers, qi, sensitive, insensitive, allow_unique)
    est = KAnonymizer(
        rl.quasi_identifiers,
        k=k,
        **_estimator_roles(rl),
        l=l,
        kind=l_kind,
        c=c,
        max_suppression=max_suppression,
        method=method,
        hierarchies=_hierarchies(obj, hierarchy, hierarchy_dir, rl.quasi_identifiers),
        keep_suppressed=keep_suppressed,
        allow_weak=allow_weak,
        key=obj.key(),
        t=t,
        t_kind=t_kind,
        person=split_list(person) or None,
        consistent=consistent,
        ledger=obj.ledger() if consistent else "default",
    )
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite, estimators=[est]) as j:
        table = obj.read_table(src, sep=sep, dtype=dtype, schema=schema)
        release = est.fit_release(table, progress=obj.progress)
        manifest, rep = write_release(
            obj, release, dst, original=table, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    emit_release(
        obj,
        release,
        src=src,
        dst=dst,
        manifest=manifest,
        job=j,
        extra_text=search_lines(est.report_),
        extra_json={"report": est.report_},
        report=rep,
    )
    warn_without_model(rl.sensitive, l, t)


def _permissions(obj: Context, url: str) -> Any:
    from ..anonymity.access_control import permission_entries
    from ..data.sidefiles import read_json_file
    from ..errors import DataFormatError, InvalidParameter

    doc = read_json_file(url, what="permissions", parameter="permissions", storage_options=obj.storage_options)
    try:  # the shape is checked here, where the file is known; the conditions need the table's schema
        permission_entries(doc)
    except InvalidParameter as exc:
        raise DataFormatError(f"permissions file {url}: {exc.message}", cli="--permissions FILE") from None
    return doc


def permission_lines(report: dict[str, Any]) -> list[str]:
    """Per role and per permission: imprecision and whether the bound holds, beside Mondrian."""
    lines = []
    base = {r["role"]: r for r in report["mondrian_role_report"]}
    for r in report["role_report"]:
        b = base.get(r["role"], {})
        lines.append(
            f"  role {r['role']:<14} {r['n_satisfied']}/{r['n_permissions']} met, imprecision {r['total_imprecision']:,} "
            f"(Mondrian {b.get('n_satisfied')}/{b.get('n_permissions')}, {b.get('total_imprecision', 0):,})"
        )
    for p, q in zip(report["permission_report"], report["mondrian_permission_report"]):
        lines.append(
            f"    {p['name'] or p['role']:<18} |Q_T|={p['true_count']:,} returned {p['returned']:,} imprecision "
            f"{p['imprecision']:,} <= {p['bound']:g}? {'yes' if p['satisfied'] else 'NO'} (Mondrian {q['imprecision']:,})"
        )
    return lines


@click.command("access-control")
@click.argument("src")
@click.option(
    "--permissions",
    "perm_file",
    required=True,
    metavar="FILE",
    help="JSON file: a list of {role, bound, where: {attr: [lo, hi] | value | [values]}, name}.",
)
@roles
@privacy_options
@click.option(
    "--out", "dst", default=None, metavar="DST", help="Write the release here (.csv: one CSV file; otherwise a Parquet folder)."
)
@table_input
@release_output
@click.pass_obj
def access_control(
    obj: Context,
    src: str,
    perm_file: str,
    identifiers: str | None,
    qi: str | None,
    sensitive: str | None,
    insensitive: str | None,
    allow_unique: str | None,
    person: str | None,
    hierarchy: tuple[str, ...],
    hierarchy_dir: str | None,
    k: int,
    l: float | None,
    l_kind: str,
    c: float | None,
    t: float | None,
    t_kind: str,
    dst: str | None,
    sep: str | None,
    dtype: tuple[str, ...],
    schema: str | None,
    overwrite: bool,
    rows_per_file: int | None,
    allow_weak: bool,
    check: bool,
    report: bool,
) -> None:
    """Anonymise SRC for a workload of role permissions with imprecision bounds (Pervaiz et al.)
    and report, per permission and per role, the imprecision and whether the bound holds, beside
    plain Mondrian; with --out, write the release."""
    from ..anonymity import AccessControlAnonymizer

    rl = roles_from(identifiers, qi, sensitive, insensitive, allow_unique)
    est = AccessControlAnonymizer(
        _permissions(obj, perm_file),
        rl.quasi_identifiers,
        k=k,
        **_estimator_roles(rl),
        l=l,
        kind=l_kind,
        c=c,
        hierarchies=_hierarchies(obj, hierarchy, hierarchy_dir, rl.quasi_identifiers),
        allow_weak=allow_weak,
        key=obj.key(),
        t=t,
        t_kind=t_kind,
        person=split_list(person) or None,
    )
    with job(obj, inputs=[src], outputs=[dst], overwrite=overwrite, estimators=[est]) as j:
        table = obj.read_table(src, sep=sep, dtype=dtype, schema=schema)
        release = est.fit_release(table, progress=obj.progress)
        manifest, rep = write_release(
            obj, release, dst, original=table, overwrite=overwrite, rows_per_file=rows_per_file, check=check, report=report
        )
    r = est.report_
    head = [
        f"  {'permissions':<12} {r['permissions_satisfied']}/{r['permissions']} met (plain Mondrian: {r['mondrian_permissions_satisfied']}); "
        f"total imprecision {r['total_imprecision']:,} (Mondrian {r['mondrian_total_imprecision']:,})"
    ]
    emit_release(
        obj,
        release,
        src=src,
        dst=dst,
        manifest=manifest,
        job=j,
        extra_text=head + permission_lines(r),
        extra_json={"report": r},
        report=rep,
    )
    warn_without_model(rl.sensitive, l, t)
