"""``ppdm demo``: the whole idea in one screen, on bundled and generated data.

1. a small table of people is released k-anonymous and l-diverse (with attribute roles);
2. shopping baskets are released distorted (EMASK), at parameters that keep a basic privacy of
   at least 90 %;
3. the frequent itemsets of the baskets are mined from the distorted release alone and compared
   with the exact ones.

The releases are written (verified, in a keyed row order, with their manifests) into a folder the
demo names at the end, each with its privacy and utility report beside it (``people_release.report.html``).

The demo's data is small: unless ``--scheduler`` or ``--workers`` is given it runs on threads of
this process, not on a LocalCluster (whose start and worker processes would take most of its time).
"""

from __future__ import annotations

import os
import tempfile

import click

from ._core import Context, job, write_release


def _pct(x: float) -> str:
    return f"{x:.1f} %"


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for the releases (default: a new temporary folder, named at the end).",
)
@click.option(
    "--rows",
    type=click.IntRange(min=10_000),
    default=100_000,
    show_default=True,
    help="Shopping baskets to generate for steps 2 and 3.",
)
@click.pass_obj
def demo(obj: Context, out: str | None, rows: int) -> None:
    """Release a table with k-anonymity, release baskets with EMASK distortion, and mine the
    distorted baskets: what privacy was gained and what accuracy was kept, in words.

    The data is small: the demo runs on threads of this process unless --scheduler or --workers
    asks for a cluster."""
    from ..anonymity import KAnonymizer, load_hierarchies
    from ..data.datasets import sample_files
    from ..data.quest import quest
    from ..data.tables import read_table
    from ..emask import Distorter, choose_parameters, mine
    from ..io import read
    from ..metrics import itemset_accuracy
    from ..mining import apriori

    if obj.scheduler is None and obj.workers is None:  # no cluster asked for: the small data needs none
        obj.scheduler = "threads"
    folder = out or tempfile.mkdtemp(prefix="ppdm-demo-")
    os.makedirs(folder, exist_ok=True)
    if not obj.no_ledger and not obj.ledger_url:  # the demo's throwaway releases stay out of the user's ledger
        obj.ledger_url = os.path.join(folder, "ledger")
    key = obj.key()
    with job(obj, outputs=[os.path.join(folder, "people_release"), os.path.join(folder, "baskets_release")]) as j:
        people_csv, zips, _ = sample_files("people")
        people = read_table(str(people_csv), dtype={"age": "int"})
        hier = load_hierarchies([f"zip={zips}"], None, ["zip"])
        anon = KAnonymizer(
            ["age", "sex", "zip"],
            k=5,
            l=2,
            sensitive="diagnosis",
            identifiers=["name"],
            method="mondrian",
            hierarchies=hier,
            key=key,
        )
        people_rel = anon.fit_release(people, progress=obj.progress)
        pm, people_report = write_release(obj, people_rel, os.path.join(folder, "people_release"), original=people)
        assert pm is not None and people_report is not None  # written, with its report: a destination was given
        ps = people_rel.summary()

        baskets = quest(f"T10.I4.D{rows}.N1K", key=key).persist()
        d = baskets.describe(progress=obj.progress)
        s0, min_support = d["mean_length"] / baskets.n_items, 0.01
        choice = max(choose_parameters(s0, min_support), key=lambda c: c.basic_privacy)
        dist = Distorter(choice.p, choice.q, key=key).fit_transform(baskets, progress=obj.progress)
        bm, baskets_report = write_release(obj, dist, os.path.join(folder, "baskets_release"), original=baskets)
        assert bm is not None and baskets_report is not None
        # the same longest itemset as the baskets report, so its |F| is the one printed here
        max_length = dist.report_max_length
        truth = apriori(baskets, min_support, max_length=max_length, progress=obj.progress)
        released = read(os.path.join(folder, "baskets_release"))
        est = mine(released, choice.p, choice.q, min_support, max_length=max_length, progress=obj.progress)
        acc = itemset_accuracy(truth.as_dict(), est.as_dict())
    found = acc["n_common"]
    summary = {
        "folder": folder,
        "table": {
            "records": ps["records"],
            "privacy": ps["privacy"],
            "utility": ps["utility"],
            "verified": pm["guarantees"]["ok"],
        },
        "baskets": {
            "rows": baskets.n_transactions,
            "products": baskets.n_items,
            "p": choice.p,
            "q": choice.q,
            "basic_privacy": dist.figures["privacy"]["basic_privacy"],
            "verified": bm["guarantees"]["ok"],
        },
        "mining": {
            "min_support": min_support,
            "max_length": max_length,
            "true_itemsets": len(truth),
            "reconstructed_itemsets": len(est),
            "found": found,
            "rho": acc["rho"],
            "sigma_plus": acc["sigma_plus"],
            "sigma_minus": acc["sigma_minus"],
        },
        "seconds": j.seconds,
        "scheduler": j.where,
        "reports": {"table": people_report["html"], "baskets": baskets_report["html"]},
    }
    util = ps["utility"]
    obj.emit(
        summary,
        "\n".join(
            [
                f"ppdm demo: privacy-preserving data mining in three steps, on {j.where}",
                "",
                f"1. Releasing a table: {ps['records']['input']:,} people (name, zip, age, sex, diagnosis; synthetic).",
                "   Names are dropped; age, sex and zip are generalised until every person shares them with at",
                "   least 4 others (k = 5), and every such group holds at least 2 different diagnoses (l = 2).",
                f"   Result: {ps['privacy']['classes']:,} groups, the smallest of {ps['privacy']['k achieved']}; the highest chance of",
                f"   picking out a person is {_pct(100 * ps['privacy']['max risk'])}; information lost (GCP) {_pct(100 * util['gcp'])}.",
                f"   Verified from the written files: {'yes' if pm['guarantees']['ok'] else 'NO'}.",
                "",
                f"2. Releasing shopping baskets: {baskets.n_transactions:,} synthetic baskets of ~{d['mean_length']:.0f} of "
                f"{baskets.n_items:,} products.",
                f"   Each product in a basket is kept with probability {choice.p}, each product not in it is added",
                f"   with probability {1 - choice.q:.2f}: whoever tries to tell from the release which products a customer",
                f"   bought is right at most {_pct(100 - dist.figures['privacy']['basic_privacy'])} of the time "
                f"(basic privacy {_pct(dist.figures['privacy']['basic_privacy'])}).",
                f"   Verified from the written files: {'yes' if bm['guarantees']['ok'] else 'NO'}.",
                "",
                f"3. Mining the distorted baskets alone: itemsets of up to {max_length} products bought together by at least "
                f"{min_support:.0%} of customers,",
                f"   supports reconstructed from the release: {found:,} of the {len(truth):,} true itemsets found, "
                f"{len(est) - found:,} spurious;",
                f"   their supports are off by {_pct(acc['rho'])} on average.",
                "",
                f"Releases written to {folder} (check one: ppdm verify {os.path.join(folder, 'people_release')}); "
                f"done in {j.seconds:.1f} s.",
                "Their privacy and utility reports (open in a browser):",
                f"  {people_report['html']}",
                f"  {baskets_report['html']}",
            ]
        ),
    )
