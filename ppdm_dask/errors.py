"""Exception hierarchy of ppdm-dask.

Every public entry point validates its input and raises one of these, so callers (and the
``ppdm`` command line) can tell a user mistake from a bug. Each class also derives from the
closest built-in exception, so ``except ValueError`` keeps working.
"""

from __future__ import annotations


class PPDMError(Exception):
    """Base class of every error raised on purpose by ppdm-dask."""


class InvalidParameter(PPDMError, ValueError):
    """A parameter is out of its admissible range (e.g. p + q = 1, k > N, delta <= 0)."""


class DataFormatError(PPDMError, ValueError):
    """Input data cannot be read as transactions (bad schema, non-integer items, NaN ...)."""


class ItemIdError(DataFormatError):
    """An item id is negative or outside the item vocabulary."""


class IncompleteDatasetError(DataFormatError):
    """A dataset location holds no committed dataset (e.g. a failed or running write)."""


class DatasetExistsError(PPDMError, FileExistsError):
    """The output location already holds data and overwriting was not requested."""


class PrivacyViolation(PPDMError):
    """A privacy requirement would be (or was found to be) violated."""


class InfeasiblePrivacyError(PPDMError, ValueError):
    """The privacy levels cannot be met: some record asks for a group larger than the data."""


class DuplicateItemsWarning(UserWarning):
    """Duplicate items inside a transaction were removed."""


__all__ = [
    "PPDMError",
    "InvalidParameter",
    "DataFormatError",
    "ItemIdError",
    "IncompleteDatasetError",
    "DatasetExistsError",
    "PrivacyViolation",
    "InfeasiblePrivacyError",
    "DuplicateItemsWarning",
]


class DatasetNotFoundError(PPDMError, FileNotFoundError):
    """No data at the given URL."""


__all__ += ["DatasetNotFoundError"]
