"""``python -m ppdm_dask.cli``: the ``ppdm`` command."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
