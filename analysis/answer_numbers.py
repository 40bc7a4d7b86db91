"""The number an answer gives, read as the rule-based scorer (analysis/scoring.py) reads it.

Digits ("1,200", ".5", and in an answer alone a decimal comma: "3,5"), number words
("twenty-one"), a Chinese count ("三", "两个"), a fraction ("1/2"), a measure and its unit
("45°", "3cm"), the result of a sum ("2 + 1 = 3", "7 in total"); and no number where an answer
gives none: a bound ("at least 3", "3+"), a range ("3-4") or alternatives ("3 or 4").
``__all__`` lists what the scorer (analysis/scoring.py and the answer_*.py modules it reads
answers with) reads numbers with; the rest (names with a leading underscore) are this module's own.
"""

from __future__ import annotations

import re

__all__ = [
    "GLUED_UNIT",
    "NUMBER",
    "NUMBER_TOKEN",
    "NUMERIC_ANSWER",
    "NUMERIC_OPTION",
    "STARTS_BOUNDED",
    "as_float",
    "fraction_value",
    "number_given",
    "same_measure",
    "truth_number",
    "units_agree",
]


# A text that is a number in digits and nothing else: "3", "-2.5", ".5", "1,200" (a comma only
# between groups of three, so "1,5" is no number here).
NUMBER = re.compile(r"^[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)$")

# A decimal number, and what may stand after one as its unit ("°", "%", "cm", "degrees").
_DECIMAL = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
_UNITISH = r"°|%|[a-zµ²]{1,12}\b"
NUMERIC_ANSWER = re.compile(r"[-+]?\d")
# An option that is a number, thousands separated or not ("1,200", "120", "3.5 cm").
NUMERIC_OPTION = re.compile(r"([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+))"
                            rf"\s*(?:{_UNITISH})?")


def as_float(number: str) -> float:
    """The value of digits matched by NUMBER, NUMBER_TOKEN or NUMERIC_OPTION ("1,200" is 1200)."""
    return float(number.replace(",", ""))


_FRACTION = re.compile(r"([-+]?\d+)\s*/\s*(\d+)")


def fraction_value(text: str) -> float | None:
    """The value of an answer that is a fraction alone ("1/2"), else None."""
    match = _FRACTION.fullmatch(text)
    if match is None or int(match.group(2)) == 0:
        return None
    return int(match.group(1)) / int(match.group(2))


def truth_number(text: str | None) -> float | None:
    """The number a truth is: digits ("3", "0.5"), a fraction ("1/2"), number words ("three",
    "twenty-one") or a Chinese count ("三", "两个"), as an answer's number is read: "3" meets
    the truth "three"."""
    if text is None:
        return None
    if NUMBER.match(text):
        return as_float(text)
    fraction = fraction_value(text)
    if fraction is not None:
        return fraction
    count = _chinese_count(text)
    if count is not None:
        return count
    word = _NUMBER_WORD.fullmatch(text)
    if word is None:
        return None
    tens, unit, below_twenty = word.groups()
    return float(_WORD_VALUES[tens or below_twenty] + (_WORD_VALUES[unit] if unit else 0))


# A number and its unit: "45°", "3 cm", "12.5 kg", "50%"; not "3 cats and a dog".
_MEASURE = re.compile(rf"({_DECIMAL})\s*({_UNITISH})")
# Each number of an answer with the word written after it ("3 m", "45°", "5 dogs").
_NUMBER_AND_WORD = re.compile(r"(?<![\w.])([-+]?(?:\d+(?:\.\d+)?|\.\d+))\s*(°|%|[a-zµ]+)?")
# The word written after a number word ("three cats", "three"): as after digits.
_WORD_AFTER = re.compile(r"\s*(°|%|[a-zµ]+)?")


_UNIT_WORDS = frozenset({
    "°", "%", "mm", "cm", "dm", "m", "km", "in", "inch", "inches", "ft", "foot", "feet", "yd",
    "yard", "yards", "mi", "mile", "miles", "mg", "g", "kg", "t", "lb", "lbs", "oz", "ml", "l",
    "s", "sec", "second", "seconds", "min", "minute", "minutes", "h", "hr", "hour", "hours", "px",
    "pixel", "pixels", "pt", "kb", "mb", "gb", "hz", "khz", "w", "kw", "v", "a", "rad", "cm²",
    "m²", "km²", "psi", "mph", "kmh", "n", "j", "k", "c", "f", "ms", "µm", "nm"})
GLUED_UNIT = re.compile(r"(\d)(°|%|(?:" + "|".join(sorted(
    (re.escape(u) for u in _UNIT_WORDS if u not in ("°", "%")), key=len, reverse=True)) + r")\b)")


# A unit written out or abbreviated another way, and its symbol: "15 centimeters" is "15 cm",
# "3 seconds" is "3 s", "2 feet" is "2 ft".
_UNIT_SPELLINGS = {"degree": "°", "degrees": "°", "deg": "°"} | {
    word: symbol for symbol, words in (
        ("mm", ("millimeter", "millimeters", "millimetre", "millimetres")),
        ("cm", ("centimeter", "centimeters", "centimetre", "centimetres")),
        ("m", ("meter", "meters", "metre", "metres")),
        ("km", ("kilometer", "kilometers", "kilometre", "kilometres")),
        ("mg", ("milligram", "milligrams")), ("g", ("gram", "grams")),
        ("kg", ("kilogram", "kilograms", "kilo", "kilos")),
        ("ml", ("milliliter", "milliliters", "millilitre", "millilitres")),
        ("l", ("liter", "liters", "litre", "litres")),
        ("s", ("sec", "secs", "second", "seconds")), ("min", ("mins", "minute", "minutes")),
        ("h", ("hr", "hrs", "hour", "hours")), ("in", ("inch", "inches")),
        ("ft", ("foot", "feet")), ("yd", ("yard", "yards")), ("mi", ("mile", "miles")),
        ("lb", ("lbs", "pound", "pounds")), ("px", ("pixel", "pixels")),
    ) for word in words}


def _unit(word: str | None) -> str:
    return _UNIT_SPELLINGS.get(word, word) if word else ""


# "in" after a number before another word is the preposition ("15 in total", "3 in the
# picture"), not inches.
_PREPOSITION_IN = re.compile(r"\s+[^\W\d_]")
# Each number and the word after it, a square or cube mark kept ("15 cm²", or "15 cm2" as
# NFKC writes it, is an area).
_NUMBER_AND_UNIT = re.compile(r"(?<![\w.,])([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
                              r"|\.\d+))\s*"
                              r"(°|%|[a-zµ]+(?:[²³]|[23](?![\w.]))?)?")


_POWERS = str.maketrans("23", "²³")


def units_written(text: str, value: float) -> frozenset[str]:
    """The units written after ``value`` wherever ``text`` gives it, as symbols ("15
    centimeters" gives cm, "45 degrees" °); a counted noun ("15 cats") is no unit."""
    text = GLUED_UNIT.sub(r"\1 \2", text)
    units = set()
    for m in _NUMBER_AND_UNIT.finditer(text):
        if abs(as_float(m.group(1)) - value) >= 1e-9 or m.group(2) is None:
            continue
        word = m.group(2).rstrip("²³23")
        power = m.group(2)[len(word):].translate(_POWERS)
        unit = _unit(word)
        if unit == "in" and not power and _PREPOSITION_IN.match(text, m.end()):
            continue
        if unit in _UNIT_WORDS:
            units.add(unit + power)
    return frozenset(units)


def units_agree(given: str, value: float, option: str, option_value: float) -> bool:
    """Whether an answer giving ``value`` may name an option of ``option_value`` by their units:
    the same one ("15 centimeters" and "15 cm"), or none written on either side."""
    said, offered = units_written(given, value), units_written(option, option_value)
    return not said or not offered or said == offered


# Words after a number that scale it: "3 dozen" is 36, so "3" does not meet it.
_SCALES = frozenset({"dozen", "dozens", "hundred", "hundreds", "thousand", "thousands",
                     "million", "millions", "billion", "billions", "trillion", "score"})


def same_measure(given: str, expected: str) -> bool:
    """A truth with a unit ("45°", "3 cm") or a counted noun ("3 cats") met by its number,
    written bare or with that word ("45", "45 degrees", "3cm", "3 cats"); not with another
    unit or noun ("3 m", "3 dogs")."""
    measured = _MEASURE.fullmatch(expected)
    if measured is None or measured.group(2) in _SCALES:
        return False
    truth, unit = as_float(measured.group(1)), _unit(measured.group(2))
    given = GLUED_UNIT.sub(r"\1 \2", given)  # "3cm" is "3 cm"; "2nd" stays
    # The one number the answer gives (none for "3 or 4 cm", "3-4 cm", "3, 4 cm")…
    value = number_given(given)
    if value is None or abs(value - truth) >= 1e-9:
        return False
    # …written bare or in the truth's unit somewhere ("3 cats" is no 3 cm), and in no other
    # unit anywhere ("It is 3 m"); other words after it are the reason ("3 cm, since 3 is …").
    words = {_unit(m.group(2)) for m in _NUMBER_AND_WORD.finditer(given)
             if abs(as_float(m.group(1)) - value) < 1e-9}
    if not words:  # the number in words ("three cats"), read as the answer's digits would be
        words = {_unit(_WORD_AFTER.match(given, m.end()).group(1))
                 for m in _NUMBER_WORD.finditer(given) if truth_number(m.group()) == value}
    if not words and _chinese_count(given) is not None:  # "三", "三个": bare, as "3个" is
        words = {""}
    # "15 cm²" (an area) is no 15 cm, though its word is.
    return (bool(words & {"", unit}) and not (words & _UNIT_WORDS) - {unit}
            and not units_written(given, value) - {unit})


NUMBER_TOKEN = re.compile(r"(?<![\w.,])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|[.,]\d)"
                          r"|(?<![\w.,])\.\d+(?![\w]|[.,]\d)")
# A Chinese measure word after a count: "3个", "2只", "5辆".
_MEASURE_WORDS = "个只辆人条张棵本座块位件头匹"
_MEASURE_WORD = re.compile(rf"(\d)[{_MEASURE_WORDS}]")


def _chinese_numerals() -> dict[str, int]:
    """Each whole number below a thousand as Chinese writes it ("三", "十二", "二十", "一百零五",
    "三百二十一"), 两 as well as 二 for a leading 2 ("两", "两百"): only these spellings, so
    "三四" ("three or four") and "十两" are no number."""
    digits = "一二三四五六七八九"
    below_hundred = {"零": 0, "〇": 0} | {d: i for i, d in enumerate(digits, 1)}
    below_hundred |= {"十": 10} | {"十" + d: 10 + i for i, d in enumerate(digits, 1)}
    for t, tens in enumerate(digits[1:], 2):
        below_hundred[tens + "十"] = 10 * t
        below_hundred |= {tens + "十" + d: 10 * t + i for i, d in enumerate(digits, 1)}
    numerals = dict(below_hundred)
    for h, hundreds in enumerate(digits, 1):
        for lead in ("两", "二") if hundreds == "二" else (hundreds,):
            numerals[lead + "百"] = 100 * h
            for text, value in below_hundred.items():
                if 1 <= value <= 9:  # 一百零五: a zero stands for the missing tens
                    numerals[lead + "百零" + text] = 100 * h + value
                elif value >= 10:  # 一百一十, not 一百十
                    numerals[lead + "百" + ("一" + text if value < 20 else text)] = 100 * h + value
    numerals["两"] = 2
    return numerals


_CHINESE_NUMERALS = _chinese_numerals()
# A Chinese count as the whole answer: "三", "两个", "共十二只", "一共有三个"; not "三角形"
# (a triangle), "第三" (the third) or "三点五" (3.5), which are no count of whole things.
_CHINESE_COUNT = re.compile(rf"(?:(?:一共|总共|共)有?|有)?(?P<n>[零〇一二两三四五六七八九十百]+)"
                            rf"[{_MEASURE_WORDS}]?")


def _chinese_count(text: str) -> float | None:
    match = _CHINESE_COUNT.fullmatch(text)
    if match is None or (value := _CHINESE_NUMERALS.get(match.group("n"))) is None:
        return None
    return float(value)
# Words that offer a second number ("3 or 4", "between 3 and 4"), and a hedge or a bar right
# before one ("12 (maybe 15)", "12, possibly 15", "12 | 15"). Not "vs": "15 (vs 12 for the
# other bar)" compares, and gives 15.
_ALTERNATIVES = re.compile(r"\b(?:or|between|either|to)\b"
                           r"|(?:\b(?:maybe|possibly|perhaps)\b|\|)\s*[-+]?\.?\d")
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_WORD_VALUES = {w: i for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
# A number word standing whole: "twenty-one", "twenty one", "three"; not "twenty-first".
_NUMBER_WORD = re.compile(rf"(?<![\w-])(?:({'|'.join(_TENS)})(?:[-\s]({'|'.join(_UNITS[1:10])}))?"
                          rf"|({'|'.join(_UNITS)}))(?![\w-])")
# Where "one" is a count and not the pronoun ("the one on the left"): first, or after these.
_ONE_COUNTS = re.compile(r"^(?:(?:there\s+(?:is|are)|there['’]s|i\s+(?:count|see)|only|just"
                         r"|exactly)\s+)*one\b")


_BOUND_BEFORE = re.compile(r"(?:\b(?:fewer|less|more|greater|larger|smaller|higher|lower)\s+than"
                           r"|\bat\s+(?:least|most)|\bup\s+to|[<>≤≥])\s*$")
_BOUND_AFTER = re.compile(r"\s*(?:\+(?!\s*\d)|or\s+(?:more|fewer|less|greater|higher|lower|above"
                          r"|below)\b)")
_RESULT_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# What may follow a leading number that is the answer: its unit or counted noun, then the end
# or a mark that begins the reason.
_STANDS_FIRST = re.compile(r"\s*(?:(?:[^\W\d_]+|[%°])\s*)?(?:$|[,.;:(!?]|\b(?:because|since|as)\b)")
_OPERATOR = re.compile(r"[+\-−×*/·]|\b(?:plus|times|minus)\b")
_REASON_MARK = re.compile(r"[;(]|\b(?:because|since|as|with|where|given|if|when)\b")
# The number an answer arrives at: after its last "=", or beside "in total" / "altogether".
_RESULT = re.compile(rf"=\s*(?P<n>{_RESULT_NUMBER})(?!.*=)(?![\w.,]\d)"
                     rf"|(?<![\w.])(?<!of )(?<!of the )(?P<m>{_RESULT_NUMBER})\s+(?:[a-z]+\s+)?"
                     rf"(?:in\s+total|in\s+all"
                     rf"|altogether)\b", re.S)


# An answer that is a bound: it opens with a comparator, or is a number and "or more" / "+".
STARTS_BOUNDED = re.compile(r"(?:(?:fewer|less|more|greater|larger|smaller|higher|lower)\s+than"
                            r"|at\s+(?:least|most)|up\s+to|[<>≤≥])\s*[-+]?[\d.]"
                            rf"|{_RESULT_NUMBER}\s*(?:\+(?!\s*\d)|or\s+(?:more|fewer|less)\b)")


def _bounded(given: str, start: int) -> bool:
    """Whether the number at ``start`` is a bound ("fewer than 3", "at least 3", "3 or more",
    "3+"): an answer so worded does not give that count (the paper's judge is strict on counts)."""
    if _BOUND_BEFORE.search(given, max(0, start - 24), start):
        return True
    token = NUMBER_TOKEN.match(given, start) or _NUMBER_WORD.match(given, start)
    return token is not None and _BOUND_AFTER.match(given, token.end()) is not None


# A number with a decimal comma, as the whole answer: one or two digits after the comma ("3,5",
# "12,75"), or any after a lone 0 ("0,125"), where the comma cannot be a thousands separator.
# "1,200" stays 1200. Read in answers only: a truth "1,2" may list two items, and a model that
# answers "1,2" where the truth is a number most likely writes the decimal comma.
_DECIMAL_COMMA = re.compile(r"[-+]?(?:\d+,\d{1,2}|0,\d+)")


def number_given(given: str) -> float | None:
    """The number an answer gives: its leading number ("12 cm", "12, since 3 pairs …"), or
    the one number it holds ("I count 3"); None when it names two as alternatives ("3 or 4",
    "between 2 and 3") or holds none. Words are read when it has no digits ("three")."""
    count = _chinese_count(given)
    if count is not None:  # "三", "两个": the answer is that count
        return count
    if _DECIMAL_COMMA.fullmatch(given):  # "3,5" is 3.5 where a comma is the decimal mark
        return float(given.replace(",", "."))
    numbers = _numbers(given)
    # A number that stands first and alone ("3.", "3, since …", "12 cm (…)") is the answer,
    # whatever its reason computes ("3. Check: 3 × 2 = 6", "25%, since 1/4 = 0.25").
    lead = NUMBER_TOKEN.match(given) or _NUMBER_WORD.match(given)
    stands_first = lead is not None and _STANDS_FIRST.match(given, lead.end()) is not None
    result = None if stands_first else _RESULT.search(given)
    if result is not None and result.group("n") is not None:
        # An equation the answer is: a sum or product before its "=", not a reason ("3 with
        # p = 0.05", "3 (since 2 = 2)").
        head = given[:result.start()]
        if not _OPERATOR.search(head) or _REASON_MARK.search(head):
            result = None
    if result is not None:  # "2 + 1 = 3", "3 red and 4 blue, 7 in total"
        name = "n" if result.group("n") else "m"
        return None if _bounded(given, result.start(name)) else as_float(result.group(name))
    value = _number_read(given, numbers)
    if value is None:
        return None
    # "fewer than 3", "at least 3", "3 or more": a bound, not a count. Only where the answer
    # gives it: a bound in the reason is part of the reason ("4, since at least 4 are clear").
    given_at = [0] if numbers[0][0] == 0 else [start for start, v in numbers if v == value]
    if any(_bounded(given, start) for start in given_at):
        return None
    return value


def _number_read(given: str, numbers: list[tuple[int, float | None]]) -> float | None:
    values = {value for _, value in numbers}
    if len(values) == 1:
        return values.pop()
    if numbers and numbers[0][0] == 0 and not _ALTERNATIVES.search(given):
        lead = NUMBER_TOKEN.match(given) or _NUMBER_WORD.match(given)
        second = numbers[1][0]
        span = lead and _RANGE.match(given, lead.end())
        # "3-4", "3 cm – 4 cm": a range; "3 - 2 red and 1 blue" is a dash before a reason.
        if (span and second in (span.end(), span.end() - 1)
                and (not re.search(r"\s[-–]\s", span.group())
                     or (numbers[1][1] or 0) > (numbers[0][1] or 0))):
            return None
        joined = lead and _JOINED.match(given, lead.end())
        # (A "one" there of unknown value is the pronoun: "three, one of them red".)
        if joined and second == joined.end() and numbers[1][1] is not None:
            unit = joined.group("unit")
            after = _NUMBER_AND_WORD.match(given, second)
            # "3 cm, 4 cm" lists one measure twice; "5 apples and 3 pears" counts two things.
            if unit is None or (after is not None and after.group(2) == unit):
                return None  # "3 and 4", "3, 4", "3/4": two answers, or a number not read here
        return numbers[0][1]
    return None


# What joins a leading number to the next into a list ("3, 4", "3 & 4") or a fraction ("3/4").
_JOINED = re.compile(rf"(?:\s*(?P<unit>{_UNITISH}))?\s*(?:,|;|&|/|\+|×|\*|\band\b"
                     r"|\bplus\b)\s*")
_RANGE = re.compile(rf"(?:\s*(?:{_UNITISH}))?\s*[-–]\s*")  # "3-4", "3 cm – 4 cm"


# A number word these follow or precede is part of a number this reader does not read ("one
# hundred", "two point five", "one half", "minus three"): its value is unknown.
_SCALED = re.compile(r"[\s-]+(?:hundred|thousand|million|billion|dozen|point|half|halves"
                     r"|thirds?|quarters?|fifths?|tenths?)\b")
_NEGATED = re.compile(r"\b(?:minus|negative)\s*$")


def _numbers(given: str) -> list[tuple[int, float | None]]:
    """Where each number starts and its value: the digits, or else the number words."""
    given = _MEASURE_WORD.sub(r"\1 ", given)  # "3个" (3 of them, with a measure word) is 3
    digits = [(t.start(), as_float(t.group())) for t in NUMBER_TOKEN.finditer(given)]
    if digits:
        return digits
    words = list(_NUMBER_WORD.finditer(given))
    return [(w.start(), None if _SCALED.match(given, w.end()) or _NEGATED.search(given[:w.start()])
             else _word_value(w, given, alone=len(words) == 1)) for w in words]


def _word_value(word: re.Match[str], given: str, *, alone: bool) -> float | None:
    """A number word's value. "One" is read only as a count and as the answer's only number:
    elsewhere it may be the pronoun ("the red one"), so its value is unknown (None), and an
    answer holding it gives no number unless it leads with another ("three, one of them red")."""
    if word.group() == "one":
        counts = alone and (match := _ONE_COUNTS.match(given)) and match.end() == word.end()
        return 1.0 if counts else None
    tens, unit, below_twenty = word.groups()
    return float(_WORD_VALUES[tens or below_twenty] + (_WORD_VALUES[unit] if unit else 0))
