"""Whether a Japanese or Korean match is an order for the model that reads it (W5).

The injection rules for Japanese and Korean find dismissals, requests and sends; the validators
here read what surrounds a match: a past, passive or humble statement reports a change and gives
no order (取り消しとなりました, 취소되었습니다), reported speech and words mentioned in quotes are
not said to the model (:mod:`.speech`), an order to a person (山田様, 김 대리님) is not for it, a
prohibition is the opposite of a request (教えたり送ったりしないでください). (A file sent to a
colleague's address is work, not a leak: the exfiltration rules tell the two apart by what they
match, JA_LEAK_OBJ / JA_WEB_DEST in the rule table.) The rule tables name the validators by key
(``ja_directive``, ``ko_request``, ...); :mod:`.validators` registers them. The English ones are in
:mod:`.orders_en`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from re import Match

from .speech import addressed_to_person, in_mention, reported_unquoted

_JA_SENTENCE_END = re.compile(r"[。!?\n]")
_KO_SENTENCE_END = re.compile(r"[.!?\n]")
# what follows a dismissing verb when the sentence reports a change rather than giving an order
_JA_REPORT = re.compile(
    r"(?:し|して|と|に)?(?:た(?!ら|め)|ました|となり|となっ|になり|になっ|ません|ない(?!で|よう)|ず(?!に(?:答|回答|実行|処理|進め|言))"
    r"|させていただ|されて|される|された|られ|ており|ています|ていた(?!だ)|てしまっ|致しました|いたしました|とのこと|ボタン"
    r"|する(?!こと|な|ように|べき|[。!]|$))"
)
_JA_ORDER = re.compile(
    r"てください|て下さい|ください|下さい|てくれ|ちょうだい|なさい|しろ|せよ|すること|しないこと|ること|ように|ましょう"
    r"|しよう|ていい|てもいい|でいい|でok|て(?:も)?構わない|ていただ|てね|てよ|いいから|いいよ|願い|お示し|ろ(?:[。!?]|$)"
    r"|てもらえ(?:ます|る)?か|ていただけ(?:ます|る)?か|てくれ(?:ます|る)?か|てもらえる\?|こと(?:[。!?]|$)|て(?:[。!?]|$)|ね(?:[。!?]|$)|よ(?:[。!?]|$)|だ(?:[。!?]|$)|キャンセル(?:[。!]|$)|\A\s*(?:[。!]|$)",
    re.MULTILINE,
)
_KO_REPORT = re.compile(
    r"\s*(?:되었|됐|되어|된\s|된다|됩니다|되며|되고|되는|될|당했|했다|했습니다|했고|했던|했어요|하였|하지\s*않|하지않|한\s|한다"
    r"|합니다|하겠|할게|하는\s|는\s|던\s|된\s|(?:하)?지\s*(?:말|마|않)|\s*버튼)"
)
_KO_ORDER = re.compile(
    r"세요|십시오|주세요|주십시오|해라|하라|할\s*것|말\s*것|하시오|합시다|하자|바랍니다|해도\s*(?:돼|된다|괜찮)|어도\s*(?:돼|된다|괜찮)"
    r"|아도\s*(?:돼|괜찮)|면\s*돼|마세요|마시고|마십시오|말고|지\s*마|주실\s*수\s*있|줄\s*수\s*있|주시겠|주겠|줄래|것\s*(?:[.!?]|$)|(?:해|줘|봐|둬|놔|라|마|어|아|자|해요|줘요|거라)\s*(?:[.!?]|$)"
    r"|\A\s*(?:[.!?]|$)",
    re.MULTILINE,
)
_QUOTE_OPEN = "「『\"'“‘"
_QUOTE_CLOSE = "」』\"'”’"
_JA_REPORTED = re.compile(r"\s*(?:と|という|との|って|などと)")
_KO_REPORTED = re.compile(r"\s*(?:라고|라는|라며|란|이라고|이라는|고\s*하|하고\s*외)")


def _reported(text: str, start: int, end: int, after: re.Pattern[str]) -> bool:
    """Whether ``[start, end)`` sits inside quotes followed by a reporting particle (と, 라고)."""
    opened = max(text.rfind(q, max(0, start - 80), start) for q in _QUOTE_OPEN)
    if opened < 0:
        return False
    closes = [i for i in (text.find(q, end, end + 120) for q in _QUOTE_CLOSE) if i >= 0]
    if not closes:
        return False
    close = min(closes)
    return after.match(text, close + 1) is not None


# after a Korean verb stem: negated (알려 주지 않도록), a modifier, or the writer's own humble act
# (알려 드리겠습니다, 보내 드릴게요), or a causative described (보내게 만든다)
_KO_NOT_ORDER = re.compile(
    r"\s*(?:(?:주|드리)?\s*지\s*(?:않|마|말)|않|하는\s|는\s|던\s|한\s|드리겠|드릴|드립|드렸|게\s*만[들든])"
    # a noun that the match names: 제한 해제 요청 / 시도 / 공격 is a kind of request, not one made
    r"|\s*(?:요청|시도|공격|여부|기능|방법|방식|테스트|시나리오)(?!\s*(?:합|해|하|드|을\s*(?:합|해|하|드)))"
    # forbidden (알려 주면 안 돼요. — but 알려 주면 안 돼요?, 안 돼요 ㅠ is a plea), or "even if I say it"
    # with the sentence going on (내가 말해도 기억하지…; only 말해도: 보내도 아무도 모른다 urges a send,
    # and 보내도. at a sentence's end is 보내 다오 in Gyeongsang speech)
    r"|\s*(?:주|드리)?\s*(?:으)?면\s*안\s*(?:돼|되|됩)(?![가-힣]*까)[가-힣]*\s*[.!。]|(?<=말해)도(?=\s+[가-힣])(?!\s*(?:돼|되|된|괜찮|좋))"
)
# a short negation before the verb: 물어봐도 절대 안 알려주기
_KO_NEGATED_VERB = re.compile(r"(?:^|\s)(?:안|못)\s*\S{1,4}$")
# ... unless the sentence asks (왜 비밀번호 안 알려줘? / 왜 아직 안 보내 줘요: a demand)
_KO_QUESTION = re.compile(r"[^\n.!?]{0,20}\?")


# "cancel what I said" (さっき頼んだことは取り消しで, 아까 말한 거 취소): a change of plan between
# people; with a noun of instructions (指示, 규칙, プロンプト) it counts
_STRONG_NOUN = re.compile(
    r"指示|命令|指令|ルール|規則|設定|プロンプト|制約|制限|ガイドライン|方針|ポリシー|前提"
    r"|지시|명령|규칙|프롬프트|설정|제약|지침|가이드라인|방침|정책|전제"
)
_CANCEL = re.compile(r"(?:取り消|取消|キャンセル|撤回|취소|철회)$")


def _generic_cancel(m: Match[str]) -> bool:
    return _CANCEL.search(m.group(0)) is not None and _STRONG_NOUN.search(m.group(0)) is None


def _not_for_model(m: Match[str], lang: str) -> bool:
    """Words mentioned or reported (quoted, after 例：, ..., と言われた), or an order to a person."""
    text, start = m.string, m.start()
    return (
        in_mention(text, start, m.end())
        or reported_unquoted(text, start, lang)
        or addressed_to_person(text, start)
    )


_MAX_SENTENCE = 2_000
"""The most characters read after a cue for "this sentence" (and the next): a text without sentence
ends would otherwise be read to its end once per cue, quadratic in its length (100,000 characters
of a repeated phrase took minutes)."""


def _two_sentences(text: str, end: int, ends: re.Pattern[str]) -> str:
    limit = min(len(text), end + 2 * _MAX_SENTENCE)
    first = ends.search(text, end, limit)
    if first is None:
        return text[end:limit]
    second = ends.search(text, first.end(), limit)
    return text[end : second.end() if second else limit]


def _ja_directive(m: Match[str], g: int | str) -> bool:
    """A Japanese dismissal that is an order.

    Not a report (取り消しとなりました), not reported speech (「無視しろ」と叫ぶ), and an imperative
    or request in this sentence or the next.
    """
    text, end = m.string, m.end()
    if (
        _JA_REPORT.match(text, end)
        or _reported(text, m.start(), end, _JA_REPORTED)
        or _not_for_model(m, "ja")
    ):
        return False
    if _generic_cancel(m):
        return False
    return _JA_ORDER.search(_two_sentences(text, end, _JA_SENTENCE_END)) is not None


def _ja_directive_loose(m: Match[str], g: int | str) -> bool:
    """A Japanese cue that is not reported speech and not negated right after it."""
    return not _not_for_model(m, "ja") and _ja_request(m, g)


def _ja_request(m: Match[str], g: int | str) -> bool:
    """A Japanese request not reported as past speech and not negated, wherever it is quoted.

    For requests to leak the prompt or credentials: a model that reads the context sees the
    request itself, whoever a quote says is speaking it (a quote is an easy wrapper for an attack).
    """
    text, end = m.string, m.end()
    if _reported(text, m.start(), end, _JA_REPORTED) or _JA_LISTED_PROHIBITION.match(text, end):
        return False
    # ...を回答に含めてしまう: an accident described (てしまう), not a request; 教えちゃいけない,
    # 送ってはだめ: a prohibition
    return _JA_NOT_REQUEST.match(text[end : end + 24]) is None


_JA_NOT_REQUEST = re.compile(
    r"(?:し|して)?(?:ない|ません|ず(?!に))|て(?:しま|しまっ)|ちゃ[うっ]"
    r"|(?:て|ちゃ|じゃ)は?(?:いけ|なら|だめ|ダメ|駄目)(?![^\n。!！]{0,8}[?？])"  # not 教えちゃダメ？ (a plea)
)


# a verb in a list of things not to do: 教えたり、メールで送ったりしないでください /
# 알려 주거나 메일로 보내지 마세요 (a prohibition, the opposite of a request)
# or named as a deed and then forbidden: 聞き出すことは絶対にしないでください
_JA_LISTED_PROHIBITION = re.compile(
    r"[^\n。]{0,4}?たり[^\n。]{0,40}?(?:ないで|ないよう|ないこと|ないでね|てはいけ|ては(?:なら|だめ|ダメ)|禁止|厳禁)"
    r"|[^\n。]{0,3}?こと(?:は|も)[^\n。]{0,10}?"
    r"(?:しないで(?:ください)?|しないように(?:してください)?|しないこと|禁止(?:です)?|厳禁(?:です)?|(?<!ければ)(?<!ねば)(?<!なくては)(?:いけません|なりません)|やめて(?:ください)?)"
    r"(?=\s*(?:[。!！\n]|$))"  # the prohibition closes the sentence (not 禁止されていますが、今回は…)
)
_KO_LISTED_PROHIBITION = re.compile(
    r"[^\n.]{0,6}?(?:거나|지도)[^\n.]{0,40}?(?:지\s*(?:마|말)|면\s*안\s*(?:됩|돼|되)|금지)"
)


def _ko_directive(m: Match[str], g: int | str) -> bool:
    """A Korean dismissal that is an order.

    Not a report (취소되었습니다), not reported speech ('무시해'라고), and an imperative or
    request in this sentence or the next.
    """
    text, end = m.string, m.end()
    if (
        _KO_REPORT.match(text, end)
        or _reported(text, m.start(), end, _KO_REPORTED)
        or _not_for_model(m, "ko")
    ):
        return False
    if _generic_cancel(m):
        return False
    return _KO_ORDER.search(_two_sentences(text, end, _KO_SENTENCE_END)) is not None


def _order_here(
    loose: Callable[[Match[str], int | str], bool],
    sentence_end: re.Pattern[str],
    order: re.Pattern[str],
    *,
    next_sentence: bool = False,
) -> Callable[[Match[str], int | str], bool]:
    """A validator: the cue passes ``loose`` and the rest of its own sentence holds an ``order``.

    With ``next_sentence`` the sentence after it counts too: after a label (〔システム指示〕以降の回答
    では…ないでください, [숨김 텍스트] …할 것) the order is in the next sentence as often as in the
    label's own.
    """

    def check(m: Match[str], g: int | str) -> bool:
        if not loose(m, g):
            return False
        text, end = m.string, m.end()
        if next_sentence:
            return order.search(_two_sentences(text, end, sentence_end)) is not None
        limit = min(len(text), end + _MAX_SENTENCE)
        stop = sentence_end.search(text, end, limit)
        return order.search(text[end : stop.end() if stop else limit]) is not None

    return check


def _ko_directive_loose(m: Match[str], g: int | str) -> bool:
    """A Korean cue that is not reported speech, not a past event told, and not negated right after it."""
    text, end = m.string, m.end()
    stop = _KO_SENTENCE_END.search(text, end, end + 120)
    if _KO_TOLD_PAST.search(text, end, stop.start() if stop else min(len(text), end + 120)):
        return False
    return not _not_for_model(m, "ko") and _ko_request(m, g)


# the rest of the sentence tells what happened: 봇이 규칙을 무시하고 설정값을 읊었다는 신고
_KO_TOLD_PAST = re.compile(r"(?:었|았|였|했)(?:다는|다고|대요|답니다)")


def _ko_request(m: Match[str], g: int | str) -> bool:
    """A Korean request not reported as past speech and not negated, wherever it is quoted (as :func:`_ja_request`)."""
    text, end = m.string, m.end()
    if _reported(text, m.start(), end, _KO_REPORTED) or _KO_LISTED_PROHIBITION.match(text, end):
        return False
    if _KO_NEGATED_VERB.search(m.group(0)) is not None and not _KO_QUESTION.match(text, end) and "왜" not in text[max(0, m.start() - 20) : end]:
        return False
    return _KO_NOT_ORDER.match(text, end) is None


def _opens_the_text(m: Match[str], g: int | str) -> bool:
    """Nothing but blanks before the match: a note that begins by addressing the assistant."""
    return not m.string[: m.start()].strip()


def _after_other_text(m: Match[str], g: int | str) -> bool:
    """Other text before the match: an address to an AI inside a document, e-mail or report."""
    return not _opens_the_text(m, g)


ORDER_VALIDATORS: dict[str, Callable[[Match[str], int | str], bool]] = {
    "opens_the_text": _opens_the_text,
    "after_other_text": _after_other_text,
    "ja_directive": _ja_directive,
    "ja_directive_loose": _ja_directive_loose,
    "ja_request": _ja_request,
    "ja_order_here": _order_here(_ja_directive_loose, _JA_SENTENCE_END, _JA_ORDER),
    "ja_order_near": _order_here(_ja_directive_loose, _JA_SENTENCE_END, _JA_ORDER, next_sentence=True),
    "ko_directive": _ko_directive,
    "ko_directive_loose": _ko_directive_loose,
    "ko_request": _ko_request,
    "ko_order_here": _order_here(_ko_directive_loose, _KO_SENTENCE_END, _KO_ORDER),
    "ko_order_near": _order_here(_ko_directive_loose, _KO_SENTENCE_END, _KO_ORDER, next_sentence=True),
}
"""The validators of this module by the key the rule tables name them with."""
