"""Instructions split across memories, and screening every field of a record at once (W5, W4).

:func:`joint_findings` is the split-injection check the write gate and the recall gate share:
memories shown to a model one after another are one text to it, so an instruction cut in two
("Ignore all previous" | "instructions and ...") is an instruction. Given the texts in the
order they would be shown, it returns the injection findings that only appear when they are
read together: findings whose span crosses the boundary between two texts and that neither
text has on its own.

:func:`screen_fields` screens all the fields of a record (title, body, source, tags, entity,
attribute, source_record_id, id, ...) in one pass over one joined text, and splits the findings
back into one report per field.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InputError
from .findings import DEFAULT_MAX_CHARS, Finding, Screen, ScreenReport, Severity
from .validators import looks_made_up

__all__ = ["JOINT_WINDOW", "JointFinding", "joint_findings", "screen_fields"]

JOINT_WINDOW = 300
"""Characters on each side of a boundary screened when consecutive texts are read together."""

_SEP = " "  # a line break between two memories does not stop a model from reading on, so the
# halves are joined the way most rules read across words (some phrase rules stop at a newline)
_FIELD_SEP = "\n\n"
# cue scores add weak signals, and the semantic classifier scores the meaning of a window of
# sentences it was trained on one text at a time: across two memories either would read two
# unrelated notes as one (the phrase rules still see a split instruction)
_WEAK = ("instruction_cues_", "semantic_instruction_")


@dataclass(frozen=True)
class JointFinding:
    """An injection that only exists when consecutive texts are read together.

    Attributes:
        rule: the rule that matched across the boundary.
        first_index: index of the text the match starts in.
        last_index: index of the text it ends in (``> first_index``).
        severity: the finding's severity.
        score: its confidence.
    """

    rule: str
    first_index: int
    last_index: int
    severity: Severity
    score: float


@lru_cache(maxsize=1)
def _default_scan() -> Callable[[str], list[Finding]]:
    from .injection import InjectionScreen

    return InjectionScreen(semantic=None).scan  # its findings would not count across a boundary


def joint_findings(
    texts: Sequence[str],
    *,
    scan: Callable[[str], Sequence[Finding]] | None = None,
    window: int = JOINT_WINDOW,
) -> list[JointFinding]:
    """Injection findings that appear only when ``texts`` are read in order, one after another.

    For each boundary between two consecutive texts, the last ``window`` characters before it
    (reaching back over short texts) and the first ``window`` after it are screened as one text,
    joined by a space (a model reads across the line break a recalled context puts there). A finding that crosses the boundary,
    and that the texts on either side do not have on their own, is reported once with the
    indexes of the texts it starts and ends in. Cue-score findings (``instruction_cues_*``) are not
    counted across a boundary: they add weak signals, and two unrelated notes side by side would
    add up; nor are semantic findings (``semantic_instruction_*``), for the same reason. Cost:
    linear in the number of texts.

    Args:
        texts: the texts in reading order (bodies of consecutive memories, say).
        scan: the screen to use, ``text -> findings`` (default: the injection screen).
        window: characters on each side of a boundary.

    Raises:
        InputError: if ``texts`` is not a sequence of strings or ``window`` is not positive.
    """
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise InputError("joint_findings takes a sequence of strings")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise InputError("window must be a positive int")
    run = scan if scan is not None else _default_scan()
    seen: dict[tuple[str, int, int], JointFinding] = {}
    for k in range(1, len(texts)):
        pieces: list[tuple[int, str]] = []  # (text index, piece) in reading order
        need, i = window, k - 1
        while i >= 0 and need > 0:
            piece = texts[i][-need:]
            pieces.insert(0, (i, piece))
            need -= len(piece) + 1
            i -= 1
        need, i = window, k
        while i < len(texts) and need > 0:
            piece = texts[i][:need]
            pieces.append((i, piece))
            need -= len(piece) + 1
            i += 1
        starts: list[int] = []
        pos = 0
        for _, piece in pieces:
            starts.append(pos)
            pos += len(piece) + len(_SEP)
        joined = _SEP.join(p for _, p in pieces)
        left = next(j for j, (idx, _) in enumerate(pieces) if idx == k) - 1
        boundary = starts[left + 1] - len(_SEP)  # offset of the separator before text k
        crossing = [
            f
            for f in run(joined)
            if f.kind == "injection"
            and not f.rule.startswith(_WEAK)
            and f.start < boundary
            and f.end > boundary + len(_SEP)
        ]
        if not crossing:
            continue
        alone_left = [f for f in run(joined[:boundary]) if f.kind == "injection"]
        alone_right = [f for f in run(joined[boundary + len(_SEP) :]) if f.kind == "injection"]
        shift = boundary + len(_SEP)
        for f in crossing:
            if any(g.rule == f.rule and g.end > f.start for g in alone_left):
                continue  # the left text says it on its own
            if any(g.rule == f.rule and g.start + shift < f.end for g in alone_right):
                continue
            first = pieces[bisect_right(starts, f.start) - 1][0]
            last = pieces[bisect_right(starts, f.end - 1) - 1][0]
            key = (f.rule, first, max(last, first + 1))
            old = seen.get(key)
            if old is None or f.severity.rank > old.severity.rank:
                seen[key] = JointFinding(f.rule, key[1], key[2], f.severity, f.score)
    return sorted(seen.values(), key=lambda j: (j.first_index, j.last_index, j.rule))


FieldValue = str | Sequence[str] | None


def screen_fields(
    fields: Mapping[str, FieldValue],
    *,
    screens: Sequence[Screen] | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    alone: Collection[str] = (),
) -> dict[str, ScreenReport]:
    """Screen every field of a record in one pass and return one report per field.

    The fields are joined into one text (a blank line between two fields; a list field such as
    ``tags`` is one field, its items one per line), screened once, and each finding goes to the
    field it starts in, clipped to that field; offsets are offsets into that field's text (as
    :func:`mask_pii` needs them). A record whose joined text would be longer than ``max_chars``
    is screened field by field.

    Args:
        fields: field name -> text (``None`` and empty fields get an empty report).
        screens: as for :func:`screen` (default: secrets, PII, injection).
        max_chars: the longest joined text screened in one pass.
        alone: fields that are values on their own (ids, tags, a source): where the joined pass
            puts a finding in one of them, its report is that field screened alone, so a rule that
            reads on across the blank line from the field before (``def login(user, password):``
            then an id ``doc-1185``, read as the password) puts nothing in it; a secret or an
            instruction the field holds itself is still found there, and so is a value read
            across the blank line that looks made up as a password (letters and digits, and
            mixed case or a symbol).

    Raises:
        InputError: if a field is not a string, a sequence of strings or ``None``.
    """
    from .run import screen

    names: list[str] = []
    values: list[str] = []
    for name, value in fields.items():
        if value is None:
            text = ""
        elif isinstance(value, str):
            text = value
        elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
            text = "\n".join(value)
        else:
            raise InputError(f"field {name!r} must be a string or a list of strings")
        names.append(str(name))
        values.append(text)
    out = {n: ScreenReport() for n in names}
    present = [(n, v) for n, v in zip(names, values, strict=True) if v]
    if not present:
        return out
    joined = _FIELD_SEP.join(v for _, v in present)
    if len(joined) > max_chars:
        for n, v in present:
            out[n] = screen(v, screens=screens)
        return out
    starts: list[int] = []
    pos = 0
    for _, v in present:
        starts.append(pos)
        pos += len(v) + len(_FIELD_SEP)
    per_field: dict[str, list[Finding]] = {n: [] for n, _ in present}
    for f in screen(joined, screens=screens).findings:
        j = bisect_right(starts, f.start) - 1
        start = f.start
        if start >= starts[j] + len(present[j][1]):  # starts in a separator: the next field's
            j += 1
            if j >= len(present):
                continue
            start = starts[j]
        field_end = starts[j] + len(present[j][1])
        end = min(f.end, field_end)
        if end <= start:
            continue
        per_field[present[j][0]].append(
            f.model_copy(update={"start": start - starts[j], "end": end - starts[j]})
        )
    texts = dict(present)
    for n, found in per_field.items():
        if found and n in alone:
            # the field's own findings, and a secret value read across the blank line when the
            # field holds nothing but a made-up password (``the wifi password is`` | ``Xk29!mqLp``)
            own = list(screen(texts[n], screens=screens).findings)
            own += [f for f in found if f.kind == "secret" and looks_made_up(texts[n][f.start : f.end])]
            out[n] = ScreenReport.of(own)
        else:
            out[n] = ScreenReport.of(found)
    return out
