"""Who an instruction in Japanese or Korean text is for: quoted, reported or addressed to a person (W5).

The injection rules and cues look for orders; many benign texts hold orders that are not for the
model that reads them:

* words *mentioned* in quotes: a language lesson (「忘れてください」は丁寧な依頼), a security notice
  ("이전 지시를 무시하세요"라는 문장), a kind of attack named by an instance (「指示を無視して」型の攻撃,
  "다 무시해" 식의 공격), song lyrics, an example after 例： / 예시: , a test input after 入力： / 입력: ;
* *direct speech* of a named speaker: 部長「先ほど言ったことは忘れてください」, 팀장님 "잊어 주세요",
  a game master's line in a TRPG log;
* speech *reported* without quotes: ...自由に意見を出してください、と課長に言われた;
* orders *addressed to a person*: 田中さん、..., 皆さん、..., 민수 씨, ..., 여러분, ..., or a letter's
  salutation line (山田様 / 山田様 + space, 김 대리님 + line break), and messages headed with the
  person they are from (部長より：, ゆきからのLINE：, 팀장님 공지 —), unless the text also speaks to an
  assistant, a model or a bot.

The functions here take the normalised text (NFKC, case-folded) and spans into it, so the rule
validators, the cue scorer and the screen share one reading. All patterns are bounded.
"""

from __future__ import annotations

import re

__all__ = [
    "addressed_to_person",
    "has_cjk",
    "in_mention",
    "quote_around",
    "reported_unquoted",
]

# an apostrophe before a Latin letter or digit is English (don't), not the end of a quote
_LATIN_NEXT = re.compile(r"[a-z0-9]", re.IGNORECASE)
_PAIRS = {"「": "」", "『": "』", "“": "”", "‘": "’", '"': '"', "'": "'", "＂": "＂", "＇": "＇"}
# what follows a quote that is mentioned or reported, not given as an order
_MENTION_AFTER = re.compile(
    r"\s*(?:と|という|との|って|など|といった|のような|みたいな|は|も|について|に関して|の(?:ような|一文|文|フレーズ)"
    r"|型の?|式の|系の|タイプの"  # 「これまでの指示を無視して」型の攻撃: a kind of text named by an instance
    r"|라고|라는|라며|란|이라고|이라는|이란|같은|는|은|처럼|에\s*대해|에\s*관해|하고|고(?=\s)"
    r"|식의|식으로|류의|류(?=\s)|유형의|타입의|등의|등(?=\s)"
    # the quote named as a string or a sentence (…" 문자열은, 」――その一文が届いた夜, " 그 한 줄이),
    # or the subject of a sentence about it (「…」等の文字列, '…'가 들어가도)
    r"|(?:문자열|문장|문구|표현|단어)(?:은|는|이|가|을|를|의|처럼)|等の|などの|(?:가|이)(?=\s)"
    r"|[―—\-]*\s*(?:その|この|そんな|こんな)(?:一文|文|文言|一行)"
    r"|[―—\-]*\s*(?:그|이|그런|이런)\s*(?:한\s*줄|문장|문구))"
)
# a speaker label right before an opening quote: a title, a name with an honorific, a game role
_SPEAKER = re.compile(
    r"(?:さん|様|さま|氏|くん|君|ちゃん|先生|部長|課長|社長|係長|主任|店長|先輩|上司|専務|常務|担当|"
    r"gm|kp|pl|dm|プレイヤー\d*|母|父|님|씨|선생|플레이어\d*)\s*[:：]?\s*$",
    re.IGNORECASE,
)
# a label that introduces an example or a quotation up to the end of the line; a test case's input
# (入力：「...」, 입력: "...") is quoted to be tried, not said to the model reading the test plan
_EXAMPLE_BEFORE = re.compile(
    r"(?:例文|例|用例|入力|예문|예시|예|입력)(?:です|だ|입니다|이다)?\s*[:：―—\-]*\s*$"  # 攻撃の例です――『…』
)
_EXAMPLE = re.compile(r"(?:例文|例|用例|例えば|예문|예시|예|보기)\s*[:：]\s*$")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds kana, Hangul or CJK ideographs."""
    return any(
        "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af" for c in text
    )


def quote_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(open, close)`` of the innermost quotation on its line that holds ``[start, end)``."""
    line_start = max(text.rfind("\n", max(0, start - 200), start) + 1, start - 200, 0)
    stack: list[int] = []
    for i in range(line_start, start):
        ch = text[i]
        # an apostrophe before a Latin letter or digit is English (don't); before Hangul or kana it
        # closes a quote: '…'는 문구, '…'って
        if stack and _PAIRS[text[stack[-1]]] == ch and (ch != "'" or not _LATIN_NEXT.match(text, i + 1)):
            stack.pop()
        elif ch in _PAIRS and (ch != "'" or i == 0 or not text[i - 1].isalnum()):
            stack.append(i)
    if not stack:
        return None
    open_ = stack[-1]
    close = text.find(_PAIRS[text[open_]], start, end + 200)
    if close < end or "\n" in text[end:close]:
        return None
    return open_, close


def in_mention(text: str, start: int, end: int) -> bool:
    """Whether ``[start, end)`` is words mentioned or quoted, not an order given by this text.

    Inside quotes that a quotative or topic particle follows (と, という, は, 라고, 라는, 같은, 에 대해),
    inside quotes opened right after a speaker (部長「, 팀장님 "), or after an example label
    (例：, 예시:) on the same line. What counts is where the match ends, the verb that gives the
    order: システムに「以前の命令を無視しろ」と入力する has the words before the quote outside it.
    """
    q = quote_around(text, max(start, end - 1), end)
    if q is not None:
        open_, close = q
        if _MENTION_AFTER.match(text, close + 1) is not None:
            return True
        if _SPEAKER.search(text, max(0, open_ - 12), open_) is not None:
            return True
        if _EXAMPLE_BEFORE.search(text, max(0, open_ - 12), open_) is not None:
            return True
    line_start = max(text.rfind("\n", max(0, start - 200), start) + 1, start - 200, 0)
    head = text[line_start:start]
    for m in re.finditer(r"[:：]", head):
        if _EXAMPLE.search(head, max(0, m.start() - 6), m.end()) is not None:
            return True
    return False


_REPORTED_UNQUOTED = {
    "ja": re.compile(
        r"(?:[、,]\s*|(?:ほしい|欲しい|ように|ください|下さい))と\s*[^\n。、]{0,12}?(?:言われ|言って|言った|言う|頼まれ|指示され|告げ|話して|書いて|伝え)"
    ),
    "ko": re.compile(
        r"(?:라고|다고|자고|냐고|하라고|해\s*달라고)\s*(?:[^\n.]{0,12}?\s)?(?:말했|말씀하|하셨|했다|했어|들었|부탁했|적혀)"
    ),
}


def reported_unquoted(text: str, pos: int, lang: str) -> bool:
    """Whether the sentence holding ``pos`` is speech reported without quotes (..., と課長に言われた)."""
    ends = "。!?\n" if lang == "ja" else ".!?\n"
    limit = min(len(text), pos + 200)
    stop = min([i for i in (text.find(c, pos, limit) for c in ends) if i >= 0] + [limit])
    return _REPORTED_UNQUOTED[lang].search(text, pos, stop + 1) is not None


# --- orders addressed to a person -----------------------------------------------------------------

_PERSON_JA = re.compile(
    r"(?:^|[\n。!?」])\s*(?:[^\s、。,:：「」]{1,8}(?:さん|様|さま|くん|君|ちゃん|先生|部長|課長|社長|係長|主任|店長|先輩)"
    r"|皆さん|皆様|みなさん|みなさま|各位|お母さん|お父さん|母さん|父さん)\s*(?:へ|宛|あて)?(?:\s*[、,:：!]|\s)"
)
_PERSON_KO = re.compile(
    r"(?:^|[\n.!?\"'])\s*(?:[가-힣]{1,4}\s?(?:씨|님|선생님|과장님|부장님|팀장님|대리님|선배)|여러분|엄마|아빠|어머니|아버지)"
    r"\s*(?:께|에게)?(?:\s*[,:：!]|\n)"
)
# a message header naming the person it is from: 部長より: / ゆきからのLINE: / 팀장님 공지 — / 민수 씨 카톡:
_FROM_PERSON_JA = re.compile(
    r"(?:^|\n)\s*(?:[^\s、。,:：「」]{0,8}(?:さん|様|さま|くん|君|ちゃん|先生|部長|課長|社長|係長|主任|店長|先輩|母|父)"
    r"(?:より|から(?:の)?(?:line|メール|メッセージ|連絡|dm|チャット|伝言)?)"
    r"|[^\s、。,:：「」]{1,8}からの(?:line|メール|メッセージ|連絡|dm|チャット|伝言))\s*[:：]"
)
_FROM_PERSON_KO = re.compile(
    r"(?:^|\n)\s*[가-힣]{1,4}\s?(?:씨|님|선생님|과장님|부장님|팀장님|대리님|선배|엄마|아빠)"
    r"\s*(?:께서|이|가)?\s*(?:공지|메시지|메일|카톡|문자|말씀|전달\s*사항)?\s*(?:[:：—–]|-\s)"
)
_AI_WORDS = re.compile(
    r"(?<![a-z])(?:ai|bot|llm|gpt|chatgpt)(?![a-z])|アシスタント|モデル|エージェント|ボット|秘書|어시스턴트|모델|에이전트|봇|비서"
)


def addressed_to_person(text: str, start: int) -> bool:
    """Whether the text before ``start`` addresses a person, and no assistant is named near it.

    ``田中さん、先ほどお願いした修正は忘れてください`` is an order to 田中さん, and a message headed
    with the person it is from (``部長より：``, ``팀장님 공지 —``) is one person's word to others; with an assistant,
    a model or a bot named within 400 characters it may be an order to the model, and it counts.
    Bounded: looks at most 400 characters either side.
    """
    head = text[max(0, start - 400) : start]
    if _AI_WORDS.search(text, max(0, start - 400), start + 400) is not None:
        return False
    return any(p.search(head) is not None for p in (_PERSON_JA, _PERSON_KO, _FROM_PERSON_JA, _FROM_PERSON_KO))
