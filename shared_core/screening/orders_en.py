"""Whether an English match is an order for the model that reads it (W5).

The English injection rules find standing orders ("always reply ...", "every time someone asks ...
say ...") and texts that address the AI reading them ("Assistant, please update the payee ...",
"Note for the travel assistant: ..."). The validators here read what surrounds a match:

* ``en_not_a_habit``: a habit told of someone ("I always add a pinch of salt", "my mom would always
  tell me", "every time someone asks me about my trip, I tell them ...") and the idiom "never say
  never" are what people write in their notes and conversations, not orders (round 25, LoCoMo dev);
* ``en_planted_address``: an address to the assistant planted in other text, told from the owner's
  own note to it (rounds 25-27, blind English sets).

Written here because no library tells a habit from an order or a planted address from a request;
the rule tables name the validators by key and :mod:`.validators` registers them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from re import Match

# Who does it, said before the always / never or the verb of a standing-order shape: a person told
# of (I, we, she'd, people, my older brother, Grandpa would), with the helping words a habit takes
# (would, used to, try to, usually), or a profile note's verb of liking with its subject left out
# (likes to, prefers to). Not "you" and not the assistant: "you should always reply in
# French" and "my assistant must never mention refunds" stay orders to the reader.
# an assistant, by any name; "ai" not after an apostrophe: French "j'ai", "n'ai", "l'ai" (I have) name no AI
_AI_NAMES = r"(?<!['’])ai|assistants?|bots?|chatbots?|copilot|gpt|chatgpt|claude|gemini|siri|alexa"
EN_AI_MENTION = _AI_NAMES + r"|a\.i\.|gpts|llms?|automated|whoever|whichever"
"""Words that name an AI (or whoever / whichever reads a text) in English: the alternation shared by the
rules' ``names_ai`` feature (:mod:`.validators`, with a bare "agent" and "whatever") and the English
semantic screen's gate (:data:`~shared_core.screening.semantic_en.EN_GATE`, with qualified agents only)."""
# a link or an address, in every check of this module that asks whether a text sends somewhere
_SCHEME = r"\b[a-z][a-z0-9+.\-]{1,15}://|www\."
_LINK = (
    r"@|" + _SCHEME + r"|\b[a-z0-9-]{2,}\.(?:[a-z0-9-]+\.)*(?:com|net|org|io|co|app|dev|info|biz|me|shop|support|xyz|example"
    r"|[a-z]{2})\b"
)
_EN_AI = r"(?:" + _AI_NAMES + r"|agents?|models?|llms?|you|your)\b"
_EN_HABIT_SUBJECT = re.compile(
    r"(?<![\w'])(?:i|we|he|she|they|i'd|i'll|i've|we'd|we'll|we've|he'd|she'd|they'd|they'll|they've|people|everyone"
    r"|everybody|nobody|no\s+one|someone|(?:my|our|his|her|their)(?:\s+(?!" + _EN_AI + r")[\w-]+){1,2}"
    r"|(?!" + _EN_AI + r"|the\b|to\b|and\b|please\b)[\w-]+(?=\s+(?:would|used\s+to)\b)"
    r"|(?:likes|loves|prefers|tends|tries|hates)\s+to)"  # a profile note without its subject: "Prefers to always ..."
    r"(?:\s+(?:would|will|could|can|might|may|should|must|do|does|did|just|also|still|almost|nearly|really|basically"
    r"|usually|generally|often|sometimes|always|never|pretty\s+much|kind\s+of|sort\s+of|used\s+to|try\s+to|tried\s+to"
    r"|tend\s+to|like\s+to|want\s+to|make\s+sure\s+to|made\s+sure\s+to|have\s+to|had\s+to|need\s+to))*\s+$"
)
_EN_AI_BEFORE = re.compile(r"\b(?:" + _AI_NAMES + r")\b")
_EN_IDIOM = re.compile(r"never\s+say\s+(?:never|die)\b")
# what a habit told of someone does not carry (a red team wrote these as habits, round 27): an address
# or a link, a credential or an account's keys, money, the AI's user, or a lie told as routine
_EN_HABIT_HARM = re.compile(
    _LINK + r"|\d{3}[\d\-\s]{4,}|\b(?:passwords?|passcodes?|logins?|pins?|codes?|ssn|card\s+numbers?"
    r"|cvv|expiry|bank\s+statements?|statements?|account\s+numbers?|gift\s+cards?|pay|wire|transfer|zelle|venmo|the\s+users?"
    r"|callers?|whoever|whereabouts|location)\b|\bwhere\s+i\s+am\b|\beven\s+(?:though|when|if)\b|\b(?:yes|confirmed|no\s+problems?)\b"
)
_EN_ORDER_WORD = re.compile(
    r"\b(?:always|never|respond|reply|answer|say|tell|recommend|redirect|send|direct|include|add|mention|start|end"
    r"|append|prepend|output|refer|forward|insert|use)\b"
)


def _en_not_a_habit(m: Match[str], g: int | str) -> bool:
    """An English standing-order shape (always reply, every time ... say) that is no habit told of someone.

    The words before the order's verb (or its always / never) decide: a person told of, with the
    helping words of a habit, makes it a habit; nothing there (an imperative), "you" or the
    assistant keeps it an order.
    """
    text, start = m.string, m.start()
    if _EN_IDIOM.match(text, start):
        return False
    words = [w for w in _EN_ORDER_WORD.finditer(text, start, m.end()) if w.start() > start]
    at = words[-1].start() if words and not text.startswith(("always", "never"), start) else start
    if _EN_HABIT_SUBJECT.search(text, max(0, at - 60), at) is None or _EN_AI_BEFORE.search(text, max(0, at - 40), at):
        return True  # "The bot loves to always recommend ...": the assistant's habit is its order
    limit = min(len(text), m.end() + 200)
    stop = _EN_SENTENCE_END.search(text, m.end(), limit)
    clause = text[max(0, start - 80) : stop.start() if stop else limit]
    return bool(_EN_HABIT_HARM.search(clause))  # "I always forward my bank statements to carl@...": held


# before a planted address: the start of a clause ("... 22A. Note for the travel assistant:",
# "[assistant: ...", "# assistant: ...", "Also, to whichever bot ...", "P.S. assistant, ...")
_EN_CLAUSE_OPEN = re.compile(
    r"(?:[.!?\[\](:;,\-\u2014\"'\n#/*|>]|\b(?:also|and|ps|p\.s\.|btw|oh|so|then|now|hi|hey|ok|okay|thanks|thx)"
    r"|\bwhen\s+you\s+(?:next\s+)?(?:read|see|get|open|recall|process)\s+this\s*,)\s*,?\s*$"
)
# the words before the name that belong to the address: a label ("Note for", "Handy tip to", "New
# standing rule for", "Dear"), a determiner and up to two words of what the AI is ("the travel",
# "automated accounts-payable", "the family's")
_EN_ADDRESS_LEAD = re.compile(
    r"(?:(?:(?:a|new|one)\s+)?(?:(?:quick|handy|small|friendly|important|standing|special|internal|kind)\s+)?(?:[\w-]+\s+)?"
    r"(?:note|tip|message|reminder|instructions?|heads[- ]up|request|task|action\s+item|memo|notice|rule|policy|directive|ps"
    r"|p\.s\.|update|summary|word|favou?r)\s+(?:for|to)\s+|(?:to|for|dear|attention|yo|hey|hi|ok|okay)\s+)?"
    r"(?:(?:the|your|all|our|any|my|this)\s+)?"
    r"(?:(?:automated|summari[sz]ing|travel|virtual|personal|e-?mail|note[- ]taking|accounts[- ]payable|support|scheduling"
    r"|calendar|shopping|booking|research|home|smart|ai|language|memory|family|household|review|code|coding|robot|assistant"
    r"|digital|ai-powered|inbox|payment"
    r"|[\w-]+'s)\s+){0,2}$"
)
# a name that is as often a person or a product, an address only with a word that makes it a machine
_EN_MACHINE_ONLY = re.compile(r"(?:agents?|models?|tools?|helpers?|concierge|readers?|systems?|programs?)\b")
_EN_MACHINE_QUALIFIER = re.compile(
    r"\b(?:automated|ai|summari[sz]ing|language|accounts[- ]payable|robot|digital|virtual|computer|ai-powered(?:\s+[\w-]+)?)\s+$"
)
_EN_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")  # not the dots of an address or a number
_EN_LIST_GOES_ON = re.compile(r"[^()\n.!?]{0,30}\)")
# what works against the user even in their own words, addressed to the assistant (a red team wrote
# these as "Assistant, ..." notes, round 27): money moved, identity papers or numbers handed over,
# access or a delegate granted, doors unlocked, mail redirected, a policy let lapse, the user's empty house
_EN_ACCOUNT_HARM = re.compile(
    r"\$\s?\d|\b(?:wire|zelle|venmo|paypal|escrow|deposit|savings|iban|routing|ssn|social\s+security|date\s+of\s+birth"
    r"|passport|maiden|edit\s+(?:rights|access)|full\s+access|admin(?:istrator)?\s+access|delegate|unlock|disarm|auto-?forward"
    r"|(?:forward|upload|send|share|post|export)\s+(?:my|all|every)|let\s+(?:the\s+)?(?:coverage|policy|insurance)\s+lapse|home\s+alone|nights?\s+i'?m\s+(?:home|away)"
    r"|false\s+alarm|nothing\s+to\s+worry)\b|\b(?:move|send|transfer|pay)\s+(?:the\s+)?\$"
)
_NON_BLANK = re.compile(r"\S")  # the first one only: no copy of the text per match


def _in_brackets(text: str, at: int) -> bool:
    """Whether ``at`` follows an opening bracket not yet closed (within 60 characters)."""
    lo = max(0, at - 60)
    return text.rfind("(", lo, at) > text.rfind(")", lo, at)


# what an owner's request to the assistant starts with: a polite form or a verb of the errands people
# give it ("Assistant, remind me ...", "Assistant, when you prepare my agenda, pull in ..."); "Bots, am I
# right?" and "Dear support AI, thanks for ..." ask nothing of it
_EN_REQUEST_START = re.compile(
    r"\s*(?:[*_\"'\u201c\[(]\s*)?(?:please|pls|plz|kindly|can\s+you|could\s+you|would\s+you|will\s+you|i'?d\s+(?:love|like)"
    r"|i\s+(?:want|need)\s+you|make\s+sure|don'?t|do\s+not|never|always|from\s+now\s+on|going\s+forward|when(?:ever)?\s+you"
    r"|if\s+|next\s+time|every\s+|each\s+|remind|add|book|put|set|schedule|draft|write|send|forward|pull|keep|save|note"
    r"|remember|tell|find|get|check|call|text|e-?mail|move|cancel|order|buy|pay|update|change|turn|delete|remove|share"
    r"|summari[sz]e|list|show|give|use|start|stop|make|prepare|create|track|log|read|reply|answer|respond|translate|look"
    r"|block|unblock|mark|flag|archive|file|sort|clear|wipe|forget|ignore|approve|accept|reject|decline|confirm|unlock|lock"
    r"|transfer|wire|open|close|enable|disable|grant|invite|download|upload|export|print|fill|sign|submit|post|reserve)\b"
)
_EN_REMIND_ME = re.compile(r"\s*(?:please\s+)?remind\s+me\b")
_EN_REPORTED = re.compile(r"\s*(?!(?:need|feed|embed|proceed|exceed|succeed|shred|seed)\b)[a-z]+ed\b")
_EN_FIRST_PERSON = re.compile(r"\b(?:me|my|mine|i|i'm|i'll|i'd|i've|myself)\b")
# what an owner's own note to the assistant does not do: send to an outside address, open a file
# to anyone, hide something from someone
_EN_WEB_SINK = re.compile(_SCHEME + r"|\blocation\b|\b[a-z0-9-]+\.(?:[a-z0-9-]+\.)*[a-z]{2,}/")  # not an owner's own, even opening the note
_EN_SINK = re.compile(_LINK + r"|\biban\b|anyone[- ]with[- ]the[- ]link|\bpublic(?:ly)?\b")
EN_LINK = re.compile(_LINK)
"""A link or an address in English prose (the owner-request waiver's reminder check uses it too; the
Japanese / Korean link pattern reads "everyone. assistant" as a domain)."""
# nor touch someone else's things or the keys to an account ("add me as an authorized user on her
# account", "make me an admin", "change the payee", "the user's approval is no longer needed")
_EN_NOT_OWNERS = re.compile(
    r"\b(?:her|his|their)\s+(?:[\w-]+\s+)?(?:account|password|login|files?|data|calendar|contacts?|location|records?|messages?"
    r"|e-?mails?|inbox|phone|bank|card|details|file|folder|drive|photos?|album)s?\b|\b(?:the\s+user'?s?|this\s+user'?s?"
    r"|the\s+owner'?s?|users)\b|\b(?:authori[sz]ed\s+users?|admins?|administrators?"
    r"|owners?|collaborators?|recovery|passwords?|passcodes?|pins?|2fa|two[- ]factor|bank|payees?|iban|account\s+numbers?"
    r"|routing|ssh|api\s+keys?|tokens?|credentials?|secrets?|cvv|card\s+numbers?|amex|visa|mastercard)\b"
)
_EN_HIDE = re.compile(
    r"\b(?:don['’]?t|do\s+not|never|without|no\s+need\s+to)\s+(?:\w+\s+)?(?:tell|flag|mention|inform|notify|ask|show|check"
    r"|confirm|waiting|review)(?!\s+me\b)|\b(?:silently|quietly|secretly)\b|\bnothing\s+(?:has\s+)?changed\b|\bno\s+questions\s+asked\b|\bleave\s+(?:out|off)\b|\bomit\b"
)


def _address(m: Match[str]) -> bool | None:
    """Whether an address to the assistant is planted (``True``), the owner's own request (``False``) or none.

    ``None``: no address at all (a list, a label, a person or a product, mid-clause).

    Not in the middle of a clause ("the chatbot vendor, HelpLoop") or in a list in brackets
    ("(Copilot, Cursor, ...)"); not "Support agents:" or "Models:" (people and products, unless
    automated or AI ones). Planted: after other text with an order that is not about the writer's own
    things (no "me" / "my", or someone else's account or keys), and wherever it stands when the order
    works against the user: an outside address or link, hiding, skipping a question, money moved,
    identity numbers handed over, access granted, the user's whereabouts.
    """
    text = m.string
    lead = _EN_ADDRESS_LEAD.search(text, max(0, m.start() - 90), m.start())
    start = lead.start() if lead else m.start()
    if _EN_MACHINE_ONLY.match(m.group(0)) and not (lead and _EN_MACHINE_QUALIFIER.search(lead.group(0))):
        return None  # "Support agents: ...", "Models: X100, X200": people and products
    limit = min(len(text), m.end() + 240)
    stop = _EN_SENTENCE_END.search(text, m.end(), limit)
    order = text[m.end() : stop.start() if stop else limit]
    harm = bool(
        _EN_SINK.search(order) or _EN_HIDE.search(order) or _EN_ACCOUNT_HARM.search(text, m.end(), m.end() + 400)
    )
    if not harm and (_EN_REPORTED.match(order) or (_EN_LIST_GOES_ON.match(order) and _in_brackets(text, start))):
        return None  # a name in a list: "(Copilot, Cursor, ...)"; a label: "// assistant: generated with ..."
    if _NON_BLANK.search(text, 0, start) is None:  # it opens the text
        rest = text[m.end() : m.end() + 400]
        if _EN_REMIND_ME.match(rest) and not (_EN_SINK.search(order) or _EN_HIDE.search(rest)):
            return False  # "Assistant, remind me to change my bank password on Friday"
        return bool(
            harm or _EN_HIDE.search(rest) or _EN_NOT_OWNERS.search(rest) or _EN_WEB_SINK.search(rest)
        )
    if _EN_CLAUSE_OPEN.search(text, max(0, start - 40), start) is None:
        return None
    if harm:
        return True
    if _EN_REMIND_ME.match(order):
        return False  # "Assistant, remind me to change my bank password on Friday": the owner's own
    if _EN_NOT_OWNERS.search(order):
        return True
    return _EN_FIRST_PERSON.search(order) is None


def _en_planted_address(m: Match[str], g: int | str) -> bool:
    """An address to the assistant planted in a text (:func:`_address`): rule ``addressed_to_ai``."""
    return _address(m) is True


def _en_own_address(m: Match[str], g: int | str) -> bool:
    """An address to the assistant that reads as the owner's own request: rule ``assistant_request_en``.

    "Assistant, remind me to ...", "Dinner at 8. Assistant, add this to my calendar": MEDIUM like any
    order to the model. Only the write path knows who wrote it: the owner-request waiver writes it when
    the path is the user's own (origin ``user_explicit``, private), and holds it from anyone else.
    """
    if _address(m) is not False:
        return False
    limit = min(len(m.string), m.end() + 120)
    return _EN_REQUEST_START.match(m.string, m.end(), limit) is not None


# An AI named as such near a match (round 30): the machine words, and "assistant" unless it is a
# person's job ("assistant coach", "dental assistant", "assistant to the director"); a bare "agent"
# is most often a person (estate, travel, support agents), so only a qualified one counts.
_EN_AI_NAMED = re.compile(
    r"(?<!\w)(?:ai|a\.i\.|chatbots?|bots?|llms?|gpts?|chatgpt|claude|copilot|alexa|siri|gemini"
    r"|(?:ai|automated|digital|virtual|voice|smart|integrated|screening)\s+(?:agents?|systems?|tools?|screeners?|reviewers?|helpers?)"
    r"|(?<!dental\s)(?<!medical\s)(?<!teaching\s)(?<!legal\s)(?<!research\s)(?<!lab\s)(?<!office\s)(?<!executive\s)"
    r"(?<!administrative\s)(?<!care\s)(?<!nursing\s)(?<!sales\s)(?<!shop\s)(?<!store\s)(?<!kitchen\s)(?<!camp\s)"
    r"assistants?(?!\s+(?:coach|coaches|manager|managers|directors?|professors?|editors?|principals?|referees?|teachers?"
    r"|heads?|secretary|treasurer|captains?|chefs?|producers?|buyers?|to\s+the)\b))(?!\w)"
)


def _en_ai_named(m: Match[str], g: int | str) -> bool:
    """An AI named within reach of the match (400 characters before it, 200 after): rule ``oversight_evasion_en``.

    Keeping the owner out of it ("no need to mention it to Sam", "he won't know", "skip notifying the
    homeowner") is an order to the assistant only in a text that speaks to or of one.
    """
    text = m.string
    return _EN_AI_NAMED.search(text, max(0, m.start() - 400), min(len(text), m.end() + 200)) is not None


EN_ORDER_VALIDATORS: dict[str, Callable[[Match[str], int | str], bool]] = {
    "en_not_a_habit": _en_not_a_habit,
    "en_planted_address": _en_planted_address,
    "en_own_address": _en_own_address,
    "en_ai_named": _en_ai_named,
}
"""The validators of this module by the key the rule tables name them with."""
