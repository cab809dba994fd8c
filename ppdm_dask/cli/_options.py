"""Options declared once and shared by the commands (as click decorators)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import click

FORMATS = ("parquet", "fimi", "csv")


class Number(click.FloatRange):
    """A float option that must be a finite number, optionally within a range.

    click's ``float`` and ``FloatRange`` take ``nan`` (every comparison with NaN is false, so
    it passes any range) and ``inf``; a NaN probability or threshold then runs a job on
    nonsense or fails deep inside with a message about a Python parameter. Refusing them here
    gives the usual one-line usage error naming the flag.
    """

    name = "number"

    def __init__(
        self, min: float | None = None, max: float | None = None, min_open: bool = False, max_open: bool = False
    ) -> None:
        super().__init__(min, max, min_open=min_open, max_open=max_open, clamp=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def stack(*decorators: Callable[..., Any]) -> Callable[..., Any]:
    """One decorator that applies ``decorators`` in the order written."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def split_list(text: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def support_value(text: str, flag: str = "--min-support") -> float:
    """``--min-support``: a fraction of the transactions in (0, 1] (``'1'`` is 100 %, every
    transaction). An absolute count is given with ``--min-count`` (:func:`support_from`).

    Raises :class:`~ppdm_dask.errors.InvalidParameter` (one ``ppdm: error:`` line naming the
    flag, whichever way the command line is entered)."""
    from ..errors import InvalidParameter

    t = str(text).strip()
    try:
        value = float(t)
    except ValueError:
        raise InvalidParameter(
            f"{flag} {text!r} is not a number",
            cli=f"{flag} takes a fraction of the transactions in (0, 1], --min-count an absolute count",
        ) from None
    if not 0.0 < value <= 1.0:  # also NaN
        hint = (
            f"for an absolute count of {t} transactions give --min-count {t}"
            if t.isdigit() and int(t) >= 2
            else f"{flag} takes a fraction of the transactions in (0, 1], --min-count an absolute count"
        )
        raise InvalidParameter(f"{flag} {t} is not a fraction of the transactions in (0, 1]", cli=hint)
    return value


#: ``--min-support FRACTION`` and ``--min-count N`` (mutually exclusive; see :func:`support_from`)
def support_options(default: float | None = None, *, what: str = "Minimum support", note: str = "") -> Callable[..., Any]:
    """The two spellings of a minimum support; ``default`` applies when neither is given (else
    one of them is required). ``note`` ends both helps."""
    tail = f" [default: {default:g}]" if default is not None else " Or give --min-count."
    note = f" {note}" if note else ""
    return stack(
        click.option(
            "--min-support",
            default=None,
            metavar="FRACTION",
            help=f"{what} as a fraction of the transactions in (0, 1] (e.g. 0.003; 1 = every transaction).{note}{tail}",
        ),
        click.option(
            "--min-count",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help=f"{what} as an absolute number of transactions (integer >= 1), instead of --min-support.{note}",
        ),
    )


def support_from(min_support: str | None, min_count: int | None, default: float | None = None) -> float | int:
    """The miner's ``min_support`` from the two options: a float fraction from ``--min-support``,
    an int count from ``--min-count``; one usage error if both are given, or neither without a
    default."""
    if min_support is not None and min_count is not None:
        raise click.UsageError(
            f"give either --min-support (a fraction in (0, 1]) or --min-count (a number of transactions), "
            f"not both (got --min-support {min_support} and --min-count {min_count})"
        )
    if min_count is not None:
        return int(min_count)
    if min_support is not None:
        return support_value(min_support)
    if default is None:
        raise click.UsageError(
            "Missing option '--min-support' (a fraction in (0, 1]) or '--min-count' (a number of transactions)"
        )
    return float(default)


def check_count(min_support: float | int, n_transactions: int, where: str = "the input") -> None:
    """A ``--min-count`` above the number of transactions: one error naming the flag."""
    from ..errors import InvalidParameter

    if isinstance(min_support, int) and min_support > n_transactions:
        raise InvalidParameter(
            f"--min-count {min_support} exceeds the {n_transactions:,} transactions of {where}",
            cli=f"--min-count at most {n_transactions:,}, or a --min-support fraction",
        )


def support_text(min_support: float | int) -> str:
    """How a summary line shows the support asked for."""
    return f"min-count {min_support}" if isinstance(min_support, int) else f"min-support {min_support:g}"


#: ``--max-candidates`` of the Apriori miners (``mine``, ``emask mine``): checked before a level is built
apriori_max_candidates = click.option(
    "--max-candidates",
    type=click.IntRange(min=1),
    default=20_000_000,
    show_default=True,
    help="Stop with an error (saying how many and how much memory) before a level builds more candidate itemsets than this.",
)


def _read_as_baskets(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and ctx.obj is not None:
        ctx.obj.as_baskets = True  # the job's runtime reads table-like text as baskets


def _allow_composition(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if ctx.obj is not None:
        ctx.obj.allow_composition = bool(value)  # the job's release write reads it
        ctx.obj.writes_release = True  # a command with the release options (see Context.ingest_key)


#: ``--as-baskets``: the override of the input-kind check (:mod:`ppdm_dask.data.kind`)
as_baskets = click.option(
    "--as-baskets",
    is_flag=True,
    expose_value=False,
    callback=_read_as_baskets,
    help="Read text input as baskets even where it looks like a table (a header row of column names, "
    "a fixed number of fields): for a basket CSV whose first line really is a basket.",
)


def _basket_source(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if ctx.obj is not None and param.name and value not in (None, False):
        ctx.obj.basket_source[param.name] = value  # the job's readers take the baskets from this source


HEAVY_USERS = ("keep", "cap", "drop")


def _source_option(*decls: str, **kw: Any) -> Callable[..., Any]:
    return click.option(*decls, expose_value=False, callback=_basket_source, **kw)


#: where the baskets of a Parquet or CSV source are: a list column of any name, or an event table
#: (one row per user and item) grouped by user, session or time window (:mod:`ppdm_dask.data.events`)
items_column = _source_option(
    "--items-column",
    metavar="COL",
    help="The list column of item labels in a foreign Parquet file [default: items].",
)

#: the options of an event table (one row per user and item), grouped by user, session or window
event_source = stack(
    _source_option(
        "--user",
        metavar="COL",
        help="Read an event table (one row per user and item): the user column. An identifier: never written, "
        "never printed; baskets come out in a keyed random order.",
    ),
    _source_option("--item", metavar="COL", help="The item column of an event table (labels: strings or integers)."),
    _source_option("--time", metavar="COL", help="The time column of an event table (timestamp, date or number)."),
    _source_option(
        "--session-gap",
        metavar="DURATION",
        help="One basket per session: a new session starts after a pause longer than this "
        "('30min', '2h'; a number in the --time column's units).",
    ),
    _source_option(
        "--window",
        metavar="DURATION",
        help="One basket per user and time window of this length ('1d', '1h'; windows start at the epoch).",
    ),
    _source_option("--count", is_flag=True, help="Keep how often an item occurs in a basket as its weight."),
    _source_option(
        "--max-user-events",
        type=click.IntRange(min=1),
        help="Users with more events than this are heavy (bots?): named by a pseudonym in the summary [default: 100000].",
    ),
    _source_option(
        "--heavy-users",
        type=click.Choice(HEAVY_USERS),
        help="What to do with heavy users: keep them, cap them at their latest --max-user-events events, "
        "or drop them [default: keep].",
    ),
    _source_option(
        "--max-baskets-per-user",
        type=click.IntRange(min=1),
        metavar="N",
        help="A user with more sessions or windows than this keeps N of them, chosen with the key (uniformly, "
        "whatever their time), so that one person weighs at most N baskets [default: no bound].",
    ),
)


#: where a basket command finds the baskets
basket_source = stack(items_column, event_source)

#: ``--format``: input format of transaction data (with ``--as-baskets`` and the basket source)
input_format = stack(
    click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Input format (default: from the extension; a folder is Parquet).",
    ),
    as_baskets,
    basket_source,
)

#: ``--overwrite``
overwrite = click.option("--overwrite", is_flag=True, help="Replace an existing output (refused otherwise, before any work).")

#: options of every command that writes a release
release_output = stack(
    overwrite,
    click.option(
        "--rows-per-file",
        type=click.IntRange(min=1),
        default=None,
        help="Rows per output part file (default: the family's, ~100 MB per file).",
    ),
    click.option(
        "--allow-weak",
        is_flag=True,
        help="Accept parameters below the privacy floors (e.g. k < 2, basic privacy < 90%); the override is recorded in the manifest.",
    ),
    click.option(
        "--allow-composition",
        is_flag=True,
        expose_value=False,
        callback=_allow_composition,
        help="Accept a release that, composed with the earlier releases of its input in the ledger, exceeds a "
        "limit (an ε budget, k of the intersected classes ...); recorded in the manifest.",
    ),
    click.option(
        "--check/--no-check",
        default=True,
        show_default=True,
        help="Read the written release back and recount its guarantee before committing it.",
    ),
    click.option(
        "--report/--no-report",
        default=True,
        show_default=True,
        help="Write the owner's privacy and utility report beside the release (DST.report.html, DST.report.json; "
        "never inside the release folder, which may be shared).",
    ),
)

#: options of commands that read a relational table (CSV or Parquet)
table_input = stack(
    click.option("--sep", default=None, help="CSV field separator (default: sniffed from the file)."),
    click.option(
        "--dtype",
        "dtype",
        multiple=True,
        metavar="COL=TYPE",
        help="Column type (string, int, float, bool); CSV columns are strings unless typed. Repeatable.",
    ),
    click.option("--schema", default=None, metavar="FILE", help='JSON file of column types: {"age": "int", ...}.'),
)

#: attribute roles of a relational table
roles = stack(
    click.option(
        "--identifier",
        "identifiers",
        default=None,
        metavar="COLS",
        help="Comma-separated direct identifiers (name, e-mail ...): never published.",
    ),
    click.option("--qi", default=None, metavar="COLS", help="Comma-separated quasi-identifiers: generalised."),
    click.option("--sensitive", default=None, metavar="COL", help="Sensitive attribute: published as is (protected by --l)."),
    click.option("--insensitive", default=None, metavar="COLS", help="Comma-separated columns published as is."),
    click.option(
        "--allow-unique",
        default=None,
        metavar="COLS",
        help="Quasi-identifier or insensitive columns accepted although nearly unique per record (recorded).",
    ),
    click.option(
        "--person",
        default=None,
        metavar="COLS",
        help="Column(s) naming whose each record is (never published); default: the --identifier columns, else each "
        "record is its own person. The ledger composes the release with every earlier one holding the same people.",
    ),
)


def roles_from(
    identifiers: str | None, qi: str | None, sensitive: str | None, insensitive: str | None, allow_unique: str | None
) -> Any:
    """The :class:`~ppdm_dask.release.Roles` of the role options."""
    from ..release import Roles

    return Roles(
        identifiers=tuple(split_list(identifiers)),
        quasi_identifiers=tuple(split_list(qi)),
        sensitive=tuple(split_list(sensitive)),
        insensitive=tuple(split_list(insensitive)),
        allow_unique=tuple(split_list(allow_unique)),
    )


def parse_storage_options(values: Sequence[str]) -> dict[str, Any]:
    """``--storage-option K=V`` values as fsspec options (``true``/``false`` and integers typed)."""
    out: dict[str, Any] = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"expected k=v, got {item!r}", param_hint="--storage-option")
        k, v = item.split("=", 1)
        low = v.lower()
        if low in ("true", "false"):
            out[k] = low == "true"
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return out
