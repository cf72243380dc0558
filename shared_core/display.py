"""Rich displays for Jupyter: gate results, audit records, what-if diffs and score plots.

Everything here is for people looking at decisions, never for the model:

* :func:`gate_result_html` (behind ``GateResult._repr_html_``): accepted and rejected hits in two
  tables, one coloured badge per reason, and the channel scores of each hit (semantic, lexical,
  vector and keyword ranks, channels). Accepted hits show their title and a short body preview;
  **rejected hits show their id, title and scores only, never their body** (a rejected memory may
  be another user's note, a draft, or personal data).
* :func:`audit_html` (behind ``AuditRecord._repr_html_``): the audit record as it is stored, ids and
  reasons only.
* :func:`config_diff_html`: what a configuration change would change (newly accepted / newly
  rejected ids) for one what-if replay.
* :func:`plot_score_distribution`: semantic scores by decision (accepted, each reject reason) with
  the threshold line; matplotlib is imported only when it is called.

The HTML is self-contained: inline CSS, no JavaScript, no external assets, and every piece of
text taken from a memory or a record goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .model import Hit, Reason

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .audit import AuditRecord
    from .recall.gate import ConfigDiff, GateResult

__all__ = [
    "ACTION_COLOURS",
    "REASON_COLOURS",
    "audit_html",
    "config_diff_html",
    "gate_result_html",
    "plot_score_distribution",
]

#: One colour per reason (badges and plot series); unknown reasons are grey.
REASON_COLOURS: dict[str, str] = {
    Reason.INVALID.value: "#6b7280",
    Reason.DELETED.value: "#111827",
    Reason.QUARANTINED.value: "#7c3aed",
    Reason.SCOPE_MISMATCH.value: "#dc2626",
    Reason.EXPIRED.value: "#92400e",
    Reason.LOW_SCORE.value: "#2563eb",
    Reason.STALE.value: "#d97706",
    Reason.NOT_APPROVED.value: "#db2777",
    Reason.SUPERSEDED.value: "#0d9488",
    Reason.TIER_EXCLUDED.value: "#4b5563",
    Reason.OVER_BUDGET.value: "#65a30d",
    Reason.POLICY.value: "#9333ea",
}
ACCEPTED_COLOUR = "#16a34a"
#: Write-gate actions, as they appear in write audit records.
ACTION_COLOURS: dict[str, str] = {
    "write": ACCEPTED_COLOUR,
    "update": "#0891b2",
    "merge": "#64748b",
    "quarantine": "#7c3aed",
    "reject": "#b91c1c",
}
_UNKNOWN_COLOUR = "#9ca3af"
PREVIEW_CHARS = 120

_CSS = (
    "<style>"
    ".rg{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;color:#111827}"
    ".rg h4{margin:10px 0 4px 0;font-size:14px}"
    ".rg table{border-collapse:collapse;margin:2px 0 8px 0}"
    ".rg th,.rg td{border:1px solid #e5e7eb;padding:3px 6px;text-align:left;vertical-align:top}"
    ".rg th{background:#f3f4f6;font-weight:600}"
    ".rg td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".rg .badge{display:inline-block;padding:1px 7px;margin:1px 2px;border-radius:9px;color:#fff;"
    "font-size:11px;white-space:nowrap}"
    ".rg .muted{color:#6b7280}"
    ".rg .id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}"
    ".rg .preview{color:#374151;max-width:420px}"
    "</style>"
)


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _colour(reason: str) -> str:
    return REASON_COLOURS.get(reason) or ACTION_COLOURS.get(reason, _UNKNOWN_COLOUR)


def _badge(label: str, colour: str, title: str | None = None) -> str:
    tip = f' title="{_e(title)}"' if title else ""
    return f'<span class="badge" style="background:{colour}"{tip}>{_e(label)}</span>'


def reason_badge(reason: str | Reason, *, count: int | None = None) -> str:
    """One coloured badge for a reason (optionally with a count)."""
    name = reason.value if isinstance(reason, Reason) else str(reason)
    label = name if count is None else f"{name} {count}"
    return _badge(label, _colour(name))


def _num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return '<span class="muted">-</span>'
    if isinstance(value, float):
        if not math.isfinite(value):
            return _e(value)
        return f"{value:.{digits}f}"
    return _e(value)


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _score_cells(hit: Hit | None) -> str:
    if hit is None:
        return '<td class="muted" colspan="5">unparsed hit</td>'
    channels = ", ".join(hit.channels) if hit.channels else "imported"
    return (
        f'<td class="num">{_num(hit.score)}</td>'
        f'<td class="num">{_num(hit.lexical_score)}</td>'
        f'<td class="num">{_num(hit.vector_rank)}</td>'
        f'<td class="num">{_num(hit.keyword_rank)}</td>'
        f"<td>{_e(channels)}</td>"
    )


_SCORE_HEAD = "<th>semantic</th><th>lexical</th><th>vector rank</th><th>keyword rank</th><th>channels</th>"


def _counts_line(counts: Mapping[str, int]) -> str:
    if not counts:
        return '<span class="muted">none</span>'
    return " ".join(reason_badge(name, count=n) for name, n in sorted(counts.items()))


def gate_result_html(result: GateResult) -> str:
    """HTML for one gate run: accepted vs rejected, reason badges, channel scores.

    Accepted hits show their title and a body preview of at most 120 characters; rejected hits
    show id, title, reasons and scores, never their body. All memory text is escaped.

    Args:
        result: the gate result to show.

    Returns:
        A self-contained HTML fragment (inline CSS, no scripts).
    """
    audit = result.audit
    parts = [_CSS, '<div class="rg">']
    flags = [
        _badge(f"accepted {len(result.accepted)}", ACCEPTED_COLOUR),
        _badge(f"rejected {len(result.rejected)}", "#991b1b"),
    ]
    if audit.dry_run:
        flags.append(_badge("dry run", "#0369a1"))
    parts.append(
        f"<div>{' '.join(flags)} "
        f'<span class="muted">config <span class="id">{_e(audit.config_hash)}</span>'
        f' · query <span class="id">{_e(audit.query_hash or "-")}</span>'
        f" · {audit.elapsed_ms:.2f} ms</span></div>"
    )

    parts.append(f"<h4>Accepted ({len(result.accepted)})</h4>")
    if result.accepted:
        parts.append(
            "<table><tr><th>#</th><th>id</th><th>title</th><th>preview</th><th>updated</th><th>tier</th>"
            f"{_SCORE_HEAD}</tr>"
        )
        for rank, hit in enumerate(result.accepted, start=1):
            r = hit.record
            parts.append(
                f'<tr><td class="num">{rank}</td><td class="id">{_e(r.id)}</td><td>{_e(r.title)}</td>'
                f'<td class="preview">{_e(_preview(r.body))}</td>'
                f"<td>{_e(r.updated_at.date().isoformat())}</td><td>{_e(r.tier.value)}</td>"
                f"{_score_cells(hit)}</tr>"
            )
        parts.append("</table>")
    else:
        parts.append('<div class="muted">nothing was accepted</div>')

    parts.append(f"<h4>Rejected ({len(result.rejected)})</h4>")
    if result.rejected:
        parts.append(f"<div>{_counts_line(audit.counts)}</div>")
        parts.append(f"<table><tr><th>id</th><th>title</th><th>reasons</th>{_SCORE_HEAD}</tr>")
        for rej in result.rejected:
            badges = reason_badge(rej.reason) + "".join(
                reason_badge(x) for x in dict.fromkeys(rej.reasons[1:]) if x is not rej.reason
            )
            parts.append(
                f'<tr><td class="id">{_e(rej.id)}</td><td>{_e(rej.title)}</td><td>{badges}</td>'
                f"{_score_cells(rej.hit)}</tr>"
            )
        parts.append("</table>")
    else:
        parts.append('<div class="muted">nothing was rejected</div>')
    parts.append("</div>")
    return "".join(parts)


def audit_html(record: AuditRecord) -> str:
    """HTML for an audit record: event, time, scope, ids and reasons (no memory text).

    Args:
        record: the audit record.

    Returns:
        A self-contained HTML fragment (inline CSS, no scripts).
    """
    scope = ", ".join(f"{k}={v}" for k, v in record.scope.items() if v) or "-"
    rows = [
        ("event", _e(record.event) + (" " + _badge("dry run", "#0369a1") if record.dry_run else "")),
        ("at", _e(record.at)),
        ("scope", f'<span class="id">{_e(scope)}</span>'),
        ("query hash", f'<span class="id">{_e(record.query_hash or "-")}</span>'),
        ("config hash", f'<span class="id">{_e(record.config_hash or "-")}</span>'),
        (
            "input / accepted / rejected",
            f"{record.input_count} / {len(record.accepted_ids)} / {record.rejected_count}",
        ),
        ("counts", _counts_line(record.counts)),
        ("elapsed", f"{record.elapsed_ms:.2f} ms"),
    ]
    if record.query is not None:
        rows.insert(3, ("query", _e(record.query)))
    parts = [_CSS, '<div class="rg"><table>']
    parts.extend(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    parts.append("</table>")
    if record.accepted_ids:
        ids = " ".join(f'<span class="id">{_e(i)}</span>' for i in record.accepted_ids)
        parts.append(f"<h4>Accepted ids</h4><div>{ids}</div>")
    if record.rejected:
        parts.append("<h4>Rejected</h4><table><tr><th>id</th><th>reasons</th></tr>")
        for entry in record.rejected:
            badges = reason_badge(entry.reason) + "".join(
                reason_badge(x) for x in dict.fromkeys(entry.reasons) if x != entry.reason
            )
            parts.append(f'<tr><td class="id">{_e(entry.id)}</td><td>{badges}</td></tr>')
        parts.append("</table>")
    if record.extra:
        text = json.dumps(record.extra, ensure_ascii=False, sort_keys=True, default=str)
        parts.append(f'<h4>Extra</h4><div class="id">{_e(text)}</div>')
    parts.append("</div>")
    return "".join(parts)


def config_diff_html(diff: ConfigDiff, *, label: str = "new config") -> str:
    """HTML for a what-if replay: ids newly accepted and newly rejected under ``label``.

    Titles come from the hits of the two runs (escaped); bodies are never shown.

    Args:
        diff: the result of :meth:`~shared_core.gate.RecallGate.compare`.
        label: what the new configuration is, e.g. ``"min_score=0.85"``.

    Returns:
        A self-contained HTML fragment (inline CSS, no scripts).
    """
    titles: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for res in (diff.before, diff.after):
        for hit in res.accepted:
            titles.setdefault(hit.record.id, hit.record.title)
        for rej in res.rejected:
            titles.setdefault(rej.id, rej.title)
    for rej in diff.after.rejected:
        reasons[rej.id] = rej.reason.value
    before_reasons = {r.id: r.reason.value for r in diff.before.rejected}

    def rows(ids: Sequence[str], why: Mapping[str, str], colour: str, word: str) -> str:
        if not ids:
            return f'<div class="muted">no memory is newly {word}</div>'
        out = [f"<table><tr><th>id</th><th>title</th><th>{'was' if word == 'accepted' else 'now'}</th></tr>"]
        for mid in ids:
            reason = why.get(mid)
            badge = reason_badge(reason) if reason else _badge(word, colour)
            out.append(
                f'<tr><td class="id">{_e(mid)}</td><td>{_e(titles.get(mid, ""))}</td><td>{badge}</td></tr>'
            )
        out.append("</table>")
        return "".join(out)

    return "".join(
        [
            _CSS,
            '<div class="rg">',
            f"<div><b>What if: {_e(label)}</b> "
            f'<span class="muted">({len(diff.before.accepted)} accepted before, '
            f"{len(diff.after.accepted)} after)</span></div>",
            f"<h4>Newly accepted ({len(diff.newly_accepted)})</h4>",
            rows(diff.newly_accepted, before_reasons, ACCEPTED_COLOUR, "accepted"),
            f"<h4>Newly rejected ({len(diff.newly_rejected)})</h4>",
            rows(diff.newly_rejected, reasons, "#991b1b", "rejected"),
            "</div>",
        ]
    )


def score_groups(results: Iterable[GateResult]) -> dict[str, list[float]]:
    """Semantic scores grouped by decision: ``"accepted"`` and each primary reject reason.

    Hits without a semantic score (imported without one, or unparsed) are left out.
    """
    groups: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for hit in result.accepted:
            if hit.score is not None and math.isfinite(hit.score):
                groups["accepted"].append(float(hit.score))
        for rej in result.rejected:
            score = rej.hit.score if rej.hit is not None else None
            if score is not None and math.isfinite(score):
                groups[rej.reason.value].append(float(score))
    return dict(groups)


def plot_score_distribution(
    results: GateResult | Iterable[GateResult],
    ax: Axes | None = None,
    *,
    threshold: float | None = None,
    bins: int = 30,
) -> Axes:
    """Plot semantic score distributions by decision, with the threshold line.

    One step histogram per group: accepted hits, then each primary reject reason (coloured as
    its badge). Useful to see whether ``min_score`` sits between relevant and irrelevant hits.

    Args:
        results: one gate result or several (e.g. one per query of an evaluation set).
        ax: matplotlib axes to draw on (default: a new figure).
        threshold: the semantic threshold to draw (e.g. ``store.gate.config_for(scope).min_score``).
        bins: histogram bins over the observed score range.

    Returns:
        The axes drawn on.

    Raises:
        ImportError: if matplotlib is not installed.
    """
    import matplotlib.pyplot as plt

    # One result or several: a result has ``accepted`` (duck-typed, so display needs no gate import).
    items: list[GateResult] = [results] if hasattr(results, "accepted") else list(results)  # type: ignore[list-item]
    groups = score_groups(items)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    values = [v for vs in groups.values() for v in vs]
    if threshold is not None:
        values.append(threshold)
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if high - low < 1e-6:
        low, high = low - 0.05, high + 0.05
    edges = [low + (high - low) * i / bins for i in range(bins + 1)]
    order = ["accepted", *sorted(k for k in groups if k != "accepted")]
    for name in order:
        if name not in groups:
            continue
        colour = ACCEPTED_COLOUR if name == "accepted" else _colour(name)
        ax.hist(
            groups[name],
            bins=edges,
            histtype="step",
            linewidth=2.0 if name == "accepted" else 1.4,
            color=colour,
            label=f"{name} ({len(groups[name])})",
        )
    if threshold is not None:
        ax.axvline(
            threshold, color="#111827", linestyle="--", linewidth=1.2, label=f"min_score {threshold:.2f}"
        )
    ax.set_xlabel("semantic score (cosine)")
    ax.set_ylabel("hits")
    ax.set_title("Semantic score by gate decision")
    if groups or threshold is not None:
        ax.legend(fontsize=8, frameon=False)
    return ax
