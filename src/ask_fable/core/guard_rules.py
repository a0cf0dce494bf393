"""Every rule the guard can refuse under: its id, what it says the question asked, and how to reframe.

A refusal names its rule (``rule``), says why in one sentence that never quotes the request back
(``reason``), and carries advice written for that rule (``how_to_reframe``).
"""

from __future__ import annotations

from dataclasses import dataclass

HELP = " Call ask_fable_help(topic='refusals') for examples."

#: Advice for a refusal that came from the model's own scope contract rather than the guard.
MODEL_REFRAME = (
    "The model judged the question outside its scope. Ask about the engineering problem itself (the code, "
    "the error, the design decision) and say what you are building or defending." + HELP
)


#: The judge's rules whose refusals the classifier may set aside when it reads the question as clearly
#: benign throughout (:meth:`~ask_fable.core.guard_classifier.Classifier.clears`): what is done to people,
#: accounts and money, where a victim's or a defender's question uses the offender's words. A refusal
#: for weapons, chemical or biological agents, attack tooling, exploits or self-harm always stands.
SECOND_READ_RULES = frozenset((
    "fraud", "harm_to_people", "unauthorized_access", "denial_of_service", "security_evasion", "piracy",
    "serious_crime", "covert_surveillance",
))


@dataclass(frozen=True)
class Rule:
    """One reason to refuse before any model call."""

    id: str
    layer: str
    summary: str
    how_to_reframe: str


_RULES = (
    Rule(
        "empty_question",
        "sanity",
        "The question is empty",
        "Send the question itself: what you are building or fixing, what happens, and what you expected.",
    ),
    Rule(
        "question_too_short",
        "sanity",
        "The question is too short",
        "Write the question out (at least {min_len} characters): the code or design at hand and what you "
        "need decided.",
    ),
    Rule(
        "question_too_long",
        "sanity",
        "The question is too long",
        "Keep the question to what you need decided (at most {max_len} characters) and move the material "
        "into `context`, or store it once with context_write and pass `context_ref`.",
    ),
    Rule(
        "context_too_long",
        "sanity",
        "The context is too long",
        "Send only the files and line ranges that matter (context_pack takes line ranges), or raise "
        "ASK_FABLE_MAX_CONTEXT_LEN.",
    ),
    Rule(
        "custom_denylist",
        "denylist",
        "The question contains a term from ASK_FABLE_DENYLIST_FILE",
        "This server's operator has ruled that term out. Rephrase without it; if the phrase is benign in "
        "your question, the operator can add the exact phrase to ASK_FABLE_ALLOWLIST_FILE.",
    ),
    Rule(
        "attack_tooling",
        "intent",
        "The question asks to build or deploy malware or attack tooling",
        "Ask about the defensive side instead: how to detect, block, contain or analyse it (for example "
        "'How should our EDR detect ransomware encrypting a share?' or 'Write a YARA rule for this "
        "sample')." + HELP,
    ),
    Rule(
        "exploit_development",
        "intent",
        "The question asks for a working exploit, or to exploit a system that is not yours",
        "Ask how to fix, detect or test for the vulnerability in your own code (for example 'Write a "
        "regression test showing this injection is fixed'), or how to explain it in a report or CTF "
        "write-up." + HELP,
    ),
    Rule(
        "security_evasion",
        "intent",
        "The question asks how to evade or disable security tools or cover an intrusion's tracks",
        "If your own software is being flagged, ask how to sign it, report the false positive or scope an "
        "exclusion; if you defend, ask how to detect the evasion technique." + HELP,
    ),
    Rule(
        "unauthorized_access",
        "intent",
        "The question asks to get into an account, device or network that belongs to someone else",
        "Ask how to secure or recover your own account or system, or how to scope an authorised test and "
        "report its findings." + HELP,
    ),
    Rule(
        "denial_of_service",
        "intent",
        "The question asks to knock someone else's service offline",
        "Ask how to load-test your own system, or how to absorb and rate-limit such traffic." + HELP,
    ),
    Rule(
        "covert_surveillance",
        "intent",
        "The question asks to monitor a person without their knowledge",
        "Ask how to detect stalkerware or spyware on a device, or how to build monitoring that people can "
        "see and consent to." + HELP,
    ),
    Rule(
        "fraud",
        "intent",
        "The question asks to deceive people or a platform: impersonation, fake accounts, reviews or clicks",
        "Ask how to detect or stop the fraud (fake accounts, review rings, click fraud, impersonation "
        "emails), or how to create test accounts in your own staging environment." + HELP,
    ),
    Rule(
        "biological_harm",
        "intent",
        "The question asks how to produce, enhance or spread a pathogen or biological toxin",
        "ask-fable answers software questions. Software for labs, bioinformatics, epidemiology or biosafety "
        "is fine: ask about the code, the data or the design." + HELP,
    ),
    Rule(
        "chemical_harm",
        "intent",
        "The question asks how to make or use a chemical agent or poison",
        "ask-fable answers software questions. Software for chemistry, toxicology or hazardous-material "
        "safety is fine: ask about the code, the data or the design." + HELP,
    ),
    Rule(
        "weapons_harm",
        "intent",
        "The question asks how to make explosives or weapons",
        "ask-fable answers software questions. Game mechanics, simulations and safety or detection software "
        "are fine: ask about the code." + HELP,
    ),
    Rule(
        "harm_to_people",
        "intent",
        "The question asks how to hurt people",
        "ask-fable answers software questions. If you work on safety, moderation or medical software, ask "
        "about the code or the design." + HELP,
    ),
    Rule(
        "piracy",
        "intent",
        "The question asks to break copy protection or licensing in order to share or sell what it protects",
        "Ask about licensing, DRM or paywalls you build or own (for example 'How do we sign offline licence "
        "keys so a keygen cannot forge them?'), or about recovering access to software you are licensed "
        "to use through its vendor." + HELP,
    ),
    Rule(
        "serious_crime",
        "intent",
        "The question asks how to commit or cover up a crime: laundering, forged documents, drugs, false "
        "emergency calls, or taking an employer's data",
        "ask-fable answers software questions. Software that detects or investigates such crime (AML "
        "monitoring, document verification, data loss prevention) is fine: ask about the code, the data "
        "or the design." + HELP,
    ),
    Rule(
        "self_harm",
        "intent",
        "The question asks how to end or hurt one's own life",
        "If you are thinking about ending your life or hurting yourself, please talk to someone now: a "
        "local emergency number or a crisis line (in the US, call or text 988; elsewhere, "
        "findahelpline.com). If you build software for crisis support or moderation, ask about the code or "
        "the design.",
    ),
    Rule(
        "sexual_content_minors",
        "intent",
        "The question asks for sexual content involving a minor",
        "ask-fable never produces this. If you work on child safety (detection, reporting to NCMEC, "
        "moderation tooling), ask about the code or the process." + HELP,
    ),
    Rule(
        "hate_or_extremism",
        "intent",
        "The question asks for material that recruits to violence or demeans a group of people",
        "If you build moderation, classification or counter-extremism tools, ask about the code, the data "
        "or the design." + HELP,
    ),
    Rule(
        "guard_model",
        "model",
        "The guard model judged the question unsafe",
        "This server also has every question classified by a safety model, which flagged this one. Ask "
        "about the engineering problem itself (the code, the error, the design) and say what you are "
        "building or defending." + HELP,
    ),
    Rule(
        "guard_unavailable",
        "model",
        "The guard model could not classify the question, and this server refuses what it cannot check",
        "Ask again shortly. The server's operator can check the model named by ASK_FABLE_GUARD_MODEL "
        "(`ask-fable doctor`) or let questions through on the local guard alone while it is down "
        "(ASK_FABLE_GUARD_MODEL_ON_FAILURE=open).",
    ),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}
