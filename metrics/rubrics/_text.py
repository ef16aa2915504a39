"""Small text rules shared by the rule-based fallbacks (pure, no I/O).

Kept here rather than borrowed from ``metrics.extraction`` where a judge fallback needs a
lenient rule of its own ("none" counts as 0, the first yes/no wins) or a vocabulary of its own
(the 8-direction compass and clock positions used for ODI-Bench's 45° partial credit). OSR-Bench's
fallback uses the task scorer itself (``metrics.osr_bench.score_qa``).
"""

from __future__ import annotations

import re

from lmms_spatial.metrics.extraction import MAX_DIGITS

NUMBER_WORDS = {
    "zero": 0, "none": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}  # fmt: skip

STOPWORDS = frozenset(
    """a an the is are was were be been being of in on at to for from by with and or it its this that
    these those there here he she they them his her their i you your we our me my as into onto
    appears appear seems seem looks look which who what where how image picture photo panorama""".split()
)

_INTEGER = re.compile(r"(?<![\w.])(\d+)(?![\d.]\d)|\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")


def first_integer(text: str) -> int | None:
    """First integer written as digits or as a number word up to twenty ("three" -> 3)."""
    match = _INTEGER.search(text)
    if match is None:
        return None
    digits, word = match.groups()
    if digits and len(digits) > MAX_DIGITS:  # past Python's int() limit: no count is that long
        return None
    return int(digits) if digits else NUMBER_WORDS[word.lower()]


def first_yes_no(text: str) -> str | None:
    """The first of the words "yes" / "no" in the text, lower-cased (None if neither occurs)."""
    match = _YES_NO.search(text)
    return match.group(1).lower() if match else None


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens, number words as digits, naive singular."""
    out = []
    for token in _WORD.findall(str(text).lower()):
        if token in NUMBER_WORDS and token != "none":
            token = str(NUMBER_WORDS[token])
        out.append(_singular(token))
    return out


def content_words(text: str) -> set[str]:
    """:func:`words` without stopwords: the "key content" compared by the attribute fallback."""
    return {w for w in words(text) if w not in STOPWORDS}


# ---------------------------------------------------------------------------------------
# directions: an 8-direction compass in degrees clockwise from straight ahead
# ---------------------------------------------------------------------------------------

COMPASS_DEGREES: dict[str, float] = {
    "front": 0.0,
    "front-right": 45.0,
    "right": 90.0,
    "back-right": 135.0,
    "back": 180.0,
    "back-left": 225.0,
    "left": 270.0,
    "front-left": 315.0,
}

# Phrases (lower case, words separated by single spaces) -> compass term. Longest phrases are
# tried first, so "right in front" is front and "front left" is not front + left.
_DIRECTION_PHRASES: dict[str, str] = {
    "right in front": "front",
    "directly in front": "front",
    "straight ahead": "front",
    "in front": "front",
    "ahead": "front",
    "forward": "front",
    "front": "front",
    "behind": "back",
    "backward": "back",
    "rear": "back",
    "back": "back",
    "left": "left",
    "right": "right",
    # absolute compass words: the same circle (north = straight ahead)
    "north": "front",
    "northeast": "front-right",
    "north east": "front-right",
    "east": "right",
    "southeast": "back-right",
    "south east": "back-right",
    "south": "back",
    "southwest": "back-left",
    "south west": "back-left",
    "west": "left",
    "northwest": "front-left",
    "north west": "front-left",
}
for _a, _b, _term in (
    ("front", "left", "front-left"),
    ("front", "right", "front-right"),
    ("back", "left", "back-left"),
    ("back", "right", "back-right"),
    ("rear", "left", "back-left"),
    ("rear", "right", "back-right"),
):
    for _phrase in (f"{_a} {_b}", f"{_b} {_a}", f"{_a} and {_b}", f"{_b} and {_a}"):
        _DIRECTION_PHRASES[_phrase] = _term
for _b in ("left", "right"):
    for _front in ("front", "in front"):
        _DIRECTION_PHRASES[f"{_front} to the {_b}"] = f"front-{_b}"
        _DIRECTION_PHRASES[f"{_front} on the {_b}"] = f"front-{_b}"
    _DIRECTION_PHRASES[f"behind to the {_b}"] = f"back-{_b}"
    _DIRECTION_PHRASES[f"behind on the {_b}"] = f"back-{_b}"
    _DIRECTION_PHRASES[f"behind and to the {_b}"] = f"back-{_b}"
    _DIRECTION_PHRASES[f"in front and to the {_b}"] = f"front-{_b}"

_PHRASE_PATTERN = re.compile(
    r"(?<![a-z])("
    + "|".join(re.escape(p).replace(r"\ ", " ") for p in sorted(_DIRECTION_PHRASES, key=len, reverse=True))
    + r")(?![a-z])"
)
_CLOCK_PATTERN = re.compile(r"(?<!\d)(1[0-2]|0?[1-9])(?::([0-5]\d))?\s*o'?\s*clock")


def _normalise_direction_text(text: str) -> str:
    text = str(text).lower().replace("\u2019", "'")
    text = re.sub(r"[_\-/]+", " ", text)
    text = re.sub(r"[^a-z0-9:' ]+", " ", text)
    return " ".join(text.split())


def direction_degrees(text: str) -> tuple[float, str] | None:
    """The first direction the text names, as (degrees clockwise from front, the term found).

    Vocabulary: the 8 compass terms (front, front-right, right, back-right, back, back-left,
    left, front-left, with "front left" / "left front" / "front and to the left", "behind",
    "ahead", ...), compass points (north = front, ..., north west = front-left) and clock
    positions ("3 o'clock" = 90°, "10:30 o'clock" = 315°, 12 o'clock = front).
    """
    norm = _normalise_direction_text(text)
    best: tuple[int, float, str] | None = None
    phrase = _PHRASE_PATTERN.search(norm)
    if phrase is not None:
        term = _DIRECTION_PHRASES[phrase.group(1)]
        best = (phrase.start(), COMPASS_DEGREES[term], term)
    clock = _CLOCK_PATTERN.search(norm)
    if clock is not None and (best is None or clock.start() <= best[0]):
        hours = int(clock.group(1)) % 12
        minutes = int(clock.group(2) or 0)
        degrees = (hours * 30.0 + minutes * 0.5) % 360.0
        best = (clock.start(), degrees, f"{clock.group(1)}{':' + clock.group(2) if clock.group(2) else ''} o'clock")
    if best is None:
        return None
    return best[1], best[2]


def angular_difference(a: float, b: float) -> float:
    """Smallest absolute difference between two bearings in degrees (0..180)."""
    diff = abs(a - b) % 360.0
    return min(diff, 360.0 - diff)
