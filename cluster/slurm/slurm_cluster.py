"""Run ppdm-dask on a SLURM cluster through dask-jobqueue.

Each SLURM job runs one ``dask worker`` with several single-threaded worker processes; the
scheduler runs inside this script (on the login/submit node, or inside an allocation).

    pip install "ppdm-dask[s3]" dask-jobqueue          # same versions on all nodes!
    python cluster/slurm/slurm_cluster.py --queue normal --jobs 4 s3://bucket/data

Adjust ``--queue``/``--account`` and the cores/memory per job to your site. The compute nodes
must see the same Python environment (a shared filesystem or module), since workers must run
the same ppdm-dask, dask and distributed versions as this script.
"""

from __future__ import annotations

import argparse
import os
import sys

# 1 GiB: see ppdm_dask.cluster.MALLOC_TRIM_THRESHOLD (allocation-heavy kernels run up to 6x
# slower with glibc's/distributed's small default). Exported in the job script *before* the
# worker starts because glibc reads it only at process start-up.
MALLOC_TRIM_THRESHOLD = 1 << 30
# see ppdm_dask.cluster.ARROW_MEMORY_POOL: Arrow's mimalloc keeps freed Parquet buffers resident
ARROW_MEMORY_POOL = "system"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="dataset URL readable from the compute nodes (s3://..., /shared/...)")
    parser.add_argument("--queue", default=None, help="SLURM partition")
    parser.add_argument("--account", default=None, help="SLURM account")
    parser.add_argument("--jobs", type=int, default=2, help="number of SLURM jobs (nodes)")
    parser.add_argument("--cores", type=int, default=16, help="cores per job = worker processes per job")
    parser.add_argument("--memory", default="64GiB", help="memory per job (split between its processes)")
    parser.add_argument("--walltime", default="02:00:00")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # Imported here so that this file compiles (and its --help works) without dask-jobqueue.
    from dask_jobqueue import SLURMCluster

    import ppdm_dask
    from ppdm_dask.cluster import get_client

    cluster = SLURMCluster(
        queue=args.queue,
        account=args.account,
        cores=args.cores,
        processes=args.cores,  # one single-threaded worker process per core
        memory=args.memory,
        walltime=args.walltime,
        # Node-local scratch for spilling; shared filesystems are slow for this.
        local_directory=os.environ.get("PPDM_LOCAL_DIR", "/tmp"),
        job_script_prologue=[
            f"export MALLOC_TRIM_THRESHOLD_={MALLOC_TRIM_THRESHOLD}",
            f"export ARROW_DEFAULT_MEMORY_POOL={ARROW_MEMORY_POOL}",
            "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1",
            # Optional: the repository's worker config (memory thresholds, timeouts).
            # "export DASK_CONFIG=/shared/ppdm-dask/cluster/dask.yaml",
        ],
        # The scheduler binds on this node; compute nodes must be able to reach it.
        scheduler_options={"dashboard_address": ":8787"},
    )
    try:
        print(cluster.job_script(), file=sys.stderr)
        cluster.scale(jobs=args.jobs)
        # get_client connects to the already running scheduler of the SLURMCluster.
        with get_client(cluster.scheduler_address, timeout=60) as client:
            expected = args.jobs * args.cores
            print(f"waiting for {expected} workers (queue permitting) ...", file=sys.stderr)
            client.wait_for_workers(expected, timeout=3600)

            tx = ppdm_dask.read(args.data)
            summary = tx.describe(progress=True)
            print(summary)
    finally:
        cluster.close()  # cancels the SLURM jobs
    return 0


if __name__ == "__main__":
    sys.exit(main())
