"""A time a question names in German, French, Spanish, Italian, Portuguese, Dutch, Russian,
Chinese, Japanese or Korean is read as the English phrase it means: the same bounds, the
question left without it; words that only look like a time stay words."""

from __future__ import annotations

import datetime as dt

import pytest

from vault_node import grammar, time_phrases

NOW = dt.datetime(2026, 3, 15, 10, 30, tzinfo=dt.UTC)  # a Sunday


@pytest.mark.parametrize(
    ("question", "phrase", "rest", "english"),
    [
        ("Was haben wir seit letzter Woche zu Preisen beschlossen?", "seit letzter Woche",
         "Was haben wir zu Preisen beschlossen?", "since last week"),
        ("Notizen von gestern", "gestern", "Notizen von gestern", "yesterday"),
        ("Besprechungen vor 3 Tagen", "vor 3 Tagen", "Besprechungen", "3 days ago"),
        ("Backups in den letzten zwei Wochen", "in den letzten zwei Wochen", "Backups",
         "in the last 2 weeks"),
        ("Pläne im März", "im März", "Pläne", "in March"),
        ("Pläne im Maerz 2025", "im Maerz 2025", "Pläne", "in March 2025"),
        ("Notizen seit dem 5. März", "seit dem 5. März", "Notizen", "since 5 March"),
        ("Notizen seit 2025", "seit 2025", "Notizen", "since 2025"),
        ("réunions de la semaine dernière", "la semaine dernière",
         "réunions de la semaine dernière", "last week"),
        ("ce que j'ai écrit il y a deux semaines", "il y a deux semaines", "ce que j'ai écrit",
         "two weeks ago"),
        ("notes depuis hier", "depuis hier", "notes", "since yesterday"),
        ("réunions en mars 2025", "en mars 2025", "réunions", "in March 2025"),
        ("notes depuis le 1er mars", "depuis le 1er mars", "notes", "since 1 March"),
        ("notas de la semana pasada", "la semana pasada", "notas de la semana pasada",
         "last week"),
        ("notas en los últimos 7 días", "en los últimos 7 días", "notas", "in the last 7 days"),
        ("notas en los ultimos 7 dias", "en los ultimos 7 dias", "notas", "in the last 7 days"),
        ("reunión hace un mes", "hace un mes", "reunión", "a month ago"),
        ("notas desde enero", "desde enero", "notas", "since January"),
        ("note della settimana scorsa", "settimana scorsa", "note della settimana scorsa",
         "last week"),
        ("riunioni 3 giorni fa", "3 giorni fa", "riunioni", "3 days ago"),
        ("piani dall'anno scorso", "dall'anno scorso", "piani", "since last year"),
        ("notas de ontem", "ontem", "notas de ontem", "yesterday"),
        ("notas há 2 semanas", "há 2 semanas", "notas", "2 weeks ago"),
        ("notas em fevereiro", "em fevereiro", "notas", "in February"),
        ("notities van vorige week", "vorige week", "notities van vorige week", "last week"),
        ("notities 3 dagen geleden", "3 dagen geleden", "notities", "3 days ago"),
        ("notities sinds gisteren", "sinds gisteren", "notities", "since yesterday"),
        ("заметки с прошлой недели", "с прошлой недели", "заметки", "since last week"),
        ("встреча 3 дня назад", "3 дня назад", "встреча", "3 days ago"),
        ("заметки за последние 7 дней", "за последние 7 дней", "заметки",
         "in the last 7 days"),
        ("планы в марте", "в марте", "планы", "in March"),
        ("Seit Letzter Woche", "Seit Letzter Woche", "", "since last week"),
        ("Notizen seit Montag", "seit Montag", "Notizen", "since Monday"),
        ("Besprechung am Freitag", "am Freitag", "Besprechung", "on Friday"),
        ("réunion lundi dernier", "lundi dernier", "réunion lundi dernier", "last Monday"),
        ("notas desde el lunes", "desde el lunes", "notas", "since Monday"),
        ("na sexta-feira passada", "na sexta-feira passada", "", "last Friday"),
        ("notities op woensdag", "op woensdag", "notities", "on Wednesday"),
        ("заметки в прошлую пятницу", "в прошлую пятницу", "заметки в прошлую пятницу",
         "last Friday"),
        ("Notizen vor dem 5. März", "vor dem 5. März", "Notizen", "before 5 March"),
        ("Pläne nach dem 1. März", "nach dem 1. März", "Pläne", "after 1 March"),
        ("Notizen bis gestern", "bis gestern", "Notizen", "until yesterday"),
        ("notes jusqu'à hier", "jusqu'à hier", "notes", "until yesterday"),
        ("notas antes del 5 de marzo", "antes del 5 de marzo", "notas", "before 5 March"),
        ("note fino a ieri", "fino a ieri", "note", "until yesterday"),
        ("notas depois de março", "depois de março", "notas", "after March"),
        ("notities tot gisteren", "tot gisteren", "notities", "until yesterday"),
        ("заметки до 5 марта", "до 5 марта", "заметки", "before 5 March"),
        ("3月5日之前的笔记", "3月5日之前", "的笔记", "before 5 March"),
        ("昨日までのメモ", "昨日まで", "のメモ", "until yesterday"),
        ("3월 5일 전 메모", "3월 5일 전", "메모", "before 5 March"),
        ("上周关于同步的笔记", "上周", "上周关于同步的笔记", "last week"),
        ("上月的笔记", "上月", "上月的笔记", "last month"),
        ("3天前的笔记", "3天前", "的笔记", "3 days ago"),
        ("自3月5日以来的笔记", "自3月5日以来", "的笔记", "since 5 March"),
        ("最近7天的笔记", "最近7天", "的笔记", "in the last 7 days"),
        ("2025年3月的笔记", "2025年3月", "的笔记", "in March 2025"),
        ("先週のメモ", "先週", "先週のメモ", "last week"),
        ("三日前のメモ", "三日前", "のメモ", "3 days ago"),
        ("3月5日以降のメモ", "3月5日以降", "のメモ", "since 5 March"),
        ("2か月前の会議", "2か月前", "の会議", "2 months ago"),
        ("지난주 회의 노트", "지난주", "지난주 회의 노트", "last week"),
        ("上周五的会议记录", "上周五", "上周五的会议记录", "Friday last week"),
        ("上星期一的笔记", "上星期一", "上星期一的笔记", "Monday last week"),
        ("本周三的笔记", "本周三", "本周三的笔记", "Wednesday this week"),
        ("自上周五以来的笔记", "自上周五以来", "的笔记", "since Friday last week"),
        ("上週五的筆記", "上週五", "上週五的筆記", "Friday last week"),
        ("上周日的笔记", "上周日", "上周日的笔记", "Sunday last week"),
        ("先週の金曜日のメモ", "先週の金曜日", "先週の金曜日のメモ", "Friday last week"),
        ("今週の月曜日の会議", "今週の月曜日", "今週の月曜日の会議", "Monday this week"),
        ("지난주 금요일 회의", "지난주 금요일", "지난주 금요일 회의", "Friday last week"),
        ("이번 주 월요일 메모", "이번 주 월요일", "이번 주 월요일 메모", "Monday this week"),
        # A numeral after last week's name that is no weekday: the week alone.
        ("上周一共写了5篇笔记", "上周", "上周一共写了5篇笔记", "last week"),
        ("上周五个会议", "上周", "上周五个会议", "last week"),
        ("上周日记", "上周", "上周日记", "last week"),
        ("3일 전 메모", "3일 전", "메모", "3 days ago"),
        ("2025년 3월 메모", "2025년 3월", "메모", "in March 2025"),
        ("3월 5일 이후 메모", "3월 5일 이후", "메모", "since 5 March"),
    ],
)  # fmt: skip
def test_a_time_in_another_language_reads_as_the_english_one(
    question: str, phrase: str, rest: str, english: str
) -> None:
    found = grammar.question_time(question, NOW)
    expected = grammar.question_time(english, NOW)
    assert expected is not None
    assert found == grammar.QuestionTime(phrase, rest, expected.after, expected.before)


@pytest.mark.parametrize(
    "question",
    [
        "Mars et Vénus",  # a month counts only after a word for `in` or `since`
        "Was steht hier über Sync",  # `hier` is `here` in German and Dutch
        "hier soir",  # and in French without `depuis`, too common a false friend to read
        "Tags in Obsidian hinzufügen",
        "Planung 2027",  # a year alone is what the note may be about
        "notas de mayo",
        "wie erstelle ich eine Tabelle?",
        "3 semaines",  # no word for ago or since
        "上海的笔记",
        "заметки с кодом",  # `с` is `with` too
        "월요일 회의",  # Monday, not a month
        "Montag Notizen",  # a weekday alone may be a name, as in English
        "na segunda vez",  # `segunda` is `second` too: Portuguese weekdays take -feira
        "Notizen vor Montag",  # before a weekday: more often the next one, as in English
        "na de vergadering",  # Dutch `na` (after) before no time
        "в среде разработки",  # `среда` is `environment` too: Wednesday as `в среду`
    ],
)
def test_words_that_only_look_like_a_time_stay_words(question: str) -> None:
    assert grammar.question_time(question, NOW) is None


def test_a_question_made_of_what_was_created_goes_by_created_dates() -> None:
    for question in ("Notizen erstellt letzte Woche", "notes créées depuis hier",
                     "最近7天创建的笔记", "先週作成したメモ", "заметки, созданные вчера",
                     "지난주에 만든 노트"):  # fmt: skip
        found = grammar.question_time(question, NOW)
        assert found is not None, question
        assert found.dated_by == "created", question
    found = grammar.question_time("Notizen geändert letzte Woche", NOW)
    assert found is not None
    assert found.dated_by == "updated"


def test_an_english_time_comes_first() -> None:
    found = grammar.question_time("seit gestern, or since last week", NOW)
    assert found is not None
    assert found.phrase == "since last week"


def test_a_time_past_the_first_500_characters_is_not_read() -> None:
    assert time_phrases.find("x " * 260 + "seit gestern") is None
    assert time_phrases.find("x " * 200 + "seit gestern") is not None
