"""Server-side signals computed from the models' sidecar recommendations, never asked of a model.

Council consensus, over the recommendations of the members that answered with a parseable sidecar:

    fewer than 2 recommendations                      → unknown
    every recommendation identical                    → strong
    both ``apply`` and ``reject`` present              → divergent   (a material split)
    one recommendation held by a strict majority      → partial
    otherwise (no majority)                           → divergent

``material_disagreement`` is true exactly when both ``apply`` and ``reject`` were recommended:
acting and dropping the approach cannot both be right. The same test over a chain's or debate's
recommendation trail gives ``material_drift``.

Council confidence starts from the synthesizer's own sidecar confidence (``medium`` when it gave
none) and is capped by the consensus (strong → high, partial → medium, divergent → low, unknown →
medium with at least two answers, else low) and by the quorum (a degraded council → medium).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from ask_fable.values import Confidence

Consensus = Literal["strong", "partial", "divergent", "unknown"]
_RANK: dict[str, int] = {"low": 0, "medium": 1, "high": 2}
_LEVEL: dict[int, Confidence] = {0: "low", 1: "medium", 2: "high"}


def material_split(recommendations: Sequence[str | None]) -> bool:
    """True when the recommendations include both ``apply`` and ``reject``."""
    present = {r for r in recommendations if r}
    return {"apply", "reject"} <= present


def council_consensus(recommendations: Sequence[str | None]) -> tuple[Consensus, bool]:
    """``(consensus, material_disagreement)`` for the members' recommendations (``None`` = no sidecar)."""
    votes = [r for r in recommendations if r]
    material = material_split(votes)
    if len(votes) < 2:
        return "unknown", material
    counts = Counter(votes)
    top = counts.most_common(1)[0][1]
    if top == len(votes):
        return "strong", material
    if material:
        return "divergent", material
    if top * 2 > len(votes):
        return "partial", material
    return "divergent", material


def majority_recommendation(recommendations: Sequence[str | None]) -> str | None:
    """The strict-majority recommendation, or None when there is none."""
    votes = [r for r in recommendations if r]
    if not votes:
        return None
    value, count = Counter(votes).most_common(1)[0]
    return value if count * 2 > len(votes) else None


def cap_confidence(confidence: str | None, cap: str) -> Confidence:
    """``confidence`` (``medium`` when missing) lowered to at most ``cap``."""
    level = _RANK.get(confidence or "medium", 1)
    return _LEVEL[min(level, _RANK[cap])]


def downgrade(confidence: str | None) -> Confidence:
    """One level lower than ``confidence`` (``medium`` when missing); ``low`` stays ``low``."""
    return _LEVEL[max(0, _RANK.get(confidence or "medium", 1) - 1)]


def council_confidence(
    consensus: Consensus, answered: int, asked: int, synthesis_confidence: str | None
) -> Confidence:
    """The council envelope's confidence (rules in the module docstring)."""
    if consensus == "unknown":
        cap = "medium" if answered >= 2 else "low"
    else:
        cap = {"strong": "high", "partial": "medium", "divergent": "low"}[consensus]
    if answered < asked:
        cap = cap_confidence(cap, "medium")
    return cap_confidence(synthesis_confidence, cap)


def council_next_action(
    recommendations: Sequence[str | None], asked: int, *, synthesized: bool = True
) -> str:
    """A one-line instruction for the calling agent, from the council's signals.

    ``recommendations`` holds one entry per member that answered (``None`` when it gave no
    sidecar); ``synthesized`` says whether the returned answer is a synthesis or one member's.
    """
    answered = len(recommendations)
    votes = [r for r in recommendations if r]
    consensus, material = council_consensus(votes)
    subject = "the synthesis" if synthesized else "the returned answer (one member's, not synthesized)"
    if answered <= 1:
        action = (
            f"Only {answered} of {asked} models answered: this is one opinion, not consensus. "
            "Cross-check it (re-run the council when the others are available, or ask another model) "
            "before acting on anything hard to reverse."
        )
    elif material:
        action = (
            "The panel split between apply and reject: verify the disputed point yourself before acting, "
            "or stress-test it with ask_debate."
        )
    elif consensus == "divergent":
        action = "The panel did not agree: read the sources and resolve the open question before acting."
    elif consensus == "partial":
        action = f"Most of the panel agrees: check the dissenting source's objection, then act on {subject}."
    elif consensus == "strong":
        action = f"The panel agrees ({votes[0]}): act on {subject}."
    elif votes:
        action = (
            f"Only one of the {answered} answers carried a recommendation ({votes[0]}), so there is no "
            f"consensus to compute: read {subject} and the sources before acting."
        )
    else:
        action = (
            f"The panel gave no machine-readable recommendations: read {subject} and the sources "
            "before acting."
        )
    if 1 < answered < asked:
        action += f" {asked - answered} of {asked} members did not answer (see sources)."
    return action


DebateResolution = Literal["conceded", "converged", "adjudicated", "stalemate", "degraded_single_critic"]
#: Claim statuses that no longer need a ruling.
RESOLVED_CLAIMS = frozenset({"conceded", "withdrawn", "revised", "resolved"})


def debate_resolution(
    first_dispositions: Sequence[str],
    statuses: Sequence[str],
    *,
    moved: bool,
    proposer_recommendation: str | None,
    opponent_recommendation: str | None,
) -> DebateResolution:
    """How a debate ended, from its claims ledger (the opponent answered at least once).

    conceded     the opponent conceded every claim on its first pass
    converged    no claim is still contested or unaddressed and the two final recommendations agree
                 (equal, or one side gave none)
    stalemate    claims are still contested and nobody moved: the proposer neither conceded nor
                 revised a contested claim and the opponent conceded nothing in its rebuttal
    adjudicated  anything else: the adjudicator's ruling decides
    """
    if first_dispositions and all(d == "concede" for d in first_dispositions):
        return "conceded"
    contested = sum(1 for s in statuses if s == "contested")
    open_claims = sum(1 for s in statuses if s not in RESOLVED_CLAIMS)
    recs = (proposer_recommendation, opponent_recommendation)
    agree = None in recs or recs[0] == recs[1]
    if open_claims == 0 and agree:
        return "converged"
    if contested and not moved:
        return "stalemate"
    return "adjudicated"
