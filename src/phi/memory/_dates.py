"""Dates a query names ("on 7 July, 2023", "in May 2022", "in 2021"), as spans of time.

Recall lifts rows written within a span the query names (`RecallRecipe.date_weight`): a
question about what someone did "in October 2023" is most often answered by what they
said then. Only explicit calendar dates are read; relative ones ("last week") are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
)


@dataclass(frozen=True, kw_only=True)
class DateSpan:
    """A stretch of time a query names: `[start, end)` in UTC."""

    start: datetime
    end: datetime

    def near(self, when: datetime, *, before: timedelta, after: timedelta) -> bool:
        """Whether `when` falls in the span widened by `before` and `after` (a row tells
        of an event some days after it happened, or of a plan some days before)."""
        return self.start - before <= when < self.end + after


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


def query_dates(text: str) -> list[DateSpan]:
    """The calendar dates `text` names (a day, a month of a year, or a year), in order."""
    taken = [False] * len(text)
    found: list[tuple[int, DateSpan]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(taken[match.start() : match.end()]):
                continue
            parts = match.groupdict()
            month = _MONTHS[parts["month"].lower()] if parts.get("month") else None
            day = int(parts["day"]) if parts.get("day") else None
            span = _span(int(parts["year"]), month, day)
            if span is not None:
                taken[match.start() : match.end()] = [True] * (match.end() - match.start())
                found.append((match.start(), span))
    return [span for _, span in sorted(found, key=lambda item: item[0])]
