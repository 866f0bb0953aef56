"""Split text into user-perceived characters (extended grapheme clusters, UAX #29).

Bluesky limits a post to 300 graphemes, so the splitter must count what a person sees: an
emoji family is one, a letter with combining accents is one, a flag is one. The standard
library has no segmentation; this covers the rules that matter for real text (CR LF,
extending and spacing marks, ZWJ emoji sequences, emoji modifiers and tags, regional
indicator pairs, Hangul syllables, prepended concatenation marks) without a dependency.
"""

from __future__ import annotations

import unicodedata

__all__ = ["grapheme_count", "graphemes"]

_ZWJ = 0x200D


def _is_extend(cp: int, category: str) -> bool:
    return (
        category in ("Mn", "Me", "Mc")
        or cp == _ZWJ
        or 0xFE00 <= cp <= 0xFE0F  # variation selectors
        or 0xE0100 <= cp <= 0xE01EF
        or 0x1F3FB <= cp <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= cp <= 0xE007F  # emoji tag sequences (subdivision flags)
        or cp == 0x200C
    )


def _is_pictographic(cp: int, category: str) -> bool:
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2300 <= cp <= 0x23FF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
        or category == "So"
    )


def _hangul_kind(cp: int) -> str:
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return "L"
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return "V"
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return "T"
    if 0xAC00 <= cp <= 0xD7A3:
        return "LV" if (cp - 0xAC00) % 28 == 0 else "LVT"
    return ""


def _hangul_joins(prev: str, cur: str) -> bool:
    if prev == "L":
        return cur in ("L", "V", "LV", "LVT")
    if prev in ("LV", "V"):
        return cur in ("V", "T")
    if prev in ("LVT", "T"):
        return cur == "T"
    return False


def _joins(prev: str, cur: str, cluster: str) -> bool:
    """Whether `cur` continues the cluster that ends with `prev` (no break between them)."""
    p, c = ord(prev), ord(cur)
    if p == 0x0D and c == 0x0A:
        return True
    if p in (0x0A, 0x0D) or c in (0x0A, 0x0D):
        return False
    cat = unicodedata.category(cur)
    if _is_extend(c, cat):
        return True
    if p in (0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x08E2, 0x110BD):
        return True  # prepended concatenation marks
    if _hangul_joins(_hangul_kind(p), _hangul_kind(c)):
        return True
    if p == _ZWJ and _is_pictographic(c, cat):
        return len(cluster) >= 2 and _is_pictographic(
            ord(cluster[0]), unicodedata.category(cluster[0])
        )
    if 0x1F1E6 <= p <= 0x1F1FF and 0x1F1E6 <= c <= 0x1F1FF:
        # regional indicators pair up: join only if the cluster holds an odd number of them
        return sum(1 for ch in cluster if 0x1F1E6 <= ord(ch) <= 0x1F1FF) % 2 == 1
    return False


def graphemes(text: str) -> list[str]:
    """The grapheme clusters of `text`, in order; `"".join(graphemes(t)) == t`."""
    clusters: list[str] = []
    current = ""
    for ch in text:
        if current and _joins(current[-1], ch, current):
            current += ch
        else:
            if current:
                clusters.append(current)
            current = ch
    if current:
        clusters.append(current)
    return clusters


def grapheme_count(text: str) -> int:
    """How many graphemes a person sees in `text` (Bluesky's unit for the 300 limit)."""
    return len(graphemes(text))
