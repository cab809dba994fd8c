"""The one release protocol of every method family.

A :class:`Release` is what an anonymizer, a distortion or a generator hands back: the released
data (lazy), the method and its public parameters, the privacy and utility figures, and three
operations that behave the same for every family:

* :meth:`Release.summary` — a JSON-friendly dict (``family``, ``method``, ``parameters``,
  ``records``, ``privacy``, ``utility``);
* :meth:`Release.verify` — the family's guarantee recounted independently of the algorithm from
  the released data (and compared with the original when given), plus the privacy floors of the
  parameters: a :class:`~ppdm_dask.release.verdict.Verdict`;
* :meth:`Release.write` — the folder protocol of :mod:`ppdm_dask.data.folder`: rows in a keyed
  random order (:mod:`.order`), every file hashed, the written files read back and verified
  **before** the commit, then the manifest v2 (:mod:`.manifest`) last. A release whose
  guarantee does not hold on the written files is never committed.

:meth:`Release.open` reads a written release back (any family of :mod:`ppdm_dask.families`)
for ``ppdm verify``.

A family subclasses :class:`Release` and fills in the hooks marked "family hook": how its data
is cut into row blocks, encoded into part files and read back, its extra files, its floors and
its checks. Reading and checking only use the manifest and the files, never the algorithm.
"""

from __future__ import annotations

import abc
import json
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import dask
import pyarrow as pa

from ..data.folder import (
    MANIFEST,
    check_version,
    load_manifest_json,
    open_fs,
    read_manifest,
    refuse_existing,
    write_folder,
    write_part,
)
from ..errors import DataFormatError, DatasetNotFoundError, PrivacyViolation, WeakParameterError
from ..random import Key
from .figures import Figures
from .identity import ReleaseIdentity, provenance, stream_key
from .manifest import MANIFEST_VERSION, created, public_parameters, versions
from .order import BlockOps, merge_from_files, n_files, shuffle, stage_pieces
from .roles import Roles
from .verdict import Check, Verdict

__all__ = [
    "Release",
    "is_csv_destination",
    "sidecar_manifest",
    "overrides_for",
    "floor_check",
    "refuse_weak",
    "report_paths",
    "REPORT_FILES",
    "INTERNAL_REPORT_FILES",
]

#: report files that earlier versions wrote into a release folder (not listed in the manifest).
#: Reports are now written beside the folder: whoever copies a release folder must not publish
#: the internal report with it, so ``ppdm verify`` warns when a folder holds one.
REPORT_FILES = ("_report.json", "_report.html", "_report-external.json", "_report-external.html")
#: the internal ones: they describe the original data
INTERNAL_REPORT_FILES = ("_report.json", "_report.html")


def overrides_for(allow_weak: Any, floor_names: Sequence[str], named_only: Sequence[str] = ()) -> tuple[str, ...]:
    """The privacy floors an estimator's ``allow_weak`` overrides: ``True`` every floor of
    ``floor_names`` but those of ``named_only`` (lifted only when named), ``False`` / ``None``
    none, a name or a sequence of names those (each must be one of ``floor_names``)."""
    from ..errors import InvalidParameter

    if allow_weak is True:
        return tuple(n for n in floor_names if n not in named_only)
    if not allow_weak:
        return ()
    names = (allow_weak,) if isinstance(allow_weak, str) else tuple(str(a) for a in allow_weak)
    unknown = [n for n in names if n not in floor_names]
    if unknown:
        raise InvalidParameter(f"allow_weak names unknown privacy floor(s) {unknown}; the floors are {list(floor_names)}")
    return names


def floor_check(name: str, ok: bool, figure: Any, threshold: Any, detail: str = "", overrides: Sequence[str] = ()) -> Check:
    """A privacy-floor check, marked overridden when it fails and ``name`` is in ``overrides``."""
    return Check(name, bool(ok), figure, threshold, detail=detail, overridden=(not ok and name in overrides))


def refuse_weak(checks: Sequence[Check]) -> None:
    """Raise :class:`WeakParameterError` for the first floor of ``checks`` that fails and was
    not overridden."""
    bad = [c for c in checks if not c.passed]
    if bad:
        c = bad[0]
        raise WeakParameterError(
            f"{c.name}: {c.figure} is below the floor {c.threshold}" + (f" ({c.detail})" if c.detail else "") + "; refused",
            python=f"allow_weak=[{c.name!r}] (recorded in the manifest)",
            fix="`allow_weak` (recorded in the manifest)",
        )


def is_csv_destination(url: str) -> bool:
    """Whether a release written to ``url`` is one CSV file (``.csv``) rather than a folder."""
    return url.rstrip("/").lower().endswith(".csv")


def sidecar_manifest(url: str) -> str:
    """The manifest of a single-file (CSV) release: ``<file>.manifest.json`` beside it."""
    return url.rstrip("/") + ".manifest.json"


def report_stem(audience: str) -> str:
    """File stem of a report: ``report`` (internal) or ``report-<audience>``."""
    return "report" if audience == "internal" else f"report-{audience}"


def report_paths(url: str, audience: str = "internal") -> tuple[str, str]:
    """``(json, html)`` URLs of the report of the release at ``url``: beside it, never inside a
    release folder (``people_k5/`` → ``people_k5.report.html``, ``out.csv`` →
    ``out.csv.report.html``; ``-external`` for that audience), so that copying the release
    folder never publishes the internal report, which describes the original data."""
    base = url.rstrip("/") + "." + report_stem(audience)
    return base + ".json", base + ".html"


def _write_block(fs: Any, path: str, block: Any, encode: Callable[[Any], tuple[pa.Table, dict[str, Any]]]) -> dict[str, Any]:
    """Task: encode one output block and write it as one hashed part file."""
    table, stats = encode(block)
    return {**write_part(fs, path, table), **stats}


def _write_staged(
    fs: Any,
    path: str,
    done: list[int],
    j: int,
    ops: BlockOps,
    folder: str,
    encode: Callable[[Any], tuple[pa.Table, dict[str, Any]]],
) -> dict[str, Any]:
    """Task: merge output block ``j`` from its staged pieces and write it (one task, so the
    merged block is never held as a result between the two)."""
    return _write_block(fs, path, merge_from_files(done, j, ops, fs, folder), encode)


class Release(abc.ABC):
    """Released data with its public parameters, figures, checks and writer.

    Parameters
    ----------
    data : object
        The released data, lazy (a dask DataFrame, a TransactionArray, a SketchArray ...), in the
        input's row order (the keyed order is applied when writing).
    method : str
    parameters : mapping
        Public parameters (never a key).
    figures : mapping, optional
        ``{"records": {...}, "privacy": {...}, "utility": {...}}`` from the algorithm.
    roles : Roles, optional
        Attribute roles (relational releases).
    key : Key, optional
        The secret key: the release's random streams and the order of the rows when writing
        derive from it; only its fingerprint is ever written. The estimator that builds the
        release gives its fitted ``key_``; a release constructed without one gets a fresh
        secret key here, at construction (never later). A release read back from files
        (``manifest`` given) has no key unless given: the files do not hold it.
    source : ppdm_dask.data.sources.Source, optional
        Where the input was read from (fingerprinted when writing).
    input_info : mapping, optional
        ``{"rows": N, "schema": {...}}`` of the input.
    overrides : sequence of str
        Names of the privacy floors the user explicitly overrode.
    manifest : mapping, optional
        Set on releases read back by :meth:`open`.
    input_digest : bytes, optional
        The content digest of the input (:func:`ppdm_dask.data.digest.content_digest`): part of
        the release's identity, from which its random streams and public id derive. Never
        written.
    ledger : "default", Ledger, str or None, default "default"
        The ledger that :meth:`write` records the release in (``"default"``: the user's; a
        :class:`~ppdm_dask.ledger.Ledger` or a location; None: opted out, said in the manifest).
    people : ppdm_dask.data.persons.People, optional
        Whose each record is (the identifier columns, the event log's user, or the record
        itself), lazily, one block per block of :meth:`ledger_rows`: the ledger composes the
        release with every earlier release that shares people with it (docs/ledger.md#the-person).
        Never written into the release.
    """

    #: family hook: the family's name in :mod:`ppdm_dask.families` (its registry), written as
    #: ``release.family``
    family: ClassVar[str] = ""
    #: family hook: ``format`` of the written folder (what readers of the data expect)
    data_format: ClassVar[str] = ""
    #: family hook: how to count, slice and concatenate the family's row blocks
    ops: ClassVar[BlockOps]
    #: family hook: default rows per output file (keep a file's block well under 256 MB in memory)
    default_rows_per_file: ClassVar[int] = 1_000_000
    #: family hook: whether a ``.csv`` destination is supported
    csv_output: ClassVar[bool] = False
    #: Share of the workers' memory that the release may take in flight (the keyed shuffle holds
    #: all of it at once); beyond it, the shuffle is staged through files (see ``order``).
    SHUFFLE_MEMORY_SHARE: ClassVar[float] = 0.25
    #: family hook: floors that ``allow_weak=True`` does not lift (each must be named)
    NAMED_ONLY_FLOORS: ClassVar[tuple[str, ...]] = ()
    #: family hook: the families whose releases this one composes with by person (default: its own)
    COMPOSES_WITH: ClassVar[tuple[str, ...]] = ()
    #: whose each record is (:class:`ppdm_dask.data.persons.People`, given by the estimator; see
    #: the ``people`` parameter); None: not known, the release is composed by its input only
    people: Any = None

    def __init__(
        self,
        data: Any,
        *,
        method: str,
        parameters: Mapping[str, Any],
        figures: Mapping[str, Any] | None = None,
        roles: Roles | None = None,
        key: Key | None = None,
        source: Any = None,
        input_info: Mapping[str, Any] | None = None,
        overrides: Sequence[str] = (),
        manifest: Mapping[str, Any] | None = None,
        input_digest: bytes | None = None,
        ledger: Any = "default",
        people: Any = None,
    ) -> None:
        self.data = data
        self.method = str(method)
        self.parameters = public_parameters(parameters)
        self.figures = dict(figures or {})
        self.roles = roles
        self.overrides = tuple(overrides)
        # the one place a missing key is defaulted (a release read back keeps None: see key)
        self._key: Key | None = key if key is not None or manifest is not None else Key.generate()
        self.source = source
        self.input_info = dict(input_info or {})
        self.manifest = dict(manifest) if manifest is not None else None
        self.input_digest = input_digest
        #: owner-side record of the input's files (url, names, sizes, SHA-256), set by
        #: :meth:`write`; for the internal report only, never written into the release
        self.owner_input: dict[str, Any] | None = None
        #: the ledger that :meth:`write` records the release in (see the ``ledger`` parameter)
        self.ledger: Any = ledger
        #: the composition with the input's earlier releases, set by :meth:`write`
        self.composition: Any = None
        #: whose each record is (see the ``people`` parameter); None: not known
        self.people: Any = people

    # ------------------------------------------------------------------ identity
    @property
    def identity(self) -> ReleaseIdentity:
        """Family, method, public parameters and input digest (see :mod:`.identity`)."""
        return ReleaseIdentity.of(self.family, self.method, self.parameters, self.input_digest)

    @classmethod
    def streams_for(cls, key: Key, method: str, parameters: Mapping[str, Any], input_digest: bytes | None) -> Key:
        """The stream key of the release of this family that an estimator is about to build
        with these arguments: its random steps draw from it, and :meth:`write` orders the rows
        with the same key (it recomputes it from the release's own identity)."""
        return stream_key(key, ReleaseIdentity.of(cls.family, method, public_parameters(parameters), input_digest))

    @property
    def key(self) -> Key | None:
        """The secret key of this release (the estimator's fitted ``key_``): None only for a
        release read back from files that has not adopted the release it was written from."""
        return self._key

    @property
    def stream_key(self) -> Key | None:
        """The key of this release's random streams, derived from :attr:`key` and the release's
        identity (None without a key)."""
        return stream_key(self._key, self.identity) if self._key is not None else None

    def __repr__(self) -> str:
        where = f", from {self.manifest.get('_url')}" if self.manifest and self.manifest.get("_url") else ""
        return f"{type(self).__name__}(method={self.method!r}, parameters={self.parameters}{where})"

    # ------------------------------------------------------------------ family hooks
    @abc.abstractmethod
    def _row_blocks(self) -> tuple[list[Any], list[int]]:
        """Family hook: the data as delayed row blocks in input order, and their row counts."""

    @abc.abstractmethod
    def _encoder(self) -> Callable[[Any], tuple[pa.Table, dict[str, Any]]]:
        """Family hook: a picklable ``block -> (Parquet table, stats)`` (stats go into the part's
        manifest entry, e.g. ``{"nnz": ...}``); rows not to publish are dropped here."""

    def _extra_tables(self) -> dict[str, pa.Table]:
        """Family hook: further files of the folder (``_vocabulary.parquet``, ``_groups.parquet``)."""
        return {}

    def _layout(self, partitions: list[dict[str, Any]]) -> dict[str, Any]:
        """Family hook: the manifest fields readers of ``data_format`` need (``n_items`` ...)."""
        return {}

    @classmethod
    @abc.abstractmethod
    def _open_data(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str, verify: bool) -> Any:
        """Family hook: the data of a written release, lazy, every part checked when read."""

    def floor_checks(self) -> list[Check]:
        """Family hook: the privacy floors of the release (``k >= 2`` ...), each a Check that is
        ``overridden`` when its name is in :attr:`overrides`; by default those of the public
        parameters alone (:meth:`parameter_floors`)."""
        return type(self).parameter_floors(self.method, self.parameters, self.overrides)

    @classmethod
    def parameter_floors(cls, method: str, parameters: Mapping[str, Any], overrides: Sequence[str] = ()) -> list[Check]:
        """Family hook: the privacy floors that the method and public parameters decide alone,
        with no release built (the estimator refuses them before any pass over the data, see
        :meth:`overrides_of`); each a Check (:func:`floor_check`) ``overridden`` when its name
        is in ``overrides``."""
        return []

    @classmethod
    def overrides_of(cls, method: str, parameters: Mapping[str, Any], allow_weak: Any) -> tuple[str, ...]:
        """The failing :meth:`parameter_floors` that ``allow_weak`` covers (see
        :func:`overrides_for`): the release's ``overrides``. Raises
        :class:`WeakParameterError` for a failing floor not covered (before any work)."""
        params = public_parameters(parameters)
        floors = cls.parameter_floors(method, params)
        allowed = overrides_for(allow_weak, [c.name for c in floors], cls.NAMED_ONLY_FLOORS)
        overrides = tuple(c.name for c in floors if not c.ok and c.name in allowed)
        refuse_weak(cls.parameter_floors(method, params, overrides))
        return overrides

    @abc.abstractmethod
    def guarantee_checks(self, original: Any = None, **compute_kwargs: Any) -> list[Check]:
        """Family hook: the family's guarantee recounted from :attr:`data` (and, when given, the
        checks against the original data)."""

    def report_figures(self, original: Any = None, **compute_kwargs: Any) -> Figures:
        """Family hook: the risk figures (from :attr:`data`; with ``original`` also the
        original's) and the utility figures (with ``original``) of the report, computed
        distributed; see :mod:`.figures` for what each figure must say it describes."""
        return Figures(notes=[f"no risk or utility figures are defined for {self.family or 'this'} releases"])

    def adopt(self, fitted: Release) -> Release:
        """Take over from ``fitted`` (the release in memory that was written) what the files do
        not hold but the owner's report uses: the key, the input's digest and provenance, and
        what the family adds (:meth:`_adopt`); returns self."""
        if fitted is not self:
            if self._key is None:
                self._key = fitted.key
            self.input_digest = self.input_digest or fitted.input_digest
            self.input_info = {**fitted.input_info, **self.input_info}
            self.source = self.source or fitted.source
            self.owner_input = self.owner_input or fitted.owner_input
            self.composition = self.composition if self.composition is not None else fitted.composition
            self.ledger = fitted.ledger
            self.people = self.people if self.people is not None else fitted.people
        return self._adopt(fitted)

    def _adopt(self, fitted: Release) -> Release:
        """Family hook of :meth:`adopt` (e.g. the generalisation hierarchies); returns self."""
        return self

    @classmethod
    def read_original(cls, url: str, *, storage_options: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """Family hook: read the original data of a release for :meth:`verify` (CLI ``--original``)."""
        from ..io import read

        return read(url, storage_options=storage_options, progress=False)

    def _csv_write(self, fh: Any, blocks: list[Any], compute: Callable[..., Any]) -> dict[str, Any]:
        """Family hook of the families with ``csv_output``: stream the output blocks into one CSV
        file; returns layout fields for the manifest."""
        raise DataFormatError(f"{self.family} releases are written as Parquet folders, not CSV")

    @classmethod
    def _open_csv(cls, fs: Any, path: str, manifest: Mapping[str, Any], url: str) -> Any:
        """Family hook of the families with ``csv_output``: the data of a CSV release."""
        raise DataFormatError(f"{url}: {cls.family} releases are Parquet folders; this manifest names a CSV file")

    # ------------------------------------------------------------------ ledger hooks
    def ledger_figures(self) -> dict[str, Any]:
        """Family hook: the figures the ledger keeps of this release for composing later ones
        (JSON-ready; e.g. EMASK's ε). Default: none beyond the public parameters."""
        return {}

    def ledger_columns(self) -> dict[str, str]:
        """Family hook: the per-record values the ledger keeps per person for composing later
        releases, ``name -> aggregation`` over a person's records (``sum``, ``min``, ``max`` or
        ``set``; :mod:`ppdm_dask.ledger._people_kernels`). Default: none (the ledger keeps each
        person's number of records)."""
        return {}

    def ledger_rows(self, blocks: list[Any]) -> list[Any] | None:
        """Family hook: the values of :meth:`ledger_columns`, one lazy task per block of
        :attr:`people` computing ``{name: 1-D array}`` (one entry per record, aligned with that
        block's persons); ``blocks`` are the release's row blocks in input order
        (:meth:`_row_blocks`). Stored privately in the ledger, per person. Default: None."""
        return None

    def ledger_people_extra(self) -> dict[str, Any]:
        """Family hook: constants of this release stored with its people in the ledger, for the
        family's joins (JSON-ready; e.g. EMASK's ε of one basket). Default: none."""
        return {}

    @classmethod
    def composes_with(cls) -> tuple[str, ...]:
        """The families whose earlier releases this family composes with by person."""
        return cls.COMPOSES_WITH or (cls.family,)

    def compose(self, earlier: Sequence[Any], ledger: Any, people: Any = None) -> Any:
        """Family hook: this release composed with the ``earlier`` releases (ledger
        :class:`~ppdm_dask.ledger.Record` s): a :class:`~ppdm_dask.ledger.Composition`. Before the
        work ``people`` is None and ``earlier`` are the releases of the same input; once the
        files are written ``people`` is a :class:`~ppdm_dask.ledger.PeopleJoin` (this release's
        people in the ledger and every earlier release that shares people with it, whatever its
        input) and the family composes person by person. Default: the number of releases."""
        from ..ledger.compose import default_composition

        return default_composition(self, earlier)

    # ------------------------------------------------------------------ common behaviour
    def floor(self, name: str, ok: bool, figure: Any, threshold: Any, detail: str = "") -> Check:
        """A floor check, marked overridden when the user overrode ``name``."""
        return floor_check(name, ok, figure, threshold, detail, self.overrides)

    def check_floors(self) -> None:
        """Raise :class:`WeakParameterError` for a floor that fails and was not overridden."""
        refuse_weak(self.floor_checks())

    def summary(self) -> dict[str, Any]:
        """``family``, ``method``, ``parameters`` and the figures (records, privacy, utility)."""
        out: dict[str, Any] = {"family": self.family, "method": self.method, "parameters": dict(self.parameters)}
        if self.roles is not None:
            out["roles"] = self.roles.to_dict()
        if self.overrides:
            out["overrides"] = list(self.overrides)
        out.update(self.figures)
        return out

    def public_privacy(self) -> dict[str, Any]:
        """Family hook: the privacy figures a public file may show — computed from the released
        data and the public parameters alone, so that they tell nothing about the input beyond
        the release itself (default: none)."""
        return {}

    def public_summary(self, released_rows: int) -> dict[str, Any]:
        """The summary written into the public manifest: family, method, public parameters,
        public roles, overrides, the rows released and :meth:`public_privacy`. The full
        :meth:`summary` (figures of the original: input counts, utility against the original)
        is the owner's: the console and the internal report."""
        out: dict[str, Any] = {"family": self.family, "method": self.method, "parameters": dict(self.parameters)}
        if self.roles is not None:
            out["roles"] = self.roles.public_dict()
        if self.overrides:
            out["overrides"] = list(self.overrides)
        out["records"] = {"released": int(released_rows)}
        out["privacy"] = dict(self.public_privacy())
        return out

    def on_recount(self, verdict: Mapping[str, Any] | None) -> None:  # noqa: B027 (a hook most families leave empty)
        """Family hook: the verdict (as a dict) of the write-time recount of the written files,
        before the manifest is finished (e.g. to publish figures the recount established)."""

    def original_only_checks(self) -> list[tuple[str, str]]:
        """Family hook: ``(name, what it needs)`` of the properties that only a check against the
        original can establish; ``verify`` without the original lists them as not checked."""
        return []

    def report(
        self,
        original: Any = None,
        *,
        out: str | None = None,
        audience: str = "internal",
        storage_options: Mapping[str, Any] | None = None,
        verify: bool = True,
        overwrite: bool = False,
        **compute_kwargs: Any,
    ) -> dict[str, Any]:
        """The privacy and utility report of this release: ``report.json`` (validated against
        the schema shipped with the package) and a self-contained ``report.html``.

        Written into the release (a written one: its folder, or beside a CSV release) or to
        ``out`` (``.html``: that page with its JSON beside it; else a folder); an unwritten
        release needs ``out``, or nothing is written. Returns the report as a dict (with
        ``paths``). See :func:`ppdm_dask.report.make_report`.

        Parameters
        ----------
        original : optional
            The original data (or its URL): the utility figures and the original's risk.
        audience : {"internal", "external"}
            ``external`` leaves out everything that describes the original data beyond what the
            release itself shows.
        verify : bool
            A written release is re-verified from its files (default); without, the verdict of
            its write-time check is shown.
        overwrite : bool
            Replace an existing report.
        """
        from ..report import make_report

        return make_report(
            self,
            original,
            out=out,
            audience=audience,
            storage_options=storage_options,
            verify=verify,
            overwrite=overwrite,
            **compute_kwargs,
        )

    def verify(self, original: Any = None, *, storage_options: Mapping[str, Any] | None = None, **compute_kwargs: Any) -> Verdict:
        """Recount the guarantee from the released data (independently of the algorithm) and
        check the parameters against the privacy floors; with ``original``, also check the
        release against it.

        Parameters
        ----------
        original : optional
            The original data (same kind as the estimator's input) or its URL.
        storage_options : mapping, optional
            fsspec options to read ``original`` when it is a URL.
        **compute_kwargs
            ``client=``, ``progress=`` for the distributed passes.
        """
        compute_kwargs.setdefault("progress", False)
        key = compute_kwargs.pop("key", None)
        if isinstance(original, str):
            original = type(self).read_original(original, storage_options=storage_options)
        checks = [*self.floor_checks(), *self.guarantee_checks(original, **compute_kwargs)]
        if original is None:
            checks += [
                Check(name, True, detail=f"not checked: {needs} (give the original: ppdm verify --original)", status="unchecked")
                for name, needs in self.original_only_checks()
            ]
        elif key is not None:
            checks.append(self.provenance_check(original, key, **compute_kwargs))
        return Verdict(checks)

    def provenance_check(self, original: Any, key: Key, **compute_kwargs: Any) -> Check:
        """For the key holder: was this release made with ``key`` and its recorded parameters
        from the records of ``original`` (in any order)? Recomputes the input fingerprint (see
        :mod:`.identity`); the rows' order is proven too when the release id also matches."""
        from ..data.digest import content_digest, records_of
        from .identity import input_fingerprint

        rel = (self.manifest or {}).get("release") or {}
        digest = content_digest(*self.digest_inputs(original), **compute_kwargs)
        identity = ReleaseIdentity.of(self.family, self.method, self.parameters, digest)
        if self.manifest is None:
            return Check(
                "made from this original with this key",
                records_of(digest) == records_of(self.input_digest),
                detail="the original's records (in any order) against the release's",
            )
        rid = str(rel.get("id", ""))
        if key.fingerprint(bytes.fromhex(rid)) != rel.get("key_fingerprint"):
            return Check("made with this key", False, where=MANIFEST, detail="the key's fingerprint differs from the release's")
        ok = input_fingerprint(key, rid, identity) == ((self.manifest.get("input") or {}).get("fingerprint"))
        in_order = ok and provenance(key, identity)["id"] == rid
        if in_order and self.input_digest is None:  # proven: the owner's streams need no second pass over the original
            self.input_digest = digest
        return Check(
            "made from this original with this key",
            ok,
            where=None if ok else MANIFEST,
            detail="input fingerprint recomputed from the key, the original's records and the parameters"
            + (
                (": the same records, in the same order" if in_order else ": the same records, in another order")
                if ok
                else ": they differ (another input, read with other column types, or altered parameters)"
            ),
        )

    def owner_stream_key(self, key: Key, original: Any, **compute_kwargs: Any) -> Key:
        """For the key holder of a written release: its stream key, from ``key`` and the
        original (whose content digest is part of the identity), e.g. to put the rows back in
        the original's order. Raises :class:`~ppdm_dask.errors.InvalidParameter` when ``key``
        did not make the release."""
        from ..data.digest import content_digest
        from ..errors import InvalidParameter

        rel = (self.manifest or {}).get("release") or {}
        if rel.get("id") and key.fingerprint(bytes.fromhex(rel["id"])) != rel.get("key_fingerprint"):
            raise InvalidParameter(
                "the key given is not the key that wrote this release (fingerprints differ)",
                python="key= of the release",
                fix="`key` of the release",
            )
        digest = (
            self.input_digest
            if self.input_digest is not None
            else content_digest(*self.digest_inputs(original), **compute_kwargs)
        )
        return stream_key(key, ReleaseIdentity.of(self.family, self.method, self.parameters, digest))

    def digest_inputs(self, original: Any) -> tuple[Any, ...]:
        """Family hook: the collections whose content digest identifies ``original`` as the
        estimator saw it (default: the original itself)."""
        return (original,)

    def row_bytes(self) -> float | None:
        """Family hook: planned in-memory bytes of one released row in a block (``None``:
        unknown, and the shuffle is staged on a cluster with memory limits)."""
        return None

    def shuffle_plan(self, n_rows: int, client: Any = None) -> tuple[str, str]:
        """``("memory", why)`` when the release fits in :attr:`SHUFFLE_MEMORY_SHARE` of the
        workers' memory (or, without a cluster, the rows' size is unknown or within
        ``SHUFFLE_MEMORY_SHARE`` of this machine's memory), else ``("staged", why)``."""
        from distributed.system import MEMORY_LIMIT

        from ..cluster import memory_budget, memory_plan

        per_row = self.row_bytes()
        if per_row is None:
            _, where = memory_budget(self.SHUFFLE_MEMORY_SHARE, client, local=0)
            if where == "local scheduler":
                return "memory", "rows of unknown size, local scheduler: shuffled in memory"
            return "staged", f"rows of unknown size on {where}: shuffled through staging files"
        plan, why, _ = memory_plan(
            per_row * n_rows,
            self.SHUFFLE_MEMORY_SHARE,
            client,
            local=self.SHUFFLE_MEMORY_SHARE * MEMORY_LIMIT,
            what=f"release of {n_rows:,} rows in flight",
        )
        why = why.replace("recomputed or re-read at every pass", "shuffled through staging files").replace(
            ": persist (", ": in memory ("
        )
        return ("memory" if plan == "persist" else "staged"), why

    def _manifest_release(self, key: Key, n_out: int, rows_per_file: int, output: str) -> dict[str, Any]:
        prov = provenance(key, self.identity)
        return {
            "family": self.family,
            "method": self.method,
            "parameters": dict(self.parameters),
            "roles": self.roles.public_dict() if self.roles is not None else None,
            "overrides": list(self.overrides),
            "id": prov["id"],
            "key_fingerprint": prov["key_fingerprint"],
            "row_order": {"keyed": True, "files": n_out, "rows_per_file": int(rows_per_file)},
            "output": output,
            "versions": versions(),
            "created": created(),
        }

    def _public_input(self, key: Key) -> dict[str, Any]:
        """The manifest's ``input``: only the keyed, release-salted fingerprint of its content."""
        return {"fingerprint": provenance(key, self.identity)["input_fingerprint"]}

    def _record_owner_input(self, **compute_kwargs: Any) -> None:
        """The owner's record of the input files (for the internal report, never published)."""
        from ..data.sources import fingerprint

        self.owner_input = {**self.input_info, **fingerprint(self.source, **compute_kwargs)}

    def write(
        self,
        url: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        overwrite: bool = False,
        progress: bool = False,
        client: Any = None,
        rows_per_file: int | None = None,
        check: bool = True,
        ledger: Any = "unset",
        allow_composition: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Write the release atomically at ``url`` and return its manifest.

        The release is recorded in the ledger before its work (``ledger``: default the one the
        estimator was given, else the user's; None opts out, which the manifest says) and
        composed with the earlier releases of its input (docs/ledger.md): beyond a limit it is
        refused unless ``allow_composition`` (recorded as an override). ``notify`` receives what
        the ledger says before the work (default: the ``ppdm_dask.ledger`` logger).

        ``url`` ending in ``.csv`` gives one CSV file with ``<url>.manifest.json`` beside it
        (families with ``csv_output``); anything else a Parquet dataset folder. Rows are written
        in the keyed random order; with ``check`` (default) the written files are read back and
        the family's guarantee recounted before the commit: a failing release raises
        :class:`PrivacyViolation` and nothing is committed.

        Raises
        ------
        DatasetExistsError
            ``url`` exists and ``overwrite`` is false (checked before any work).
        WeakParameterError
            A privacy floor fails and was not overridden.
        PrivacyViolation
            The written release does not meet its guarantee.
        CompositionRefused
            Composed with the earlier releases of its input, it exceeds a limit of the ledger.
        """
        opts = dict(storage_options or {})
        csv_out = is_csv_destination(url)
        if csv_out and not self.csv_output:
            raise DataFormatError(
                f"{self.family} releases are written as Parquet folders, not CSV: {url}", cli="an output path without .csv"
            )
        refuse_existing(url, opts, overwrite=overwrite, folder=not csv_out)
        if csv_out:
            refuse_existing(sidecar_manifest(url), opts, overwrite=overwrite, folder=False)
        self.check_floors()
        ckw = {"progress": progress, "client": client}
        key = self._key
        if key is None:
            from ..errors import InvalidParameter

            raise InvalidParameter(
                "this release was read back from files, which do not hold its key: write the release "
                "the estimator returned (or adopt() it first)"
            )
        adm = self._admit(self.ledger if ledger == "unset" else ledger, key, url, allow_composition, notify)
        try:
            manifest = self._write(url, opts, csv_out, overwrite, key, rows_per_file, check, client, ckw, adm)
        except BaseException as exc:
            if adm is not None:
                adm.failed(exc)
            raise
        if adm is not None:
            adm.committed()
        return manifest

    def _admit(self, ledger: Any, key: Key, url: str, allow: bool, notify: Callable[[str], None] | None) -> Any:
        """The release's passage through the ledger, opened (None when opted out)."""
        from ..ledger.compose import OVERRIDE_PREFIX, Admission, resolve

        store = resolve(ledger)
        self.composition = None
        self.overrides = tuple(o for o in self.overrides if not o.startswith(OVERRIDE_PREFIX))
        if store is None:
            return None
        where = url if "://" in url else os.path.abspath(os.path.expanduser(url))
        adm = Admission(
            store,
            self,
            release_id=provenance(key, self.identity)["id"],
            destination=where,
            allow_composition=allow,
            notify=notify,
        )
        adm.open()
        self._accept(adm)
        return adm

    def _accept(self, adm: Any) -> None:
        """Record the composition limits the owner accepted as overrides."""
        self.composition = adm.composition
        self.overrides = tuple(dict.fromkeys([*self.overrides, *adm.accepted]))

    def _ledger_manifest(self, adm: Any, buckets: Any, ckw: Mapping[str, Any]) -> dict[str, Any]:
        """The manifest's ``release.ledger``: the composition's public part, or the opt-out."""
        from ..ledger.compose import OPTED_OUT

        if adm is None:
            return dict(OPTED_OUT)
        comp = adm.finish(buckets, **ckw)
        self._accept(adm)
        return {"recorded": True, "composition": comp.manifest_dict()}

    def _people_tasks(self, adm: Any, blocks: list[Any], n_records: int) -> list[Any]:
        """Tasks that write this release's people into the ledger (none without a ledger, or
        without known persons), one per bucket; they share the row blocks with the write."""
        if adm is None or self.people is None:
            return []
        values = self.ledger_rows(blocks) if self.ledger_columns() else None
        tasks: list[Any] = adm.people_tasks(self.people, values, self.ledger_columns(), n_records)
        return tasks

    def _write(
        self,
        url: str,
        opts: dict[str, Any],
        csv_out: bool,
        overwrite: bool,
        key: Key,
        rows_per_file: int | None,
        check: bool,
        client: Any,
        ckw: dict[str, Any],
        adm: Any,
    ) -> dict[str, Any]:
        from ..progress import compute

        skey = stream_key(key, self.identity)
        blocks, rows = self._row_blocks()
        rpf = int(rows_per_file or self.default_rows_per_file)
        n_out = n_files(sum(rows), rpf)
        head = {"format": self.data_format, "version": MANIFEST_VERSION}
        people_tasks = self._people_tasks(adm, blocks, sum(rows))

        if csv_out:
            out_blocks = shuffle(blocks, rows, skey, n_out, self.ops, name=f"release-{self.family}")
            buckets = None
            if people_tasks:
                (buckets,) = compute(people_tasks, **ckw)
            return self._write_csv_release(
                url, opts, out_blocks, head, key, n_out, rpf, check, ckw, overwrite, adm=adm, buckets=buckets
            )

        encode = self._encoder()
        plan, why = self.shuffle_plan(sum(rows), client)

        def write(fs: Any, tmp: str) -> dict[str, Any]:
            names = [f"part-{j:05d}.parquet" for j in range(n_out)]
            stage = posixpath.join(tmp, "_staging")
            if plan == "staged":
                fs.makedirs(stage, exist_ok=True)
                done = stage_pieces(blocks, rows, skey, n_out, self.ops, name=f"release-{self.family}", fs=fs, folder=stage)
                tasks = [
                    dask.delayed(_write_staged, pure=False)(fs, posixpath.join(tmp, n), done, j, self.ops, stage, encode)
                    for j, n in enumerate(names)
                ]
            else:
                out_blocks = shuffle(blocks, rows, skey, n_out, self.ops, name=f"release-{self.family}")
                tasks = [
                    dask.delayed(_write_block, pure=False)(fs, posixpath.join(tmp, n), b, encode)
                    for n, b in zip(names, out_blocks)
                ]
            # the blocks' arrays were optimized by to_delayed; culling the shuffle again for
            # every write task costs more than the write at 30 M rows. The ledger's people
            # share the blocks with the write (one pass) unless the shuffle was staged.
            if plan == "staged" or not people_tasks:
                (parts,) = compute(tasks, optimize_graph=False, **ckw)
                buckets = compute(people_tasks, **ckw)[0] if people_tasks else None
            else:
                parts, buckets = compute(tasks, people_tasks, optimize_graph=False, **ckw)
            if plan == "staged":
                fs.rm(stage, recursive=True)  # before anything is read back or committed
            ledger_entry = self._ledger_manifest(adm, buckets, ckw)
            files = [write_part(fs, posixpath.join(tmp, name), table) for name, table in self._extra_tables().items()]
            manifest = {**head, **self._layout(list(parts)), "partitions": list(parts), "files": files}
            manifest["release"] = self._manifest_release(key, n_out, rpf, "parquet")
            manifest["release"]["ledger"] = ledger_entry
            manifest["release"]["row_order"].update(shuffle=plan, shuffle_reason=why)
            manifest["input"] = self._public_input(key)
            manifest["guarantees"] = self._check_written(fs, tmp, manifest, url, check, ckw)
            self.on_recount(manifest["guarantees"])
            manifest["input"] = self._public_input(key)
            manifest["summary"] = self.public_summary(sum(int(p["rows"]) for p in parts))
            self._record_owner_input(**ckw)
            return manifest

        return write_folder(url, opts, overwrite, write)

    def _check_written(
        self, fs: Any, path: str, manifest: Mapping[str, Any], url: str, check: bool, ckw: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Read the written files back and recount the guarantee; raise if it fails."""
        if not check:
            return None
        csv_out = manifest.get("release", {}).get("output") == "csv"
        data = type(self)._open_csv(fs, path, manifest, url) if csv_out else type(self)._open_data(fs, path, manifest, url, False)
        written = type(self)._reopen(data, manifest)
        verdict = written.verify(**ckw)
        if not verdict.ok:
            failed = "; ".join(verdict.lines(failed_only=True))
            raise PrivacyViolation(f"the release written to {url} fails its independent check, nothing was committed: {failed}")
        return verdict.to_dict()

    def _write_csv_release(
        self,
        url: str,
        opts: dict[str, Any],
        out_blocks: list[Any],
        head: dict[str, Any],
        key: Key,
        n_out: int,
        rpf: int,
        check: bool,
        ckw: Mapping[str, Any],
        overwrite: bool = False,
        *,
        adm: Any = None,
        buckets: Any = None,
    ) -> dict[str, Any]:
        from ..data.commit import clean_stale, commit_path, temp_sibling
        from ..data.folder import sha256_file
        from ..progress import compute

        fs, path = open_fs(url, opts)
        parent = posixpath.dirname(path)
        if parent:
            fs.makedirs(parent, exist_ok=True)
        clean_stale(fs, path)
        tmp = temp_sibling(path)
        try:
            with fs.open(tmp, "wb") as fh:
                layout = self._csv_write(fh, out_blocks, lambda *c: compute(*c, **ckw))
            size = int(fs.size(tmp))
            entry = {"file": posixpath.basename(path), "rows": layout.pop("rows"), "bytes": size, "sha256": sha256_file(fs, tmp)}
            manifest = {**head, **layout, "partitions": [entry], "files": []}
            ledger_entry = self._ledger_manifest(adm, buckets, ckw)
            manifest["release"] = self._manifest_release(key, n_out, rpf, "csv")
            manifest["release"]["ledger"] = ledger_entry
            manifest["input"] = self._public_input(key)
            check_manifest = {**manifest, "partitions": [{**entry, "file": posixpath.basename(tmp)}]}
            manifest["guarantees"] = self._check_written(fs, parent or ".", check_manifest, url, check, ckw)
            self.on_recount(manifest["guarantees"])
            manifest["input"] = self._public_input(key)
            manifest["summary"] = self.public_summary(int(entry["rows"]))
            self._record_owner_input(**ckw)
            commit_path(fs, tmp, path, url, overwrite=overwrite, folder=False)
        except BaseException:
            try:
                fs.rm(tmp)
            except Exception:
                pass
            raise
        from ..data.atomic import atomic_file

        with atomic_file(sidecar_manifest(url), storage_options=opts, overwrite=True, mode="w") as fh:
            fh.write(json.dumps(manifest, indent=1))
        return manifest

    # ------------------------------------------------------------------ reading back
    @classmethod
    def _reopen(cls, data: Any, manifest: Mapping[str, Any]) -> Release:
        """A release of this family around ``data`` read from disk, its parameters, roles and
        overrides taken from ``manifest``."""
        rel = manifest.get("release", {})
        roles = Roles.from_dict(rel["roles"]) if rel.get("roles") else None
        summary = manifest.get("summary") or {}
        figures = {k: v for k, v in summary.items() if k in ("records", "privacy", "utility")}
        obj = cls.__new__(cls)
        Release.__init__(
            obj,
            data,
            method=rel.get("method", ""),
            parameters=rel.get("parameters", {}),
            figures=figures,
            roles=roles,
            overrides=rel.get("overrides", ()),
            manifest=manifest,
        )
        return obj

    @staticmethod
    def load_manifest(url: str, *, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str, dict[str, Any]]:
        """``(fs, folder, manifest)`` of a written release (a folder, or a CSV file with its
        ``.manifest.json`` beside it)."""
        opts = dict(storage_options or {})
        fs, path = open_fs(url, opts)
        if not fs.exists(path):
            raise DatasetNotFoundError(f"no release at {url}")
        if fs.isdir(path):
            manifest_path, folder = posixpath.join(path, MANIFEST), path
        else:
            manifest_path, folder = open_fs(sidecar_manifest(url), opts)[1], posixpath.dirname(path)
        if not fs.exists(manifest_path):
            raise DatasetNotFoundError(f"{url}: no manifest ({posixpath.basename(manifest_path)}); not a committed ppdm release")
        manifest = load_manifest_json(fs, manifest_path, url)
        if not isinstance(manifest, dict) or "release" not in manifest:
            raise DataFormatError(f"{url}: not a ppdm release (its manifest has no release record; written by an older version?)")
        check_version(manifest, url, MANIFEST_VERSION)
        return fs, folder, manifest

    @classmethod
    def open(cls, url: str, *, storage_options: Mapping[str, Any] | None = None, verify: bool = False) -> Release:
        """The release written at ``url``, of any family registered in :mod:`ppdm_dask.families`
        (the class is imported from the registry when first needed), its data lazy and checked
        against the manifest as it is read (checksums with ``verify``)."""
        from .. import families

        fs, folder, manifest = cls.load_manifest(url, storage_options=storage_options)
        family = manifest["release"].get("family")
        if family not in families.names():
            raise DataFormatError(f"{url}: unknown release family {family!r} (registered: {', '.join(families.names())})")
        klass: type[Release] = families.release_class(family)
        if manifest["release"].get("output") == "csv":
            data = klass._open_csv(fs, folder, manifest, url)
        else:
            read_manifest(fs, posixpath.join(folder, MANIFEST), url, klass.data_format, MANIFEST_VERSION)
            data = klass._open_data(fs, folder, manifest, url, verify)
        rel: Release = klass._reopen(data, {**manifest, "_url": url})
        return rel
