"""Saved results: the one model of pytest-benchmark JSON (:mod:`lfw.results.model`) and the ``extra_info``
schema every benchmark case writes (:mod:`lfw.results.keys`), as one typed, versioned record
(:mod:`lfw.results.record`). Import-light: no torch."""

from lfw.results.model import (
    AUTOSAVE_NAME,
    Case,
    Outcome,
    Run,
    Selection,
    case_key,
    case_record,
    latest_run,
    load_run,
    pair_cases,
    parse_run,
    short_name,
    write_run,
)
from lfw.results.record import SCHEMA_VERSION, CaseRecord, summarize

__all__ = ["AUTOSAVE_NAME", "SCHEMA_VERSION", "Case", "CaseRecord", "Outcome", "Run", "Selection", "case_key",
           "case_record", "latest_run", "load_run", "pair_cases", "parse_run", "short_name", "summarize", "write_run"]
