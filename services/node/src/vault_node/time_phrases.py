"""A time a question names in German, French, Spanish, Italian, Portuguese, Dutch, Russian,
Chinese, Japanese or Korean, read as the English phrase it means (`grammar.question_time`
reads that one).

`seit letzter Woche` is `since last week`, `il y a 3 jours` `3 days ago`, `en los últimos
7 días` `in the last 7 days`, `im März` `in March`, `vor dem 5. März` `before 5 March`,
`на прошлой неделе` `last week`, `上周` `last week`, `3月5日以降` `since March 5`, `3일 전`
`3 days ago`. Only phrases that name a time in their language and nothing else: a month or
a weekday counts after a word for `in`, `on`, `since`, `before`, `after` or `until`
(`mars` is a planet too), French `hier` only after `depuis` or `jusqu'à` (in German and
Dutch it means `here`), a year or an ISO date only after such a word. Accents may be left
out (`fevrier`, `ultimos`), umlauts written `ae` (`Maerz`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

_UNITS = ("day", "week", "month", "year")
_RELATIONS = ("since", "before", "after", "until")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")  # fmt: skip


@dataclass(frozen=True)
class Words:
    """How one language names times: each a regex over lowercase text; `{n}` stands for a
    count, `{u}` for a unit, `{m}` for a month, `{d}` for a day of the month, `{y}` for a
    year and `{w}` for a weekday."""

    today: str
    yesterday: str
    this: tuple[str, str, str]
    """This week, this month, this year."""
    last: tuple[str, str, str]
    since: str
    """Before a time: `seit`, `depuis`."""
    within: str
    """Before a month: `im`, `en`."""
    months: str
    """January to December, separated by spaces, a name's spellings by `|`; none where
    months are counted (`3月`, `3월`): then `counted_month`."""
    units: tuple[str, str, str, str]
    """Day, week, month, year, in every form a count takes."""
    numbers: str
    """One to twelve in words, as `months`."""
    few: str
    """`a few`, read as 3."""
    ago: tuple[str, ...]
    recent: tuple[str, ...]
    """The last N units, counted back from now."""
    day_month: str
    since_after: str = ""
    """After a time (`以降`, `から`)."""
    before: str = ""
    """Before a time: `vor dem`, `avant le` (`before_after` after it: `之前`)."""
    after: str = ""
    """Before a time: `nach dem`, `après le` (a day's end: `after March 5` is from March 6)."""
    until: str = ""
    """Before a time: `bis zum`, `jusqu'au` (`until_after` after it: `まで`)."""
    before_after: str = ""
    until_after: str = ""
    counted_month: str = ""
    """A month by its number, its groups `m` and `y` (`2025年3月`)."""
    cues: str = ""
    """What the phrases holding no unit, month or day's name hold instead (`月` of `上月`)."""
    weekdays: str = ""
    """Monday to Sunday, as `months`, in the forms they take after `on` and `since`."""
    on: str = ""
    """Before a weekday: `am`, `el` (a weekday alone may be a name: `Montagsmeeting`)."""
    last_weekday: str = ""
    """The last such weekday, `{w}` the weekday: `letzten {w}`, `{w} dernier`."""
    week_days: str = ""
    """Monday to Sunday as they follow the name of a week (`上周五`, `先週の金曜日`, `지난주
    금요일`), as `months`: read only in `last_week_day` and `this_week_day`, where they
    cannot be a name or a count."""
    last_week_day: str = ""
    """A day of last week, `{w}` its weekday of `week_days`."""
    this_week_day: str = ""
    spaced: bool = True
    """Words stand between spaces, so a phrase starts and ends at a word's edge (not in
    Chinese and Japanese, nor in Korean, which joins particles to its words: `지난주에`)."""

    def counts(self) -> dict[str, int]:
        """Each number word and its value."""
        counts = dict.fromkeys(self.few.split("|"), 3)
        for value, spellings in enumerate(self.numbers.split(), start=1):
            counts.update((word, value) for word in spellings.split("|"))
        return counts


_DE_LAST = r"(?:letzt|vergangen|vorig)(?:e|er|en|em|es)?"
_CJK_NUMBERS = "一 二|两 三 四 五 六 七 八 九 十 十一 十二"
_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"
"""Kana, CJK ideographs and Hangul: where a Chinese, Japanese or Korean phrase may begin."""
_KO_MONTH = r"(?:(?P<y>[0-9]{4})\s*년\s*)?(?P<m>1[0-2]|0?[1-9])\s*월"
_CJK_SINCE = r"以来|以降|起|开始|之后|以后|から"
"""After a time, in Chinese or Japanese: since then (one list, as `日` ends a day in both)."""
_ZH_NOT_A_DAY = "个個次篇天本份条條位项項件周週月年场場节節共起直些切般样樣点點下记記报報志程常期子"
_ZH_WEEK_DAY = rf"(?:周|週|星期|礼拜|禮拜){{w}}(?![{_ZH_NOT_A_DAY}])"
"""A weekday after Chinese `上` or `本` (the week): `上周五`, `本星期一`; not `上周一共` (in
all), `上周五个` (five), `上周日记` (the diary)."""
_CJK_MONTH = (
    r"(?:(?P<y>[0-9]{4})\s*年\s*)?(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])\s*月份?"
)

LANGUAGES: dict[str, Words] = {
    "de": Words(
        today=r"heute",
        yesterday=r"gestern",
        this=(
            r"(?:in\s+)?dies(?:e|er|en|em)\s+woche",
            r"(?:in\s+)?dies(?:en|em)\s+monat",
            r"(?:in\s+)?dies(?:es|em)\s+jahr",
        ),
        last=(
            rf"(?:in\s+der\s+)?{_DE_LAST}\s+woche",
            rf"(?:im\s+)?{_DE_LAST}\s+monat",
            rf"(?:im\s+)?{_DE_LAST}\s+jahr",
        ),
        since=r"seit(?:\s+de[mn])?|ab",
        before=r"vor\s+de[mn]",  # `vor` alone: `ago`, and Romanian `will` (`se vor mai`)
        after=r"nach(?:\s+de[mn])?",
        until=r"bis(?:\s+(?:zum|zur))?",
        within=r"im|in",
        months=(
            "januar|jänner februar märz april mai juni"
            " juli august september oktober november dezember"
        ),
        units=(r"tag(?:e|en)?", r"woche(?:n)?", r"monat(?:e|en)?", r"jahr(?:e|en)?"),
        numbers="ein|eine|einer|einem|einen zwei drei vier fünf sechs sieben acht neun zehn elf"
        " zwölf",
        few="ein paar|einigen",
        ago=(r"vor\s+{n}\s+{u}",),
        recent=(r"(?:in\s+den\s+|während\s+der\s+)?letzten\s+{n}\s+{u}", r"seit\s+{n}\s+{u}"),
        weekdays="montag dienstag mittwoch donnerstag freitag samstag|sonnabend sonntag",
        on=r"am",
        last_weekday=r"(?:letzten|vergangenen|vorigen)\s+{w}",
        day_month=r"(?:(?:am|dem|den)\s+)?{d}\.?\s+{m}(?:\s+{y})?",
    ),
    "fr": Words(
        today=r"aujourd['’]hui",
        yesterday=r"(?:(?<=depuis )|(?<=jusqu'à )|(?<=jusqu’à ))hier",
        this=(r"cette\s+semaine", r"ce\s+mois(?:-ci)?", r"cette\s+année"),
        last=(
            r"(?:la\s+)?semaine\s+(?:dernière|passée)",
            r"(?:le\s+)?mois\s+(?:dernier|passé)",
            r"(?:l['’]\s*)?(?:année\s+(?:dernière|passée)|an\s+(?:dernier|passé))",
        ),
        since=r"depuis(?:\s+le)?|à\s+partir\s+d[eu]",
        before=r"avant(?:\s+le)?",
        after=r"après(?:\s+le)?",
        until=r"jusqu['’]\s*(?:à|au)(?:\s+le)?",
        within=r"en|au\s+mois\s+de",
        months=(
            "janvier février mars avril mai juin juillet août septembre octobre novembre décembre"
        ),
        units=(r"jours?", r"semaines?", r"mois", r"ans?|années?"),
        numbers="un|une deux trois quatre cinq six sept huit neuf dix onze douze",
        few="quelques",
        ago=(r"il\s+y\s+a\s+{n}\s+{u}",),
        recent=(
            r"(?:(?:dans|pendant|durant|au\s+cours\s+de)\s+)?(?:ces|les)\s+{n}\s+"
            r"derni(?:ers|ères)\s+{u}",
            r"depuis\s+{n}\s+{u}",
        ),
        weekdays="lundi mardi mercredi jeudi vendredi samedi dimanche",
        on=r"le",
        last_weekday=r"(?:le\s+)?{w}\s+(?:dernier|passé)",
        day_month=r"(?:le\s+)?{d}(?:er)?\s+{m}(?:\s+{y})?",
    ),
    "es": Words(
        today=r"hoy",
        yesterday=r"ayer",
        this=(r"esta\s+semana", r"este\s+mes", r"este\s+año"),
        last=(r"(?:la\s+)?semana\s+pasada", r"(?:el\s+)?mes\s+pasado", r"(?:el\s+)?año\s+pasado"),
        since=r"desde(?:\s+el)?",
        before=r"antes\s+d(?:e|el)(?:\s+el)?",
        after=r"después\s+d(?:e|el)(?:\s+el)?",
        until=r"hasta(?:\s+el)?",
        within=r"en",
        months=(
            "enero febrero marzo abril mayo junio"
            " julio agosto septiembre|setiembre octubre noviembre diciembre"
        ),
        units=(r"días?", r"semanas?", r"mes(?:es)?", r"años?"),
        numbers="un|una|uno dos tres cuatro cinco seis siete ocho nueve diez once doce",
        few="unos|unas|algunos|algunas",
        ago=(r"hace\s+{n}\s+{u}",),
        recent=(
            r"(?:en\s+|durante\s+)?(?:los|las)\s+últim(?:os|as)\s+{n}\s+{u}",
            r"desde\s+hace\s+{n}\s+{u}",
        ),
        weekdays="lunes martes miércoles jueves viernes sábado domingo",
        on=r"el",
        last_weekday=r"(?:el\s+)?{w}\s+pasado",
        day_month=r"(?:el\s+)?{d}\s+de\s+{m}(?:\s+(?:de\s+)?{y})?",
    ),
    "it": Words(
        today=r"oggi",
        yesterday=r"ieri",
        this=(r"questa\s+settimana", r"questo\s+mese", r"quest['’]\s*anno|questo\s+anno"),
        last=(
            r"(?:la\s+)?settimana\s+(?:scorsa|passata)",
            r"(?:il\s+)?mese\s+(?:scorso|passato)",
            r"(?:l['’]\s*)?anno\s+(?:scorso|passato)",
        ),
        since=r"da(?:l|lla|ll['’])?",
        before=r"prima\s+d(?:i|el|ella|ell['’])",
        after=r"dopo(?:\s+il|\s+l['’])?",
        until=r"fino\s+a(?:l|lla)?",
        within=r"a|in|nel\s+mese\s+di",
        months=(
            "gennaio febbraio marzo aprile maggio giugno"
            " luglio agosto settembre ottobre novembre dicembre"
        ),
        units=(r"giorn[oi]", r"settiman[ae]", r"mes[ei]", r"ann[oi]"),
        numbers="un|uno|una due tre quattro cinque sei sette otto nove dieci undici dodici",
        few="alcuni|alcune|qualche",
        ago=(r"{n}\s+{u}\s+fa",),
        recent=(
            r"(?:negli|nei|nelle|durante\s+gli|durante\s+le)\s+ultim[ie]\s+{n}\s+{u}",
            r"da\s+{n}\s+{u}",
        ),
        weekdays="lunedì martedì mercoledì giovedì venerdì sabato domenica",
        on=r"il",
        last_weekday=r"(?:il\s+|la\s+)?{w}\s+(?:scors[oa]|passat[oa])",
        day_month=r"(?:il\s+|l['’]\s*)?{d}\s+{m}(?:\s+{y})?",
    ),
    "pt": Words(
        today=r"hoje",
        yesterday=r"ontem",
        this=(r"(?:n?esta)\s+semana", r"(?:n?este)\s+mês", r"(?:n?este)\s+ano"),
        last=(
            r"(?:(?:a|na)\s+)?semana\s+passada",
            r"(?:(?:o|no)\s+)?mês\s+passado",
            r"(?:(?:o|no)\s+)?ano\s+passado",
        ),
        since=r"desde(?:\s+o)?|a\s+partir\s+d[eo]",
        before=r"antes\s+d[eoa]",
        after=r"depois\s+d[eoa]",
        until=r"até(?:\s+[oa])?",
        within=r"em|no\s+mês\s+de",
        months=(
            "janeiro fevereiro março abril maio junho"
            " julho agosto setembro outubro novembro dezembro"
        ),
        units=(r"dias?", r"semanas?", r"mês|meses", r"anos?"),
        numbers="um|uma dois|duas três quatro cinco seis sete oito nove dez onze doze",
        few="alguns|algumas",
        ago=(r"há\s+{n}\s+{u}", r"{n}\s+{u}\s+atrás"),
        recent=(r"(?:nos|nas|durante\s+os|durante\s+as)\s+últim(?:os|as)\s+{n}\s+{u}",),
        weekdays=("segunda-feira terça-feira quarta-feira quinta-feira sexta-feira sábado domingo"),
        on=r"na|no",
        last_weekday=r"(?:(?:na|no)\s+)?{w}\s+passad[ao]",
        day_month=r"(?:(?:em|no|o)\s+)?{d}(?:º)?\s+de\s+{m}(?:\s+de\s+{y})?",
    ),
    "nl": Words(
        today=r"vandaag",
        yesterday=r"gisteren",
        this=(r"deze\s+week", r"deze\s+maand", r"dit\s+jaar"),
        last=(
            r"(?:vorige|afgelopen)\s+week",
            r"(?:vorige|afgelopen)\s+maand",
            r"(?:vorig|afgelopen)\s+jaar",
        ),
        since=r"sinds|vanaf",
        before=r"voor",
        after=r"na",
        until=r"tot(?:\s+en\s+met)?",
        within=r"in",
        months=(
            "januari februari maart april mei juni"
            " juli augustus september oktober november december"
        ),
        units=(r"dag(?:en)?", r"weken|week", r"maand(?:en)?", r"jaar|jaren"),
        numbers="een|één twee drie vier vijf zes zeven acht negen tien elf twaalf",
        few="een paar",
        ago=(r"{n}\s+{u}\s+geleden",),
        recent=(r"(?:(?:in|de|in\s+de)\s+)?(?:afgelopen|laatste)\s+{n}\s+{u}",),
        weekdays="maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
        on=r"op",
        last_weekday=r"(?:afgelopen|vorige)\s+{w}",
        day_month=r"(?:op\s+)?{d}\s+{m}(?:\s+{y})?",
    ),
    "ru": Words(
        today=r"сегодня",
        yesterday=r"вчера|вчерашнего\s+дня",
        this=(
            r"(?:на\s+)?это(?:й|т)\s+недел[еия]",
            r"(?:в\s+)?это(?:м|т|го)\s+месяц[еа]?",
            r"(?:в\s+)?это(?:м|т|го)\s+год[уа]?",
        ),
        last=(
            r"(?:на\s+)?прошл(?:ой|ая|ую)\s+недел[еияю]",
            r"(?:в\s+)?прошл(?:ом|ый|ого)\s+месяц[еа]?",
            r"(?:в\s+)?прошл(?:ом|ый|ого)\s+год[уа]?",
        ),
        since=r"с(?:о)?|начиная\s+с",
        before=r"до",
        after=r"после",
        within=r"в",
        months=(
            "январ[ьяе] феврал[ьяе] март[ае]? апрел[ьяе] ма[йяе] июн[ьяе]"
            " июл[ьяе] август[ае]? сентябр[ьяе] октябр[ьяе] ноябр[ьяе] декабр[ьяе]"
        ),
        units=(r"дн(?:я|ей)|день", r"недел(?:ю|и|ь|е|я)", r"месяц(?:а|ев)?", r"год(?:а)?|лет"),
        numbers="один|одну|одна два|две три четыре пять шесть семь восемь девять десять"
        " одиннадцать двенадцать",
        few="несколько|пару",
        ago=(r"{n}\s+{u}\s+назад",),
        recent=(r"(?:за\s+)?последни[ей]\s+{n}\s+{u}",),
        weekdays=(
            "понедельник[а]? вторник[а]? сред[уы] четверг[а]? пятниц[уы] суббот[уы] воскресень[ея]"
        ),
        on=r"в|во",
        last_weekday=r"(?:в\s+|во\s+)?прошл(?:ый|ую|ое)\s+{w}",
        day_month=r"{d}\s+{m}(?:\s+{y})?",
    ),
    "zh": Words(
        today=r"今天|今日",
        yesterday=r"昨天",
        this=(r"本[周週]|[这這][周週]|[这這][个個]?星期|本星期", r"本月|[这這][个個]月", r"今年"),
        last=(r"上[周週]|上[个個]?星期|上[个個]?(?:礼拜|禮拜)", r"上[个個]?月", r"去年"),
        since=r"自从|自|从",
        within="",
        months="",
        units=(r"天|日", r"[周週]|[个個]?星期|[个個]?(?:礼拜|禮拜)", r"[个個]月", r"年"),
        numbers=_CJK_NUMBERS,
        few=r"几|数",
        ago=(r"{n}\s*{u}(?:以)?前",),
        recent=(r"(?:最近|过去|近)的?\s*{n}\s*{u}(?:内|里|中|以来)?",),
        day_month=_CJK_MONTH + r"\s*(?P<d>[0-9]{1,2})\s*[日号]",
        since_after=_CJK_SINCE,
        before_after=r"之前|以前",
        counted_month=_CJK_MONTH,
        cues="月",
        week_days="一 二 三 四 五 六 日|天",
        last_week_day=r"上[个個]?" + _ZH_WEEK_DAY,
        this_week_day=r"(?:本|[这這][个個]?)" + _ZH_WEEK_DAY,
        spaced=False,
    ),
    "ja": Words(
        today=r"今日|本日",
        yesterday=r"昨日",
        this=(r"今週", r"今月", r"今年"),
        last=(r"先週", r"先月", r"去年|昨年"),
        since="",
        within="",
        months="",
        units=(r"日(?:間)?", r"週(?:間)?", r"[かヶカケヵ箇]月(?:間)?", r"年(?:間)?"),
        numbers=_CJK_NUMBERS,
        few=r"几|数",
        ago=(r"{n}\s*{u}前",),
        recent=(r"(?:過去|最近|ここ|直近)の?\s*{n}\s*{u}(?:以内)?",),
        day_month=_CJK_MONTH + r"\s*(?P<d>[0-9]{1,2})\s*日",
        since_after=_CJK_SINCE,
        before_after=r"より前|以前",
        until_after=r"まで",
        counted_month=_CJK_MONTH,
        cues="月",
        week_days="月 火 水 木 金 土 日",
        last_week_day=r"先週の?\s*{w}曜(?:日)?",
        this_week_day=r"今週の?\s*{w}曜(?:日)?",
        spaced=False,
    ),
    "ko": Words(
        today=r"오늘",
        yesterday=r"어제",
        this=(r"이번\s*주", r"이번\s*달", r"올해|금년"),
        last=(r"지난\s*주", r"지난\s*달", r"작년|지난\s*해"),
        since="",
        within="",
        months="",
        units=(r"일", r"주(?:일)?", r"개월|달", r"년"),
        numbers="한|하나 두|둘 세|셋 네|넷 다섯 여섯 일곱 여덟 아홉 열 열한 열두",
        few=r"몇",
        ago=(r"{n}\s*{u}\s*전",),
        recent=(r"(?:최근|지난)\s*{n}\s*{u}(?:\s*동안|간)?",),
        day_month=_KO_MONTH + r"\s*(?P<d>[0-9]{1,2})\s*일",
        since_after=r"\s*(?:부터|이후)",
        before_after=r"\s*(?:이전|전)",
        until_after=r"\s*까지",
        spaced=False,
        counted_month=_KO_MONTH,
        cues="월",
        week_days="월 화 수 목 금 토 일",
        last_week_day=r"(?:지난|저번)\s*주\s*{w}\s*요일",
        this_week_day=r"이번\s*주\s*{w}\s*요일",
    ),
}

_UMLAUTS = {"ä": "ae", "ö": "oe", "ü": "ue"}
"""German letters also spelled out (`Maerz`) or left plain (`Marz`)."""


def _loose(pattern: str) -> str:
    """`pattern` with each accented Latin letter also matched without its accent (`días`,
    `dias`) and each umlaut also spelled out."""
    out = []
    for char in pattern:
        plain = unicodedata.normalize("NFD", char)[0]
        if char in _UMLAUTS:
            out.append(f"(?:{char}|{_UMLAUTS[char]}|{plain})")
        elif plain != char and plain.isascii() and plain.isalpha():
            out.append(f"[{char}{plain}]")
        else:
            out.append(char)
    return "".join(out)


@dataclass(frozen=True)
class _Entry:
    """One phrase of a language and the English it means."""

    english: str
    """The English phrase, with `{n}`, `{u}`, `{m}`, `{d}`, `{y}`, `{w}` to fill in, or
    `{text}`: the phrase as written (a year, an ISO date)."""
    words: Words
    needs_rel: bool = False
    """Read only after a word for `since`, `before`, `after`, `until` or `in` (a month, a
    weekday, a year, a date)."""
    takes_rel: bool = True
    """A word for `since` and the like before it counts (not for the last N days: `seit 3
    Tagen` is `in the last 3 days` whether or not `seit` is read as since)."""


def _entries(words: Words) -> list[tuple[str, _Entry]]:
    """Each phrase of `words` as a regex and what it means; of two that start at one place
    the first listed is read, so the longer forms come first."""
    count = "|".join(sorted(map(re.escape, words.counts()), key=len, reverse=True))
    n = rf"(?P<n>[0-9]{{1,3}}|{count})"
    u = "(?P<u>" + "|".join(f"(?P<u{i}>{unit})" for i, unit in enumerate(words.units)) + ")"
    names = words.months.split()
    m = "(?P<m>" + "|".join(f"(?P<m{i}>{name})" for i, name in enumerate(names)) + ")"
    d, y = r"(?P<d>[0-9]{1,2})", r"(?P<y>[0-9]{4})"
    counted = not names
    month = words.counted_month or rf"(?:(?P<in>{words.within})\s+)?{m}(?:\s+(?:de\s+)?{y})?"
    days = words.weekdays.split()
    w = "(?P<w>" + "|".join(f"(?P<w{i}>{name})" for i, name in enumerate(days)) + ")"
    fill = {"n": n, "u": u, "m": m, "d": d, "y": y, "w": w}
    week_days = words.week_days.split()
    v = "(?P<w>" + "|".join(f"(?P<w{i}>{name})" for i, name in enumerate(week_days)) + ")"
    ones = [(words.today, "today"), (words.yesterday, "yesterday")]
    ones += [(p, f"this {unit}") for p, unit in zip(words.this, _UNITS[1:], strict=True)]
    ones += [(p, f"last {unit}") for p, unit in zip(words.last, _UNITS[1:], strict=True)]
    found: list[tuple[str, _Entry]] = [
        *((form.format(w=v), _Entry(f"{{w}} {which} week", words)) for form, which in
          ((words.last_week_day, "last"), (words.this_week_day, "this")) if form),
        *((form.format(**fill), _Entry("in the last {n} {u}s", words, takes_rel=False))
          for form in words.recent),
        *((form.format(**fill), _Entry("{n} {u}s ago", words)) for form in words.ago),
        (words.day_month if counted else words.day_month.format(**fill),
         _Entry("on {d} {m}{y}", words)),
        (month, _Entry("in {m}{y}", words, needs_rel=not counted)),
        (r"[0-9]{4}-[0-9]{2}-[0-9]{2}|(?:19|20)[0-9]{2}(?![0-9]|\s*[年년])",
         _Entry("{text}", words, needs_rel=True)),
        *((pattern, _Entry(english, words)) for pattern, english in ones),
    ]  # fmt: skip
    if days:  # the last such day; on it; since it (alone it may be a name)
        found += [(words.last_weekday.format(w=w), _Entry("last {w}", words)),
                  (rf"(?:{words.on})\s+{w}", _Entry("on {w}", words)),
                  (w, _Entry("{w}", words, needs_rel=True))]  # fmt: skip
    return found


_WINDOW = 500
"""How much of a question is read for a time: its phrase stands among the first words."""
_REACH = 40
"""How far a phrase reaches either side of its cue (`in den letzten zwei Wochen`)."""


@dataclass(frozen=True)
class _Reader:
    """One language's phrases: `pattern` names entry k's group `e{k}` and its inner groups
    `e{k}_{name}`, a word for `since` before the entry `s`, after it `a`; `cues` finds
    what every phrase of the language holds one of (a unit, a month, the name of a day, a
    week, a month or a year, or a year's number), so only the stretches near a cue are
    read phrase by phrase and a question without one costs a quick look."""

    pattern: re.Pattern[str]
    cues: re.Pattern[str]
    entries: tuple[_Entry, ...]

    def first(self, window: str) -> tuple[int, int, str] | None:
        for start, end in self._near_cues(window):
            for found in self.pattern.finditer(window, start, end):
                named = found.groupdict()
                k = next(int(name[1:]) for name, value in named.items()
                         if value is not None and re.fullmatch(r"e[0-9]+", name))  # fmt: skip
                english = _english(self.entries[k], named, k)
                if english is not None:
                    return found.start(), found.end(), english
        return None

    def _near_cues(self, window: str) -> list[tuple[int, int]]:
        """The stretches of `window` within `_REACH` of a cue, merged."""
        stretches: list[tuple[int, int]] = []
        for cue in self.cues.finditer(window):
            start, end = max(0, cue.start() - _REACH), min(len(window), cue.end() + _REACH)
            if stretches and start <= stretches[-1][1]:
                stretches[-1] = (stretches[-1][0], end)
            else:
                stretches.append((start, end))
        return stretches


def _reader(words: Words) -> _Reader:
    """`words`' phrases as one pattern (accents optional) and its cues as another."""
    inner, entries = [], []
    for k, (pattern, entry) in enumerate(_entries(words)):
        named = re.sub(r"\(\?P<(\w+)>", rf"(?P<e{k}_\1>", _loose(pattern))
        inner.append(f"(?P<e{k}>{named})")
        entries.append(entry)
    gap = r"(?:\s+|(?<=['’]))" if words.spaced else r"\s*"
    before = [(rel, _loose(word)) for rel, word in
              (("since", words.since), ("before", words.before), ("after", words.after),
               ("until", words.until)) if word]  # fmt: skip
    behind = [(rel, word) for rel, word in
              (("since", words.since_after), ("before", words.before_after),
               ("until", words.until_after)) if word]  # fmt: skip
    ahead = "|".join(f"(?P<r_{rel}>{word})" for rel, word in before)
    tail = "|".join(f"(?P<x_{rel}>{word})" for rel, word in behind)
    body = (f"(?:(?:{ahead}){gap})?" if ahead else "") + f"(?:{'|'.join(inner)})"
    body += f"(?:{tail})?" if tail else ""
    pattern = rf"(?<!\w)(?=\w){body}(?!\w)" if words.spaced else rf"(?=[0-9{_CJK}]){body}"
    cues = (words.today, words.yesterday, *words.units, *words.months.split(),
            *words.weekdays.split(), words.cues)  # fmt: skip
    year = r"(?<![0-9])(?:19|20)[0-9]{2}(?![0-9])"
    return _Reader(
        re.compile(pattern),
        re.compile(_loose("|".join(cue for cue in cues if cue)) + "|" + year),
        tuple(entries),
    )


@functools.cache
def _readers() -> tuple[_Reader, ...]:
    """Every language's reader, made at the first question (compiling them takes about
    0.1 s, which importing the module should not cost)."""
    return tuple(_reader(words) for words in LANGUAGES.values())


_MADE = re.compile(
    _loose(
        r"(?<!\w)(?:erstellt|angelegt|hinzugefügt|neue[n]?\s+notiz(?:en)?|créée?s?|ajoutée?s?"
        r"|nouvelles?\s+notes?|cread[oa]s?|añadid[oa]s?|nuevas?\s+notas?|creat[oaie]|aggiunt[oaie]"
        r"|nuov[ae]\s+not[ae]|criad[oa]s?|adicionad[oa]s?|novas?\s+notas?|(?:aan)?gemaakt"
        r"|toegevoegd|nieuwe\s+notities?|созда\w*|добавлен\w*|нов\w+\s+заметк\w*)(?!\w)"
        r"|创建|新建|新增|作成|追加|만든|생성|추가"
    ),
    re.IGNORECASE,
)


def made(question: str) -> bool:
    """Whether the question asks what was made then (`notes created last week` in these
    languages), read in the same first characters as its time."""
    return _MADE.search(question[:_WINDOW]) is not None


def find(question: str) -> tuple[int, int, str] | None:
    """Where the first time `question` names in one of `LANGUAGES` stands, and the English
    phrase it means; None when it names none."""
    window = _lower(question[:_WINDOW])
    found = [each for each in (reader.first(window) for reader in _readers()) if each]
    # The earliest, and of two at one place the longer: `3月5日之前` holds Japanese `3月5日`.
    return min(found, key=lambda each: (each[0], -each[1]), default=None)


def _lower(text: str) -> str:
    """`text` in lower case, each character where it stood (the phrases are written in
    lower case: matching without IGNORECASE is three to five times faster)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(char if len(char.lower()) != 1 else char.lower() for char in text)  # İ


def _english(entry: _Entry, named: dict[str, str | None], k: int) -> str | None:
    """The English phrase `entry` (the k-th) means, matched with the groups `named`; None
    when it names no time alone."""
    words = entry.words

    def group(name: str) -> str | None:
        return named.get(f"e{k}_{name}")

    rel = next((rel for rel in _RELATIONS if named.get(f"r_{rel}") or named.get(f"x_{rel}")),
               "")  # fmt: skip
    if entry.needs_rel and not (rel or group("in")):
        return None
    rel = rel if entry.takes_rel else ""
    filled = {"text": named[f"e{k}"] or ""}
    if group("n") is not None:
        filled["n"] = str(_number(group("n") or "", words))
    if group("u") is not None:
        filled["u"] = next(unit for i, unit in enumerate(_UNITS) if group(f"u{i}"))
    if group("m") is not None:
        filled["m"] = _month(named, k, words)
    if group("w") is not None:
        filled["w"] = _WEEKDAYS[next(i for i in range(7) if named.get(f"e{k}_w{i}"))]
    filled["d"] = group("d") or ""
    filled["y"] = f" {group('y')}" if group("y") else ""
    english = entry.english.format(**filled)
    if rel:
        english = f"{rel} " + english.removeprefix("in ").removeprefix("on ")
    return english


def _month(named: dict[str, str | None], k: int, words: Words) -> str:
    if words.months:
        return _MONTHS[next(i for i in range(12) if named.get(f"e{k}_m{i}"))]
    return _MONTHS[_number(named[f"e{k}_m"] or "", words) - 1]


def _number(text: str, words: Words) -> int:
    """`3`, `drei`, `三`, `十二` → the number."""
    text = " ".join(text.split())
    return int(text) if text.isdigit() else _counts(words)[_fold(text)]


@functools.cache
def _counts(words: Words) -> dict[str, int]:
    """`words`' number words, folded, and their values."""
    return {_fold(word): value for word, value in words.counts().items()}


def _fold(text: str) -> str:
    """`text` as `_loose` matches it: without accents (a number word's own decomposition:
    vault_core's `words` group is no face a service imports), umlauts spelled out folded
    too."""
    plain = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return re.sub(r"([aou])e", r"\1", plain)
