"""Saved results: the model of pytest-benchmark JSON (:mod:`lfw.results.model`), the ``extra_info`` keys
(:mod:`lfw.results.keys`) and the typed, versioned case record (:mod:`lfw.results.record`). Import-light: no torch."""

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
