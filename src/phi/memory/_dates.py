"""Dates a query names ("on 7 July, 2023", "in May 2022", "in 2021", "in June"), as spans.

Recall lifts rows written within a span the query names (`RecallRecipe.date_weight`): a
question about what someone did "in October 2023" is most often answered by what they
said then. Only explicit calendar dates are read; relative ones ("last week") are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = ["DateSpan", "query_dates"]

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH: Final = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY: Final = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR: Final = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS: Final = (
    # Most specific first; a later pattern never reads text an earlier one took.
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_YEAR}\b"),
    # A month without a year only after a word that makes it a time ("in May", not "may").
    re.compile(rf"\b(?:in|during|early|late|mid|last|this|next)\s+{_MONTH}(?!\w)", re.IGNORECASE),
)
_ANY_YEAR: Final = 2000
"""The year a month named without one is kept in (`DateSpan.every_year`)."""


@dataclass(frozen=True, kw_only=True)
class DateSpan:
    """A stretch of time a query names: `[start, end)` in UTC."""

    start: datetime
    end: datetime
    every_year: bool = False
    """A month named without a year ("camping in June"): that month of any year."""

    def near(self, when: datetime, *, before: timedelta, after: timedelta) -> bool:
        """Whether `when` falls in the span widened by `before` and `after` (a row tells
        of an event some days after it happened, or of a plan some days before)."""
        if self.every_year:
            years = (when.year - 1, when.year, when.year + 1)
            return any(self._in(y).near(when, before=before, after=after) for y in years)
        return self.start - before <= when < self.end + after

    def _in(self, year: int) -> DateSpan:
        # A month starts and ends on a first of the month: valid in every year.
        shift = year - self.start.year
        return DateSpan(
            start=self.start.replace(year=year), end=self.end.replace(year=self.end.year + shift)
        )


def _span(year: int, month: int | None, day: int | None) -> DateSpan | None:
    try:
        if month is None:
            return DateSpan(
                start=datetime(year, 1, 1, tzinfo=UTC), end=datetime(year + 1, 1, 1, tzinfo=UTC)
            )
        if day is None:
            start = datetime(year, month, 1, tzinfo=UTC)
            end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
            return DateSpan(start=start, end=end)
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # "31 February": not a date
        return None
    return DateSpan(start=start, end=start + timedelta(days=1))


def query_dates(text: str, *, every_year: bool = True) -> list[DateSpan]:
    """The calendar dates `text` names (a day, a month of a year, a year, or, with
    `every_year`, a month without a year), in order."""
    taken = [False] * len(text)
    found: list[tuple[int, DateSpan]] = []
    for pattern in _PATTERNS if every_year else _PATTERNS[:-1]:
        for match in pattern.finditer(text):
            if any(taken[match.start() : match.end()]):
                continue
            parts = match.groupdict()
            month = _MONTHS[parts["month"].lower()] if parts.get("month") else None
            day = int(parts["day"]) if parts.get("day") else None
            if parts.get("year"):
                span = _span(int(parts["year"]), month, day)
            else:
                span = _span(_ANY_YEAR, month, None)
                span = span and replace(span, every_year=True)
            if span is not None:
                taken[match.start() : match.end()] = [True] * (match.end() - match.start())
                found.append((match.start(), span))
    return [span for _, span in sorted(found, key=lambda item: item[0])]
