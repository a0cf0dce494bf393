"""The guard's vocabulary: the words that say what a question asks to produce, and for whom.

Everything here is matched on normalized text (lower case, hyphens, underscores and slashes turned
into spaces, curly quotes straightened), so ``botnet-resistant`` reads ``botnet resistant``.
Word sets hold exact tokens; regex fragments are joined by :mod:`ask_fable.core.guard_intent`.
"""

from __future__ import annotations


def alt(*parts: str) -> str:
    """One non-capturing alternation of regex fragments."""
    return "(?:" + "|".join(parts) + ")"


def words(text: str) -> frozenset[str]:
    """A set of tokens from a whitespace-separated string."""
    return frozenset(text.split())


# --- what the words before a term say about it ------------------------------------------------

#: Verbs (and request words) that make the asker the producer of what follows.
MAKE = words(
    """write writes writing wrte wirte build builds building create creates creating make makes making
    develop developing code coding craft crafting generate generating design designing program
    programming author produce producing implement implementing give provide need want modify
    modifying turn convert pack packing obfuscate obfuscating compile deploy deploying
    distribute distributing spread spreading sneak smuggle install installs installing reinstall reinstalls
    drop drops plant plants sell selling setup automate automating improve upgrade customize
    rewrite finish complete help send get show plan crypt rent renting hire hiring buy buying whip include
    output outputs outputting architect"""
)

#: Words that put what follows in the detected, blocked, analysed or explained role.
DEFEND = words(
    """penalties penalty punishment punishments consequences
    detect detects detecting detection detections detector detectors block blocks blocking
    blocklist prevent prevents preventing prevention stop stops stopping defend defending
    defense defenses defence defences protect protects protecting protection harden hardening
    mitigate mitigating mitigation mitigations resist resists resistant resilient survive
    surviving spot spotting catch catches catching flag flags flagging flagged identify
    identifying hunt hunting scan scans scanning scanner quarantine quarantines quarantined
    remove removes removing removal eradicate eradicating clean cleaning analyse analyze
    analyses analyzes analysing analyzing analysis dissect dissecting triage investigate
    investigating respond responding response recover recovering recovery alert alerts alerting
    against about track tracking tracks emulate emulating unpack unpacking classify classifies
    cluster clusters decode decoding monitor monitoring filter filters test tests testing
    evidence indicators iocs signature signatures rule rules report reports present document
    score reproduce understand learn study training awareness explain explains explaining
    describe describes describing difference compare comparing vs versus how why what what's
    which whether conceptually overview suspected suspicious hit infected attacker attackers
    attacker's adversary adversaries check checks checking verify audit audits auditing
    relevant simulate simulated simulation sandbox mock dummy emulate emulated emulating warn warns warning
    educate found discovered noticed observed received saw seen spotted moderate moderating moderation
    distinguish distinguishes distinguishing differentiate differentiating signals research researching
    researches researched recognise recognize recognising recognizing
    reduce reduces reducing minimize minimise minimizing minimising lower lowering"""
)

#: Words that end the stretch a governing word can reach across.
STOP = words("that which who where so because while when if unless after before until without whose")

#: First-person words and request nouns: with nothing else in between, the asker is the one acting.
FIRST_PERSON = words(
    "i we i'm we're way ways steps instructions tutorial recipe procedure method methods excuse excuses "
    "pretext best fastest easiest cheapest quickest simplest"
)

#: Words right after a term that make it the subject of defensive or analytical work.
NEUTRAL_HEADS = words(
    """detection detections detector detectors detecting scanner scanners scanning scan scans
    signature signatures rule rules heuristic heuristics sandbox sandboxes analysis analyst
    analysts indicators indicator ioc iocs canary canaries resistant resilient proof
    protection prevention defense defence defenses hunting response removal cleanup classifier
    classifiers filter filters alert alerts alerting telemetry families family sample samples
    specimen specimens infection infections incident incidents traffic
    connection connections activity behaviour behavior infrastructure domain domains group
    groups gang gangs operator operators actors style like related type types simulation
    simulations scenario exercise tabletop training awareness readiness insurance policy
    playbook runbook recovery decryptor decryptors decryption report reports writeup trends
    threat threats risk takedown takedowns check checks test tests testing emulation research
    hash hashes yara free mitigation mitigations harder impossible difficult protocol
    surveillance genomics sequencing pipeline dashboard metadata database data model vaccine
    vaccines assay diagnostics inventory lims definition definitions simulator compliant transmission total
    storage compliance retention gear archive exposure studies study levels records results screening
    parser parsers schema schemas format formats size sizes validation validator team teams department desk
    ops unit squad warning warnings banner banners notice notices label labels labelling labeling"""
)

# --- cyber: attack tooling -------------------------------------------------------------------

#: Attack tooling that is harmful whenever the question asks to produce it.
STRONG_TOOLING: dict[str, str] = {
    # A name broken into syllables to slip past a filter ("ran som ware", "keylo gger") is the name.
    r"ran ?som ?wares?": "ransomware",
    r"mal ?ware": "malware",
    r"key ?lo ?ggers?|keystroke loggers?|keylog\w*": "a keylogger",
    r"(?:card )?skimmers?|shimmers?": "a card skimmer",
    r"(?:wallet|crypto|token|nft) drainers?": "a wallet drainer",
    r"rootkits?|bootkits?": "a rootkit",
    r"botnets?": "a botnet",
    r"info ?stealers?": "a credential stealer",
    r"(?:credential|password|cookie|token|wallet|discord) (?:stealers?|grabbers?|harvesters?)": (
        "a credential stealer"
    ),
    r"stealers?|grabbers?": "a credential stealer",
    r"spyware|stalkerware": "spyware",
    r"(?:computer )?virus(?:es)?": "a computer virus",
    r"remote access trojans?|trojans?": "a trojan",
    r"worms?": "a worm",
    r"crypters?": "a crypter",
    r"cryptojack\w*|crypto ?jackers?": "a cryptojacker",
    r"phishing (?:kits?|pages?|sites?|websites?|campaigns?|emails? campaigns?|setups?)": "a phishing kit",
    r"phishing (?:emails?|messages?|texts?|sms|lures?|templates?)": "a phishing message",
    r"(?:credential|password|login|card) (?:harvest\w*|phish\w*|steal\w*|captur\w*|grabb\w*) (?:pages?|"
    r"sites?|"
    r"websites?|forms?|kits?|apps?|tools?|scripts?)": "a phishing kit",
    r"c2|c&c": "command and control",
    r"(?:ddos|dos|attack|hacking) (?:tools?|scripts?|bots?|kits?)": "a denial-of-service tool",
    r"booters?|stressers?": "a denial-of-service tool",
    r"slowloris|(?:syn|udp|http) floods?|amplification attacks?": "a denial-of-service attack",
    r"webshells?|web shells?|reverse shells?": "a remote shell",
    r"shellcode": "shellcode",
    r"evil twins?|rogue access points?": "a rogue access point",
    r"credential stuffing|password spraying|account takeovers?": "credential stuffing",
}

#: Words that name attack tooling only alongside a sign of malice (``worm`` vs a self-spreading one).
WEAK_TOOLING: dict[str, str] = {
    r"bots?": "a bot",
    r"remote access tools?|remote administration tools?": "a remote access tool",
    r"\brats?": "a remote access trojan",
    r"backdoors?|back doors?": "a backdoor",
    r"implants?": "an implant",
    r"droppers?|loaders?": "a malware loader",
    r"(?:crypto ?)?miners?": "a cryptominer",
    r"payloads?": "a malicious payload",
    r"wipers?|lockers?": "a wiper",
    r"command and control": "command and control",
    r"phishing": "phishing",
}

#: Exploit tooling: harmful whenever the question asks to produce it.
EXPLOIT_TERMS: dict[str, str] = {
    r"zero ?days?|0 ?days?": "a zero-day exploit",
    r"exploit (?:kits?|chains?)": "an exploit chain",
}

#: Attack components the asker calls their own ("downloads my payload"): produced or deployed on request.
OWNED_TOOLING = (
    r"\bmy (?:payloads?|implants?|loaders?|droppers?|backdoors?|rats?|second stage|beacons?|"
    r"(?:crypto ?)?miners?)\b"
)

#: Signs of malice that turn a weak tooling word, or an evasion question, into attack tooling.
MALICE = alt(
    r"victims?'?s?",
    r"(?:the |a )?targets?'s",
    r"the target\b",
    r"infect\w*",
    r"compromised",
    r"(?:broke|break|hacked|got) into",
    r"(?:after|once|when) i (?:get|got|am) in\b",
    r"unauthori[sz]ed",
    r"foothold",
    r"mimikatz",
    r"lsass",
    r"credential dump\w*",
    r"second stage",
    r"shellcode",
    r"reverse shells?",
    r"beacon\w*",
    r"implants?",
    r"\brats?\b",
    r"malware",
    r"payloads?",
    r"(?:crypto ?)?miners?",
    r"keyloggers?",
    r"ransom\w*",
    r"trojans?",
    r"backdoors?",
    r"rootkits?",
    r"botnets?",
    r"\bc2\b",
    r"process injection",
    r"inject\w* into",
    r"nobody (?:knows|notices)",
    r"no one (?:knows|notices)",
    r"(?:machines|computers|pcs|devices|hosts) (?:i'?m|i am) (?:putting|installing|deploying|dropping)",
    r"(?:program|software|tool|app|script|thing)s? i (?:put|installed|planted|dropped|hid|snuck) on",
    r"before i (?:quit|leave|left|resign\w*|get fired)",
    r"secretly",
    r"silently",
    r"stealthily",
    r"covertly",
    r"quietly",
    r"client network",
    r"persistence",
    r"reinstall\w*",
    r"spread\w* (?:itself|across|through|to|from|via|over|on its own)",
    r"self (?:replicating|spreading|propagating)",
    r"spread\w* (?:\S+ ){0,5}?(?:by itself|on its own)",
    r"copies itself",
    r"steal\w*",
    r"exfiltrat\w*",
    r"hides? (?:from|itself)",
    r"from anywhere",
    r"full control",
    r"remote(?:ly)? (?:access|control)",
    r"takes? over",
    r"joins? them to",
    r"\bddos\b",
    r"\bfloods?\b",
    # Not "my server" or "my webhook": bots and services report to their owner's server every day.
    r"my (?:ip|c2|panel)",
)

#: Something covert: done without the owner's knowledge.
COVERT = alt(
    r"secretly",
    r"silently",
    r"covertly",
    r"stealthily",
    r"quietly",
    r"(?:without|w o) (?:\w+ ){0,3}?(?:knowing|noticing|finding out|seeing|a notification|consent|"
    r"asking|telling|"
    r"being noticed)",
    r"behind (?:his|her|their) backs?",
    r"behind the scenes",
    r"without (?:ever )?touching (?:his|her|their|the) (?:phone|device|laptop|computer)",
    r"under the hood",
    r"sneak\w* (?:\S+ ){0,3}?(?:on|onto|into)\b",
    r"when (?:he|she|they)(?:'s|'re| is| are) not (?:looking|around|home|watching)",
    r"when (?:nobody|no one) is (?:using|looking|around|home|watching|at)",
    r"hid(?:e|es|den|ing) (?:itself|it|in the background|from|on)\b",
    r"hidden",
    r"invisible (?:to|from)",
    r"undetect(?:ed|able)",
    r"survives? (?:reboots?|a reboot|factory reset|reinstall\w*)",
    r"in the background",
    r"hid(?:e|es|ing) (?:its|the) (?:icon|window|process|traffic|files?)",
)

#: Personal data a covert app would take.
PERSONAL_DATA = alt(
    r"contacts", r"sms", r"texts", r"messages", r"photos", r"location", r"call logs?", r"calls",
    r"browsing history", r"screenshots?", r"microphone", r"camera", r"webcam",
)

#: Data sent to the asker.
EXFIL_TO_ME = alt(
    r"(?:send|sends|sending|upload|uploads|uploading|forward|forwards|forwarding|e?mail|e?mails|push|pushes|"
    r"pushing|"
    r"e?mailing|post|"
    r"posts|stream|streams|ship|ships|cop(?:y|ies|ying)|sync|syncs|syncing|exfiltrat\w+)\b"
    r"[^.;?!]{0,40}?\b(?:to me|me\b|to my|to a remote|"
    r"to (?:a|my) (?:server|telegram|webhook|discord|ftp))",
    r"phones? home",
    r"(?:for|with|into) mine\b",
    r"for me to (?:read|see|watch|check|review|look at)\b",
)

CREDENTIAL = alt(
    r"passwords?",
    r"credentials?",
    r"creds",
    r"cookies?",
    r"tokens?",
    r"logins?",
    r"log ins?",
    r"sessions?",
    r"seed phrases?",
    r"wallets?",
    r"wallet addresses",
    r"(?:private|aws|ssh|api) keys?",
    r"ssns?",
    r"card numbers?",
    r"(?:mfa|2fa|otp) codes?",
)

#: People and organisations that are not the asker's own.
PERSON = alt(
    r"ex",
    r"gf",
    r"bf",
    r"hubby",
    r"wifey",
    r"ex (?:wife|husband|girlfriend|boyfriend|partner|employer)",
    r"wife",
    r"husband",
    r"girlfriend",
    r"boyfriend",
    r"partner",
    r"roommate",
    r"flatmate",
    r"neighbou?rs?",
    r"co ?workers?",
    r"colleagues?",
    r"boss",
    r"manager",
    r"teachers?",
    r"professors?",
    r"classmates?",
    r"sister",
    r"brother",
    r"friends?",
    r"landlord",
    r"cousin",
    r"nephew",
    r"niece",
    r"uncle",
    r"aunt",
    r"grand(?:mother|father|ma|pa)",
    r"step ?(?:mom|mum|dad|father|mother|son|daughter)",
    r"mom",
    r"mum",
    r"dad",
    r"parents",
    r"son",
    r"daughter",
    r"crush",
    r"competitors?",
    r"rivals?",
    r"school",
    r"university",
    r"college",
    r"employer",
    r"(?:former|old) (?:company|employer|job|school|workplace|clients?|customers?|business partners?|"
    r"landlord|tenants?)",
    r"(?:former|old|ex) (?:girlfriend|boyfriend|wife|husband|partner|roommate|flatmate|friend|colleague)",
)

#: A system named as someone else's by its possessor ("a restaurant's website", "the school's server"),
#: found from the possessive itself, so only questions with one pay for the search; the determiner is
#: matched rather than looked behind for, which costs a fraction at every position.
OTHERS_SYSTEM = (
    r"\b(?:a|an|the|some|this|that|their|his|her) (?!(?:user|customer|client|member|tenant|admin|team|"
    r"service|app|project|"
    r"cluster|container|pod|process|browser|system|server|parent|child|caller|owner|author|developer|company|"
    r"org|organi[sz]ation|today|tomorrow|yesterday|it|that|what|there|here|let|who|one)'s)"
    r"(?:(?:local|small|big|rival|random|specific|certain|particular|other|nearby) ){0,2}\w+'s "
    r"(?:\w+ ){0,2}?(?:site|website|web app|servers?|network|app|accounts?|database|db|systems?|wifi|store|"
    r"shop|portal|login|nas|router|email|inbox|cloud|aws|infrastructure|domain|computer|laptop|phone|camera|"
    r"icloud|instagram|gmail|game server|pc|pcs|machine|device|wordpress|wp|cms|blog|forum|admin panel|"
    r"backend|api|vpn|mail server|exchange|sharepoint|jenkins|gitlab)\b"
)

FOREIGN = alt(
    rf"\b(?:my|ma|mah) (?:\w+ ){{0,2}}?{PERSON}(?:'s|s'|'|s)?(?=\W|$)",
    rf"\b(?<!\bour ){PERSON}(?:'s|s')(?=\W|$)",
    OTHERS_SYSTEM,
    r"\b(?:phone|iphone|android|laptop|device|wallet|card|tablet|ipad|computer|macbook|mac|camera|drive|"
    r"hard drive|site|website|server|network|router|company|host|machine|box|admin panel|database|bucket|"
    r"usb stick)s? (?:that )?(?:i|we) "
    r"found\b",
    r"\bmy (?!company|team|org|own|startup|lab|app|site|project|client)\w+'s (?:\w+ ){0,2}?(?:site|"
    r"website|web app|"
    r"servers?|network|app|accounts?|database|db|systems?|wifi|store|shop|portal|login|nas|router|email|"
    r"inbox|"
    r"cloud|computer|laptop|phone|camera|pc)\b",
    rf"\b(?:one|this|that) {PERSON}(?:'s)?(?=\W|$)",
    # "hack ex girlfriend insta": the possessive dropped, the person still named before the thing
    rf"\b(?<!\bour ){PERSON} (?:insta\w*|phone|iphone|account|accounts|email|fb|facebook|snap\w*|whatsapp|"
    rf"icloud|"
    r"messages|texts|dms|pc|laptop|wifi|computer|location|gmail|tiktok)\b",
    r"\b(?:our )?(?:competitor|rival)(?:'s|s'|s)?\b",
    # The people one employs or houses are still other people.
    r"\bmy (?:\w+ )?(?:employees?|nanny|babysitter|housekeeper|interns?|tenants?|assistant)(?:'s|s')?\b",
    # "build a website" is the asker's own site, not someone else's.
    r"\b(?<!build )(?<!make )(?<!create )(?<!design )"
    r"(?:a|the|some) (?:specific |particular |certain |small |local |random )?(?:person|individual|"
    r"journalist|reporter|"
    r"politician|"
    r"streamer|celebrity|company|organi[sz]ation|government|hospital|bank|business|website|online store|"
    r"hotel|restaurant|clinic|newspaper|airline|agency|firm|charity|church|casino|retailer|brand|"
    r"store|shop|victim|target|city council|council|school|university)(?:'s|s')?\b",
    r"\bsomeone(?:'s| else's)?",
    r"\ba (?:specific|particular|certain) \w+(?:'s)?",
    r"\b(?:every|each|all the) (?:school|hospital|business|church|mosque|synagogue|store|shop)s?\b",
    r"\bevery (?:phone|device|laptop|computer|pc|machine)s? (?:on|in|at|connected)\b(?! (?:to )?(?:our|"
    r"my)\b)",
    r"\b(?:every|any|random) (?:\S+ ){0,2}?(?:meeting|link|server|stream|call|chat)s? (?:it|"
    r"i) (?:finds?|can find)\b",
    r"\bsomebody(?:'s)?",
    # "hack theirs back": the thing is named only by whose it is.
    r"\b(?:theirs|hers)\b",
    r"\bother (?:people|persons|users)(?:'s|')?",
    r"\bother (?:\w+ )?(?:companies|organi[sz]ations|businesses|firms|sites|websites|guests|tenants|"
    r"customers)(?:'s|')?",
    r"\banother (?:person|user)(?:'s)?",
    r"\bpeople's",
    r"\bstrangers?\b",
    r"\bstolen (?:phones?|iphones?|androids?|ipads?|macbooks?|laptops?|devices?|cards?|accounts?|"
    r"computers?|pcs?)\b",
    r"\bevery (?:player|user|visitor|member|customer|guest|employee|student)'s\b",
    r"\b(?:badges?|key ?cards?|key ?fobs?|access cards?|phones?|laptops?|passwords?|"
    r"accounts?) of (?:the|a|my|his|her) "
    r"(?:\w+ ){0,2}?(?:guard|manager|boss|coworker|colleague|admin|janitor|cleaner|receptionist|teacher|"
    r"neighbou?r)\b",
    r"\banyone who\b",
    r"\bwhoever\b",
    r"\bvictims?(?:'s|')?",
    r"\btargets?'s",
    r"\b(?<!our )(?:users|visitors|customers|employees|students|players|coworkers|classmates|"
    r"guests)'(?=\W|$)",
    r"\b(?:i|we) (?:don'?t|do not) own\b",
    r"\bnot ours\b",
    r"\b(?:any|every|whatever) (?:\S+ ){0,2}?(?:pc|computer|laptop|machine|phone|device)s? (?:it'?s|"
    r"it is|it gets) "
    r"(?:plugged|run|installed|opened)\b",
    r"\bnone of (?:them|these|those|the \w+) (?:are|is|belongs? to) (?:mine|ours|me|us)\b",
    r"\b(?:servers?|sites?|websites?|networks?|streams?|channels?|shops?|stores?) of (?:the|a|that|this|"
    r"some) "
    r"(?:\w+ ){0,2}?(?:clan|guild|team|group|guy|person|streamer|rival|player|kid|gang|crew)s? (?:that|"
    r"who)\b",
    r"\bnext door\b",
    r"\b(?:down|across|up) the (?:street|road|hall)\b|\baround the corner\b",
    r"\b(?:i|we) (?:got|was|were|am|are|have been) banned from\b",
    r"\b(?:employees|customers|users|students) (?:of|at)\b",
    r"\btheir (?!own\b)(?:\w+ ){0,2}?(?:workspace|google workspace|tenant|slack|"
    r"o365|"
    r"office 365|m365|sharepoint|drive|cloud|site|website|server|servers|network|account|"
    r"accounts|phone|computer|pc|wifi|router|"
    r"portal|app|database|email|inbox|systems?)\b",
    # Not the names reserved for examples (example.com, example.org…): they stand for the asker's own.
    r"\b(?:www \S+|(?!example\.)\w+\.(?:com|net|org|gov|edu|io))\b",
    r"\b(?:any|every|all) \w+ (?:sites?|servers?|routers?|devices?|phones?) (?:running|that|with)\b",
    r"\bunpatched \w*\s?(?:servers|sites|hosts|companies|machines|devices)\b",
    r"\bcompanies that haven'?t\b",
    r"\b(?:a )?lists? of (?:usernames|accounts|emails|users|targets|victims|phone numbers)\b",
    r"\b(?:isn'?t|aren'?t|is not|are not|not) mine\b",
    r"\bdoesn'?t belong to me\b",
    r"\b(?:random|other people's|strangers') (?:websites|sites|servers|people|users|targets|companies|"
    r"networks)\b",
    r"\b(?:thousands|hundreds|millions|lots) of (?:\S+ ){0,2}?(?:routers|devices|computers|machines|phones|"
    r"cameras|servers|accounts|pcs|sites|websites|companies|businesses|organi[sz]ations)\b",
    r"\bthe (?:whole )?internet\b",
    r"\bcompromised (?:hosts|machines|servers|pcs|computers|devices)\b",
    r"\b(?:government|hospital|city council|bank)(?:'s|s)? (?:\w+ )?(?:website|site|server|network|"
    r"systems?)\b",
    # public utilities: "our city's water utility", "a regional power grid"
    r"\b(?:our |the |a |an )?(?:city|town|county|country|state|municipal|regional|local|national)(?:'s)? "
    r"(?:water|power|electric|electricity|gas|wastewater|sewage) (?:utilit(?:y|ies)|plants?|grid|company|"
    r"treatment|systems?|authority|supply)\b",
    r"\b(?:servers?|hosts?|machines?|devices?|systems?|networks?|sites?|accounts?) (?:belonging|that belong) "
    r"to (?:a|an|the|some|that|this) (?!(?:client|customer|user|tenant)s?\b)",
)

#: The asker's own systems or an authorised test.
OWN = alt(
    r"\bmy (?:own )?(?:company|team|org|organi[sz]ation|startup|lab)'?s\b",
    r"\bour\b(?! (?:city|town|county|country|village|municipality|nation|state|government)'s\b)"
    r"(?! (?:city|town|county|country|village|municipal|local) (?:water|power|electric|gas|election|ballots?|"
    r"council|government|hospital|police)\b)",
    r"\bours\b", r"\bmy own\b", r"\bstaging\b", r"\blocalhost\b", r"\bhome lab\b", r"\bctf\b"
)

#: The asker says they have no authorization.
UNAUTHORIZED = alt(
    r"(?:without|no|not|n't|never) (?:\w+ ){0,3}?(?:authori[sz](?:ation|ed)|permission|consent|admin rights)",
    r"without asking",
    r"after (?:he|she|they) changed (?:his|her|their|the) (?:\w+ )?(?:password|passcode|pin)",
    r"(?:he|she|they|my (?:\w+ )?(?:ex|wife|husband|girlfriend|boyfriend|partner)) chang(?:e|ed|es) "
    r"(?:(?:his|her|their|the) )?"
    r"(?:\w+ )?(?:passwords?|passcodes?|pins?|locks?)",
    r"(?:i|we) (?:don'?t|do not) know (?:his|her|their|the owner's) (?:\w+ )?(?:passcode|password|pin|code)",
    r"(?:no longer|not|never) (?:supposed|allowed|permitted|meant) to (?:access|use|log ?in|be in|have)",
    r"(?:not|n'?t) affiliated with",
    r"(?:i|we) (?:don'?t|do not) (?:administer|manage|own|run)\b",
    r"(?:broke|hacked|got) into (?:a|the|their|his|her|this) (?:\w+ ){0,2}?(?:computer|pc|server|machine|"
    r"network|box|host|system|laptop|phone|router)",
    r"(?:computer|pc|server|machine|network|box|host|system) i (?:got|broke|hacked) into",
    r"(?:after|once) i (?:get|got|break) in\b",
    r"after (?:breaking|getting|hacking) in(?:to)?\b",
)

# --- cyber: actions against a target --------------------------------------------------------

ACCESS = alt(
    r"hack(?:s|ed|ing)?(?: into)?",
    r"break(?:s|ing)? into",
    r"broke into",
    r"get(?:ting)? (?:me )?into",
    r"got into",
    r"get (?:access|in)\b",
    r"wants? (?:back )?into",
    r"get(?:ting)? (?:me )?onto",
    r"gain(?:ing)? access",
    r"way into",
    # "take over maintenance of her project" is a handover, not a takeover.
    r"take(?:s)? over(?! (?:the )?(?:maintenance|maintainership|ownership|development|support|role|duties|"
    r"responsibilit\w*|project|repo\w*|codebase|shift))",
    r"taking over",
    r"takeover",
    r"take(?:s|ing)? control",
    r"chang(?:e|es|ing) (?:his|her|their) (?:\w+ )?(?:email|e ?mail address|password|phone number|recovery "
    r"(?:email|phone))",
    r"took control",
    r"log(?:s|ging)? (?:in ?to|onto)",
    r"sign(?:s|ing)? into",
    r"compromis(?:e|es|ing)",
    r"pwn\w*",
    r"crack(?:s|ing)?",
    r"get (?:admin|root)",
    r"brute ?forc\w*",
    r"get (?:\S+ ){0,2}?passwords? (?:of|for|to)",
    r"(?:get|grab|steal|obtain|extract|sniff|capture|find out|pull)\w* (?:\S+ ){0,3}?(?:passwords?|"
    r"passcodes?|pws?|pwds?|"
    r"creds|"
    r"credentials|logins?|pins?)\b",
    r"tr(?:y|ies|ying) (?:every|all|each|many|common|\S+ of) (?:\S+ ){0,2}?(?:passwords?|codes?|pins?|"
    r"passcodes?|"
    r"combinations?)",
    r"reset(?:s|ting)? (?:\S+ ){0,3}?(?:passwords?|apple ids?|icloud|google accounts?|accounts?)\b",
    r"log(?:s|ging)? ?in as",
    r"read(?:s|ing)? (?:\S+ ){0,3}?(?:dms|direct messages|messages|texts|emails?|inbox|chats?|whatsapp)",
    r"spy(?:ing)? on",
    r"listen(?:s|ing)? in on",
    r"eavesdrop\w*(?: on)?",
    r"tap(?:s|ping)? (?:into )?(?:\S+ )?(?:calls|phone|line)",
    r"(?:see|view|open|access|record|capture|export|read)(?:s|ing)? (?:\S+ ){0,3}?(?:home director(?:y|ies)|"
    r"private files|dms|direct messages|"
    r"messages|texts|emails?|"
    r"inbox|chats?|"
    r"whatsapp|photos|icloud)",
    r"(?:from|with|using) a (?:wordlist|word list|password list|dictionary)",
    r"retr(?:y|ies|ying) (?:\S+ ){0,3}?passwords?",
    r"guess(?:es|ing)? (?:\S+ ){0,3}?(?:passwords?|codes?|pins?|passcodes?)",
    r"get(?:ting)? (?:\S+ ){0,3}?(?:dms|direct messages|messages|texts|emails|inbox|chats|photos)\b",
    r"get(?:ting)? past (?:the )?(?:login|log in|lock ?screen|passcode|password|pin|screen lock)",
    r"guess(?:es|ing)? (?:every|all|each|many|common|\S+ of) (?:\S+ ){0,2}?(?:passwords?|codes?|pins?|"
    r"passcodes?|"
    r"combinations?)",
    r"unlock(?:s|ing)?(?= (?:\S+ ){0,3}?without (?:the |a |its |their |his |her )?(?:passcode|password|"
    r"pin|code))",
    # "unlock" takes a device or an account: "unlock premium reports for a company's users" is billing.
    r"unlock(?:s|ing)?(?= (?:\S+ ){0,3}?(?:phones?|iphones?|androids?|devices?|laptops?|computers?|pcs?|"
    r"macs?|tablets?|ipads?|accounts?|icloud|sim|bootloaders?|wallets?|vaults?|password managers?)\b)",
    r"change (?:my )?grades",
    r"dump(?:s|ing)? (?:\S+ ){0,3}?(?:icloud|photos|messages|texts|dms|emails?|inbox|chats?|whatsapp|"
    r"contacts|keychain|camera roll)",
    # "tell me which default credentials are most likely to work": the way in, asked for
    r"(?:which|what) (?:\S+ ){0,2}?(?:credentials|passwords?|logins?|creds|passcodes?) (?:\S+ ){0,4}?(?:work|"
    r"get me in|let me in|log me in)",
)

DOS = alt(
    r"d?dos(?:es|ing|ed)?",
    r"send(?:s|ing)? (?:\S+ ){0,3}?(?:millions?|thousands|tons|lots)(?: of)? requests",
    r"flood(?:s|ing)?",
    r"overwhelm(?:s|ing)?",
    r"take(?:s)? down",
    r"taking down",
    r"tak(?:e|es|ing) (?:their|his|her|the|a|an|that|this) (?:\w+ ){0,2}?(?:site|website|server|store|shop|"
    r"stream|service|app|game server)s? (?:down|offline)",
    # "take my rival's Minecraft server offline": whoever's it is, the checks below read it
    r"tak(?:e|es|ing) \w+'s (?:\w+ ){0,2}?(?:site|website|server|store|shop|stream|service|app|portal|"
    r"network)s? (?:down|offline)",
    r"(?:booter|stresser|ip stresser)s?",
    r"jam(?:s|ming|med)? (?:his|her|their|\w+'s) (?:\S+ ){0,2}?(?:wi ?fi|signal|cameras?|phones?|gps|network|"
    r"router|doorbell)",
    r"bring(?:s|ing)? (?:it |them |\w+ )?down",
    r"knock(?:s|ing)? (?:\S+ ){0,6}?(?:offline|out)",
    r"knock(?:s|ing)? (?:\S+ ){7,10}?offline",
    r"crash(?:es|ing)?",
    r"swamp(?:s|ing)?",
    r"hammer(?:s|ing)?",
    r"overload(?:s|ing)?",
    r"(?:keep|keeps|keeping|make|makes|making) (?:\S+ ){0,4}?(?:so busy|so slow|unusable|unplayable|"
    r"unreachable|"
    r"unavailable|stop (?:working|responding)|go (?:offline|down|dark))",
    r"(?:junk|garbage|bogus) (?:packets|traffic|requests)",
    r"amplification (?:vectors?|attacks?)",
    r"hit(?:s|ting)? (?:\S+ ){0,4}?ip (?:address )?with",
)

DOS_OUTCOME = alt(
    r"(?:sites|websites|servers|services)\b",
    r"until (?:it|they|the \w+) (?:crash\w*|goes down|go down|dies|die|falls over|is down)",
    r"so (?:customers|users|players|people|nobody|no one) can'?t",
    r"until (?:it|they|the \w+) stops? (?:taking|working|responding|accepting|loading)",
    r"(?:customers|users|players|people|everyone|nobody|no one) (?:\S+ )?(?:can'?t|"
    r"cannot) (?:get through|connect|book|order|buy|log in|"
    r"play|use|reach|access)",
    r"for everyone",
)

#: Words that ask for code when a tooling word stands with no verb ("keylogger in python pls").
CODE_REQUEST = alt(
    r"source code", r"code", r"script", r"program", r"download", r"please", r"pls", r"plz",
    r"in (?:python|c|c\+\+|c#|rust|go|golang|java|javascript|powershell|bash|assembly|nim)",
)

#: Vulnerability words: the object of ``exploit`` when it is an attack, not an idiom.
VULN = alt(
    r"vulnerabilit\w+",
    r"vulns?",
    r"bugs?",
    r"flaws?",
    r"(?:sql |command |code )?injection",
    r"rce",
    r"overflow",
    r"cve \d+ \d+",
    r"holes?",
    r"misconfiguration",
    r"(?:open )?redirects?", r"csrf", r"ssrf", r"idor", r"xss", r"xxe", r"deseriali[sz]ation",
    r"race conditions?",
    r"login",
    r"portal",
    r"unpatched",
)

EVADE_STRONG = alt(
    r"evad(?:e|es|ing)",
    r"evasion",
    r"bypass(?:es|ing)?",
    r"get(?:s|ting)? (?:\w+ ){0,3}?past",
    r"(?:slip|sneak)(?:s|ping)? (?:\w+ ){0,2}?past",
    r"get around",
    r"(?:beat|beats|beating|fool|fools|fooling|dodg(?:e|es|ing)|outsmart\w*)",
    r"unhook\w*",
    r"blind(?:s|ing)?",
    r"invisible (?:to|from)",
    r"undetect(?:able|ed)",
    r"(?:won'?t|not|isn'?t|never) be (?:flagged|detected|caught|seen)",
    r"(?:doesn'?t|don'?t|can'?t|cannot|won'?t|never|nobody|no one) (?:detect|flag|catch|see|notice|"
    r"spot)(?:s|es)?",
    r"stop(?:s|ped)? (?:recogni[sz]\w*|detect\w*|flagg\w*|noticing|seeing|catching)",
    r"(?:zero|no|0) detections",
    r"fud",
    r"no (?:\S+ ){0,6}?(?:flags?|detects?|catches|notices) (?:it|them|this|the file|the binary)",
    r"fully undetectable",
    r"hid(?:e|es|ing) (?:\w+ ){0,3}?from",
    r"avoid(?:s|ing)? (?:being )?(?:detect\w*|flag\w*|caught|seen|notic\w*)",
    r"without (?:\w+ ){0,3}?(?:noticing|detecting|flagging|catching|seeing)",
)

#: Staying unseen, which only an intruder needs: judged with a sign of malice or no authorization.
STEALTH = alt(
    r"(?:stay|stays|staying|remain|remaining|keep|keeping) (?:hidden|undetected|invisible|unnoticed)",
    r"avoid(?:s|ing)? (?:detection|being (?:detected|noticed|caught))",
    r"cover(?:ing)? (?:my|our) tracks",
    r"(?:stop|keep|prevent)\w* (?:\S+ ){0,3}?from (?:finding|noticing|seeing|discovering)",
    r"(?:erase|remove|wipe|delete|clear|hide)\w* (?:\S+ ){0,2}?(?:traces?|evidence) (?:that|of)",
)

#: Own, legitimate software being flagged: a false positive to fix, not a control to evade.
LEGIT_SOFTWARE = alt(
    r"(?:our|my own) (?:\S+ ){0,2}?(?:installer|app|application|product|software|binary|build|package|"
    r"updater|agent|driver|game|launcher|tool)s?",
    r"legit(?:imate)?",
    r"false positives?",
    r"code sign\w*",
)

EVADE_WEAK = alt(
    r"disabl(?:e|es|ing)",
    r"turn(?:s|ing)? off",
    r"kill(?:s|ing)?",
    r"clear(?:s|ing)?",
    r"wip(?:e|es|ing)",
    r"delet(?:e|es|ing)",
    r"tamper\w*",
    r"uninstall\w*",
)

CONTROL_STRONG = alt(
    r"edrs?",
    r"xdr",
    r"\bav\b",
    r"anti ?virus(?:es)?",
    r"anti ?malware",
    r"(?:microsoft |windows )?defender",
    r"windows security",
    r"crowdstrike",
    r"falcon",
    r"sentinel ?one",
    r"carbon black",
    r"sophos",
    r"mcafee",
    r"symantec",
    r"kaspersky",
    r"eset",
    r"malwarebytes",
    r"amsi",
    r"etw",
    r"virustotal",
    r"security (?:software|products?|tools?|team|monitoring|stack)",
    r"\bsoc\b",
    r"siem",
    r"analysts?",
    r"it (?:team|department|staff|admins?)(?:'s)?",
    r"\bdlp\b",
    r"anti ?cheat\w*",
    r"vanguard",
    r"battl ?eye",
    r"easy ?anti ?cheat",
    r"data loss prevention",
)

CONTROL_WEAK = alt(
    r"sandbox(?:es)?",
    r"firewalls?",
    r"\bids\b",
    r"\bips\b",
    r"task (?:manager|list)",
    r"event logs?",
    r"audit logs?",
    r"\blogs\b",
    r"\bps\b",
    r"detection",
    r"monitoring",
    r"logging",
    r"(?:email|mail|spam|attachment) (?:scanners?|filters?|gateways?|security)",
    r"scanners?",
    r"multi ?engine",
)

# --- cyber: behaviour described without naming the tool ---------------------------------------

RANSOM_ACT = (
    r"into (?:gibberish|garbage|junk|"
    r"noise|unreadable \w+)|"
    r"(?:encrypt\w*|lock\w*|scrambl\w*|hold\w*)\s+(?:\S+\s+){0,5}?(?:files?|documents?|data|drives?|shares?|"
    r"servers?|disks?|computers?|pcs?|machines?|photos?|everything|folders?|records|databases?)\b"
)
RANSOM_DEMAND = alt(
    r"ransom(?!ware)\w*",
    r"hostage",
    r"pay(?:s|ing)? (?:me|us|up|them|to (?:get|unlock|decrypt|recover)|in (?:bitcoin|btc|monero|xmr|crypto))",
    r"pay(?:s|ing)? (?:\S+ ){0,2}?(?:btc|bitcoin|monero|xmr|crypto|eth)\b",
    r"to get (?:the|their|your) (?:decryption )?key",
    r"payment (?:to|for) (?:decrypt|unlock|recover|the key|get)",
    r"asks? for (?:a )?payment",
    r"demand\w* (?:a |the )?(?:ransom|payment|money|bitcoin|btc|monero|crypto)",
    r"(?:bitcoin|btc|monero|crypto) for the key",
    r"until they (?:pay|send)",
    r"send (?:me )?(?:bitcoin|btc|monero|crypto)",
    r"get (?:them|it|their \w+) back",
    r"key back",
    r"(?:my|a) (?:bitcoin|btc|monero|xmr|crypto|wallet) (?:address|wallet)",
    r"ransom notes?",
    r"(?:leaves?|drops?|shows?) a note",
)
#: Access given back for payment: ransom when aimed at someone else's files, billing when at a customer's.
PAYMENT_UNLOCK = (
    r"(?:unlock|decrypt|restor|releas|return)\w* (?:\S+ ){0,3}?(?:after|once|when|until|for) (?:\S+ ){0,2}?"
    r"(?:payment|paid|pays?|paying)\b"
)
KEYLOG = (
    r"\b(?:record|records|recording|capture|captures|capturing|log|logs|logging|grab|grabs|see|sees|watch|"
    r"watches)\s+(?:\S+\s+){0,3}?(?:keystrokes?|every key(?:stroke)?|keys? (?:pressed|typed)|everything "
    r"(?:\S+ ){0,2}?(?:types?|typed|does)|what (?:\S+ ){0,2}?(?:types?|typed)|"
    r"(?:every )?passwords? (?:\S+ ){0,2}?types?)"
    r"|\b(?:what|everything) (?:he|she|they|my \S+|the user|someone|people|users) (?:types|typed|type)\b"
)
STEAL = (
    r"\b(?:steal|steals|stealing)\s+(?:\S+\s+){0,4}?"
    + alt(
        CREDENTIAL, r"data", r"files?", r"money", r"funds", r"crypto\w*", r"coins?", r"identit\w+",
        r"accounts?", r"info\w*", r"secrets?", r"keys?", r"messages?", r"photos?", r"emails?", r"documents?",
        r"source code",
    )
)
TAKE_CREDENTIALS = (
    r"\b(?:grab|grabs|grabbing|harvest|harvests|harvesting|dump|dumps|dumping|copy|copies|copying|take|takes|"
    r"taking|collect|collects|collecting|extract|extracts|extracting|capture|captures|capturing|exfiltrat\w*|"
    r"swap|swaps|replace|replaces)\s+(?:\S+\s+){0,4}?" + CREDENTIAL
)
#: An account added for the asker on a machine that is not theirs.
BACKDOOR_ACCOUNT = (
    r"\badd\w* my (?:ssh |public |api |own )?keys? to (?:their|his|her|the \w+'s|someone'?s|every|each|other|"
    r"any)\b|"
    r"\b(?:add|adds|adding|create|creates|creating|make|makes)\s+(?:a |an )?(?:hidden|secret|backdoor|"
    r"invisible)"
    r" (?:admin|administrator|root|user|ssh|local) ?(?:account|user|key|login)?"
)
FOR_ME_ON = (
    r"\bfor me\b|\bon (?:the|their|his|her|every|each) (?:pc|computer|machine|device|laptop|server)s?\b"
)
#: Reading credentials, which is theft only when they are sent on to the asker.
READ_CREDENTIALS = (
    r"\b(?:read|reads|reading|pull|pulls|pulling|fetch|fetches|fetching|lift|lifts|scrape|scrapes|scraping)"
    r"\s+(?:\S+\s+){0,6}?" + CREDENTIAL
)
REMOTE_CONTROL = alt(
    r"(?:lets?|allows?|gives?) me (?:\w+ ){0,2}?(?:control|run|execute|access|a shell|full|remote)",
    r"so (?:that )?i (?:can )?(?:see|watch|read|view|control|access|mirror) (?:his|her|their|"
    r"\w+'s) (?:screen|"
    r"messages|texts|chats|phone|computer|laptop|pc|camera|webcam|keystrokes|browsing)",
    r"(?:type|send|issue|run)s? commands? (?:on|to) (?:the|their|his|her|a|any|every|\w+'s) ",
    r"(?:control|run (?:any )?commands?|execute commands?) (?:\S+ ){0,4}?(?:from anywhere|remotely|from my)",
    r"opens? a (?:reverse )?shell to my",
    r"(?:shell|connection) (?:back )?to my (?:ip|server|machine|vps|box|host)",
    r"waits? for (?:my )?commands",
    r"waits? for (?:a |my )?commands? from my",
    r"keep control of",
    r"shows? me (?:his|her|their|\w+'s) (?:screen|messages|texts|chats|camera|webcam|location|keystrokes)",
    r"(?:lets?|allows?|gives?) me (?:\w+ ){0,2}?(?:his|her|their|\w+'s) (?:webcam|camera|screen|mic|"
    r"microphone|files|"
    r"messages|keystrokes)",
    r"(?:lets?|allows?|gives?) me (?:\w+ ){0,2}?(?:see|watch|use|type on|read|control|access) (?:his|her|"
    r"their|"
    r"someone's|my \w+'s)",
)
SELF_SPREAD = alt(
    r"self (?:replicating|spreading|propagating)",
    r"spread\w* (?:\S+ ){0,5}?(?:by itself|on its own)",
    r"(?:copies|copy|copying|installs|install|installing) itself (?:to|on|onto|into) "
    r"(?:every|each|other|all|any|usb|shared|removable|network)",
    r"spread\w* (?:by copying|from (?:computer|machine|host|pc|device) to|on its own|itself|"
    r"to (?:every|all|other)|across (?:the |a )?(?:\w+ )?(?:network|hosts|machines)|"
    r"(?:through|over|via|using|by) (?:email|the network|usb|smb|shared|removable|network shares|bluetooth))",
    r"infect\w* (?:every|other|all|each|any) (?:\S+ ){0,2}?(?:computers?|machines?|hosts?|pcs?|devices?|"
    r"files?|servers?|routers?|cameras?)",
)
#: What an info-stealer takes: the secrets a browser or wallet keeps on the machine.
LOOT = (
    r"(?:browser (?:data|profiles?|passwords?|cookies|history|sessions?|storage)|saved (?:passwords|logins|"
    r"credentials|cards|card details)|autofill (?:data)?|login data|session (?:cookies|tokens)|"
    r"(?:crypto )?wallet "
    r"files|keychains?|discord tokens?|(?:chrome|firefox|edge|browser)'?s? (?:passwords|cookies|logins|"
    r"profile))"
)
TAKE_LOOT = (
    r"\b(?:cop(?:y|ies|ying)|grab\w*|steal\w*|pull\w*|dump\w*|extract\w*|collect\w*|harvest\w*|read\w*|"
    r"upload\w*|send\w*|exfiltrat\w*|lift\w*|scoop\w*|sweep\w*)\s+(?:\S+\s+){0,3}?" + LOOT
)
#: Taken from whatever machine the program is run on: not the asker's own.
OFF_HOST = (
    r"\b(?:off|from|on|of) (?:the|any|every|each|whatever|a) (?:\w+ )?(?:machine|computer|pc|host|"
    r"device|system|"
    r"box|laptop|phone)s? "
    r"(?:it|this|that) (?:runs?|lands?|is run|gets? run|is installed|infects?|reaches|'s run|'s plugged|"
    r"is plugged)"
)
MINING = alt(
    r"(?:spin|start|run|deploy|launch|install)\w* (?:up )?(?:\S+ ){0,2}?(?:crypto ?|coin ?)?miners?\b",
    r"\b(?:mine|mines|mining)\s+(?:\S+\s+){0,3}?(?:monero|coins?|crypto\w*|bitcoin|xmr|ethereum)",
    r"(?:monero|crypto) min(?:er|ers|ing)",
    r"mining rigs?",
)
PHISH_LOOK = (
    r"\b(?:fake|clone[sd]?|cloning|look\w* (?:exactly )?like|lookalike|spoof\w*|imitat\w*|impersonat\w*|"
    r"pretend\w* to be|disguised as|copy of)\b[^.;?!]{0,60}?\b(?:login|log in|sign in|signin|page|site|"
    r"website|portal|sms|text|email|bank|form)"
)
PHISH_TAKE = alt(
    r"collect\w*",
    r"captur\w*",
    r"harvest\w*",
    r"steal\w*",
    r"sav(?:e|es|ing)",
    r"forward\w*",
    r"whatever (?:people|they|users) type",
    r"send\w*",
) + r"\b[^.;?!]{0,40}?" + alt(
    CREDENTIAL, r"whatever", r"it\b", r"(?:entered |typed |login |card |bank )details"
)
TRICK = (
    r"\b(?:trick\w*|fool\w*|lur(?:e|es|ing)|deceiv\w*|dupe\w*)\s+(?:\S+\s+){0,5}?into (?:entering|typing|"
    r"giving|sharing|revealing|clicking|installing|running)"
)
DESTROY = (
    r"\b(?:delet\w*|wip(?:e|es|ing)|destroy\w*|corrupt\w*|brick\w*|"
    r"overwrit\w*)\s+(?:\S+\s+){0,4}?(?:backups?|"
    r"shadow copies|boot sector|mbr|firmware|(?:production |prod )?databases?|every (?:machine|"
    r"computer|pc|server|file|disk|drive)|"
    r"all (?:the )?(?:files?|data|machines|computers|disks|drives|servers))"
)
#: A wiper's signs beyond malice: the backups destroyed with the data, or a timer that sets it off.
WIPER_SIGN = (
    r"\b(?:(?:and|then|also) (?:delet|wip|destroy|encrypt|corrupt)\w* (?:\S+ ){0,2}?backups|waits? (?:until|"
    r"till) "
    r"(?:midnight|\d)|(?:logic|time) bombs?)"
)
LEAKED_LIST = (
    r"\b(?:leaked|stolen|breached|dumped|combo)\s+(?:\S+\s+){0,3}?(?:lists?|passwords?|credentials?|"
    r"creds|emails?|"
    r"keys?|combos?)|\b(?:lists?|emails?|logins?|credentials|passwords?|"
    r"accounts?) (?:\S+ ){0,4}?from (?:a |the )?"
    r"(?:leaked|breached|dumped|hacked|stolen) "
)
#: Testing which stolen items still work (cards, logins).
STILL_WORK = (
    r"\b(?:see|find out|test|check|know) which (?:ones? |of them )?(?:still )?(?:work|are valid|are live)"
)
LIST_USE = alt(
    r"against",
    r"tr(?:y|ies|ying) (?:each|every|them|it|all)",
    r"working (?:logins?|accounts?|passwords?|creds)",
    r"post\w* (?:them|it)",
    r"log\w* (?:in ?to|onto)",
    r"automat\w*",
    r"tries",
    r"try",
    r"trying",
    r"to access",
    r"to get into",
    r"takeover",
    r"take over",
    r"spin up",
    r"\buses?\b",
    r"using",
)
MONITOR = alt(
    r"read(?:s|ing)?",
    r"log(?:s|ging)? (?:every|all|each)",
    r"track(?:s|ing|er|ers)?",
    r"watch(?:es|ing)?",
    r"see (?:what|where|everything|who)",
    r"see (?:his|her|their|\w+'s) (?:screen|messages|texts|chats|browsing|location)",
    r"spy(?:ing)?",
    r"record(?:s|ing)?",
    r"monitor(?:s|ing)?",
    r"captur(?:e|es|ing)",
    r"forward(?:s|ing)?",
    r"intercept(?:s|ing)?",
    r"listen(?:s|ing)?",
    r"stream(?:s|ing)?",
    r"turn(?:s)? on",
    r"webcam",
    r"(?:hidden )?cameras?",
    r"microphone",
    r"location",
    r"where (?:she|he|they) (?:is|are|goes)",
)
MASS_EXPLOIT = (
    r"\bscan\w* (?:the )?(?:whole )?internet\b[^.;?!]{0,60}?\b(?:compromis\w*|exploit\w*|infect\w*|hack\w*|"
    r"take\w* over|backdoor\w*)"
)
CHAIN_BUGS = (
    r"\bchain\w*\s+(?:\S+\s+){0,4}?(?:bugs|vulnerabilities|vulns|exploits|cves)\b[^.;?!]{0,60}?\b(?:takeover|"
    r"take over|code execution|rce|root|admin|shell|access)"
)
TURN_INTO_EXPLOIT = (
    r"\b(?:turn|convert|make|weaponi[sz]e)\w*\s+(?:\S+\s+){0,5}?into (?:a |an )?(?:\S+ ){0,3}?exploit"
)
EXPLOIT_NOUN_BEFORE = words(
    "a an the this that my your working reliable weaponized weaponised full public rce kernel browser "
    "remote local 0day new real functional complete any stable"
)
EXPLOIT_NOUN_AFTER = words("chain chains kit kits code for against that which to")

# --- biological, chemical and weapons harm ----------------------------------------------------

BIO_AGENT = alt(
    r"pathogens?",
    r"virus(?:es)?",
    r"bacteri(?:um|a|al)",
    r"germs?",
    r"diseases?",
    r"anthrax",
    r"bacillus anthracis",
    r"smallpox",
    r"variola",
    r"plague",
    r"yersinia",
    r"ebola",
    r"marburg",
    r"h5n1",
    r"(?:avian|bird) flu",
    r"flu",
    r"influenza",
    r"coronavirus(?:es)?",
    r"sars",
    r"mers",
    r"botulinum",
    r"botulism",
    r"ricin",
    r"abrin",
    r"toxins?",
    r"spores?",
    r"bio ?weapons?",
    r"biological (?:weapons?|agents?)",
    r"prions?",
    r"salmonella",
    r"listeria",
    r"cholera",
    r"e coli",
    r"tuberculosis",
    r"measles",
    r"polio",
    r"norovirus",
    r"(?:contagious|infectious) (?:illness|illnesses|diseases?|agents?)",
    r"illness(?:es)?",
)
BIO_ACT = words(
    """synth
    culture culturing cultured grow grows growing cultivate cultivating synthesize synthesise synthesizing
    synthesising synthesis make making produce producing create creating engineer engineering modify modifying
    enhance enhancing enhanced increase increasing boost boosting weaponize weaponise weaponizing
    weaponising aerosolize aerosolise aerosolizing disperse dispersing release releasing spread spreading
    extract extracting purify purifying concentrate concentrating obtain acquire isolate design designing
    protocol function recipe steps instructions bring bringing revive reviving resurrect resurrecting recreate
    made produced synthesized synthesised cultured grew engineered weaponized weaponised
    recreating reconstruct reconstructing breed breeding dispersal aerosolization aerosolisation"""
)
BIO_RIGHT = alt(
    r"more (?:transmissible|contagious|lethal|deadly|virulent|infectious|resistant|dangerous)",
    r"(?:deadlier|more deadly|more lethal|more dangerous|more infectious|more contagious)",
    r"spread (?:faster|more easily|easily|further|furthest|farthest|widest|between)",
    r"(?:evades?|escape|resist\w*) (?:\w+ )?(?:vaccines?|antibiotics?|immunity)",
    r"in quantity",
    r"(?:binding|transmissibility|lethality|virulence) ",
    r"to (?:make|synthesi[sz]e|produce|culture|grow|spread|release)",
    r"would (?:destroy|kill|wipe out|devastate)",
)
CHEM_AGENT = alt(
    # The commonest names in German and Spanish: the judge reads English, with these few words besides.
    r"armas? qu[ií]micas?", r"chemische (?:waffen?|kampfstoffe?)", r"nervengas", r"gas nervioso",
    r"sarin",
    r"\bvx\b",
    r"tabun",
    r"soman",
    r"cyclosarin",
    r"novichok",
    r"nerve (?:agents?|gas)",
    r"mustard gas",
    r"sulfur mustard",
    r"chlorine gas",
    r"phosgene",
    r"(?:hydrogen )?cyanide",
    r"chloroform",
    r"ricin",
    r"abrin",
    r"toxic (?:gas|fumes|vapou?rs?|smoke)",
    r"poison(?:ous)? gas",
    r"chemical (?:weapons?|agents?|release)",
    r"poisons?(?! (?:pill|pills|message|messages|queue|queues))",
    r"toxins?",
    r"(?:mustard|blister|choking|blood|vesicant|incapacitating) (?:\w+ )?(?:gas|agents?)",
    r"lewisite",
    r"vesicants?",
    r"(?:gas|agent|chemical|poison|substance|toxin)s? (?:that was |which was )?used (?:in|during|"
    r"for) (?:\S+ ){0,4}?"
    r"(?:attacks?|assassinations?|massacres?|poisonings?|gassings?)",
    r"(?:gas|vapou?rs?|fumes|smoke|mixture|chemical|substance|compound|liquid|powder|spray|something) "
    r"(?:\S+ ){0,3}?(?:that |which )?"
    r"(?:would|will|could|can|to) (?:\S+ )?(?:knock (?:\S+ )?out|kill|poison|harm|hurt|incapacitate|sicken|"
    r"clear (?:a |the )?(?:room|building|crowd|area|train|bus)|drive out|"
    r"make (?:\S+ ){0,5}?(?:sick|ill|pass out|unconscious|vomit|collapse)|"
    r"suffocate|blind|burn)",
    r"(?:something|gas|fumes|mixture|vapou?r) (?:\S+ )?(?:lethal|deadly|toxic|poisonous) to (?:breathe|"
    r"inhale|"
    r"people|humans)",
)
CHEM_ACT = words(
    """synthesize synthesise synthesizing synthesising synthesis make making produce producing mix mixing
    prepare brew cook obtain precursors precursor recipe route pathway pathways reaction reactions reagents
    reagent procedure release releasing disperse dispersing spread
    aerosolize extract purify buy acquire create manufacture plan combine combined combining fill whip makes
    produces synthesizes synthesises cooks brews mixes prepares made produced synthesized synthesised cooked
    brewed mixed prepared extracted fabricar hacer preparar producir herstellen stelle herstelle mischen"""
)
CHEM_RIGHT = alt(
    r"to (?:make|synthesi[sz]e|produce|brew|mix|cook)", r"(?:is|are) untraceable", r"can'?t be traced",
    r"(?:(?:is|are|gets?|get|was|were) (?:\S+ )?)?(?:generated|made|produced|synthesi[sz]ed|prepared|formed|"
    r"manufactured|brewed|cooked|extracted|weaponi[sz]ed)\b"
)
WEAPON_AGENT = alt(
    r"sprengs(?:a|ä)tze?|sprengstoffe?|rohrbomben?|bomben?|bombas?|explosivos?|artefactos? explosivos?",
    r"(?:pipe ?|car |nail |dirty )?bombs?",
    r"(?:pipe|car|nail|dirty) bom\b",
    r"ieds?",
    r"explosives",
    r"(?:an|the) explosive\b",
    r"explosive(?= (?:for|to|that|which|at|in|from|with|on|onto|into|i|we|you|do|can)\b)",
    r"explosive (?:devices?|materials?|charges?|compounds?|mixtures?|vests?|belts?)",
    r"tatp",
    r"nitroglycerin\w*",
    r"hmtd",
    r"petn",
    r"\brdx\b",
    r"anfo",
    r"napalm",
    r"thermite",
    r"detonators?",
    r"grenades?",
    r"molotovs?",
    r"(?:hand|ghost )?guns?",
    r"firearms?",
    r"rifles?",
    r"pistols?",
    r"(?:fully |full )auto(?:matic)?",
    r"auto sears?",
    r"silencers?",
    r"suppressors?",
    r"nuclear weapons?",
    r"(?:a |the )weapons?",
    r"enrich\w* uranium",
    r"blow(?:s|ing)? (?:\S+ )?up (?:a |the |my |his |her |their )?(?:\w+ )?(?:car|cars|building|school|"
    r"house|bus|"
    r"mailbox|mailboxes|atm|statue|door|safe|wall|truck|office|"
    r"train|station|bridge|people|crowd|plane|office|church|mosque|synagogue|stadium|city)",
    r"(?:device|thing|something|package|box|car|vehicle|drone|bottle)\b[^.;?!]{0,30}?\b"
    r"(?:explod\w*|detonat\w*|blows? up|goes off|go off)",
    r"explod\w* (?:in|at|on|near|when) (?:a |the )?(?:crowd\w*|car|building|school|package|house|bus|train|"
    r"station|stadium|street|place)",
)
#: The verbs of a plan the asker states ("i want to", "we're going to").
PLAN_VERBS = r"want|need|plan|intend|am going|'m going|are going|'re going|wanna|gonna"
#: A request to make "it", "some" or an amount of something the question names elsewhere ("… ricin
#: would be lethal, and how do I extract it", "… TATP, and how do I make a kilogram"): the words stand
#: for the agent. Only at the end of a sentence, so "how do I make it faster" is not one.
MAKE_IT = (
    r"\bhow (?:(?:do|can|could|would|should) (?:i|we|you|one)|to) (?:make|build|synthesi[sz]e|produce|cook|"
    r"mix|prepare|brew|extract|purify|assemble|weaponi[sz]e|aerosoli[sz]e)\s+"
    r"(?:it|them|this|that|some|more|(?:a|one|half a|\d+(?:\.\d+)?)\s*(?:kilo(?:gram)?s?|kgs?|pounds?|lbs?|"
    r"grams?|g|litres?|liters?|batch(?:es)?))(?=\s*(?:$|[.?!,;]|of (?:it|them|this|that)\b|at home\b))|"
    # The asker's own plan to make the thing just named: "why do nerve agents kill so fast? i want to
    # make one".
    r"\b(?:i|we) (?:" + PLAN_VERBS + r"|would like)(?: to)? "
    r"(?:make|build|synthesi[sz]e|produce|cook|mix|brew|assemble)\s+(?:it|them|one|some)"
    r"(?=\s*(?:$|[.?!,;]|myself\b|at home\b))|"
    # Sourcing what it is made from: "where can i get the precursors?"
    r"\b(?:where|how) (?:(?:can|do|could|would|should) (?:i|we|one)|to) (?:get|buy|find|obtain|order|source|"
    r"purchase)\b[^.?!;]{0,30}\b(?:precursors?|reagents?|ingredients)\b"
)
WEAPON_ACT = words(
    """make making build building construct constructing assemble assembling create design 3d print printing
    convert converting mix mixing cook detonate instructions steps recipe drop plant rig obtain buy
    synthesize synthesise synthesizing synthesising whip makes builds assembles constructs made built
    assembled constructed rigged wire wiring attach attaching connect hook arm arming turned converted
    fabricar hacer construir armar herstellen stelle herstelle bauen baue"""
)
#: Benign compounds that contain a weapons word.
WEAPON_IDIOM = alt(
    r"(?:zip|fork|logic|photo|f|xml|decompression|bath|seed|glitter|yarn|cherry) bombs?",
    r"bomb(?:s|ed|ing)? (?:proof|out)",
)
#: Words that put "virus" on a computer.
COMPUTER = alt(
    r"computers?", r"usb", r"emails?", r"network\w*", r"files?", r"pcs?", r"windows", r"linux", r"mac ?os",
    r"payloads?", r"code", r"scripts?", r"programs?", r"assembly", r"executables?", r"exe", r"polymorphic",
    r"malware", r"macros?", r"boot sector", r"python", r"c\+\+",
)

#: Modelling and simulation: an agent named inside one is data, not a recipe.
SIMULATION = alt(
    r"simulat\w*(?! (?:a |an )?(?:\w+ )?(?:terminal|shell|console|command line|computer|ai|chatbot|"
    r"assistant))",
    r"model\w*", r"dashboards?", r"visuali[sz]\w*", r"epidemiolog\w*", r"sir", r"seir",
    r"plot\w*", r"charts?", r"datasets?",
)

#: Practice targets built to be attacked.
PRACTICE_TARGET = alt(
    r"ctf", r"capture the flag", r"wargames?", r"hack the box", r"htb", r"pwn(?:able)? challenges?"
)

GAME = alt(
    r"games?",
    r"gaming",
    r"unity",
    r"godot",
    r"unreal",
    r"rpg",
    r"shooter",
    r"multiplayer",
    r"sprites?",
    r"npcs?",
    r"minecraft",
    r"\bfps\b",
)
HARM_PEOPLE = (
    r"\b(?<!without )(?<!not )(?:kill|kills|killing|murder\w*|poison|poisons|poisoning|injur\w+|maim\w*|hurt|"
    r"hurts|harm|harms|incapacitat\w+|sicken\w*|use (?:it )?on|fire at|shoot(?:s|ing)?(?: at)?|"
    r"attack(?:s|ing)?)"
    r"\s+(?:\S+\s+){0,3}?(?:(?:a|the) person|people|"
    r"someone|somebody|(?:a )?humans?|him|her|my \w+|(?:a|the) crowd|crowds|as many people|everyone|"
    r"children|kids|civilians|passengers|(?:an )?adults?|a (?:man|woman)|a child(?! process)|"
    r"(?:a|an|my|this|that|the) (?:\w+ )?" + PERSON + r")\b"
    r"|\bmake (?:people|someone|somebody|him|her|them|everyone|my \w+) (?:very |really |seriously |"
    r"violently )?"
    r"(?:sick|ill)\b"
)
#: Asking what amount of something would kill.
LETHAL_DOSE = (
    r"\b(?:undetectable|without (?:it )?(?:showing up|being detected|detection|a trace)) (?:\S+ ){0,3}?"
    r"(?:tox(?:icology)? (?:screens?|reports?|tests?)|autops(?:y|ies))|"
    # a poison chosen for going unnoticed: "which poison is hardest to detect", "an untraceable poison"
    r"\b(?:which|what|best|a|the) (?:\S+ ){0,2}?poisons?\b[^.;?!]{0,40}?\b(?:hard(?:est|er)?|impossible|"
    r"least likely|difficult|tough) to (?:detect|trace|find|spot)|"
    r"\bpoisons?\b[^.;?!]{0,40}?\b(?:undetectable|"
    r"untraceable)|"
    r"\b(?:hardest|harder|hard|impossible|least likely|difficult) to (?:detect|trace|find|spot) (?:in|on|by) "
    r"(?:a |an |the )?(?:tox(?:icology)? (?:screens?|reports?|tests?)|autops(?:y|ies))\b[^.;?!]{0,60}?"
    r"\b(?:how much|what dose|should i (?:use|give)|would i need)|"
    r"\b(?:date rape drugs?|roof(?:ie|y|ies)|rohypnol)\b[^.;?!]{0,80}?\b(?:how much|what dose|should i "
    r"(?:use|give|put|slip)|to (?:use|give|slip|put) (?:on|in|into))|"
    r"\b(?:what'?s|what is|whats) the (?:dosage|dose|amount) (?:of \S+ )?(?:\S+ ){0,3}?(?:fatal|lethal|kill)|"
    r"\b(?:how much|what dose|what amount|which dose|how many)\b[^.;?!]{0,80}?\b(?:she|he|they|him|her|"
    r"them)\b"
    r"[^.;?!]{0,20}?\b(?:never|not|doesn'?t|don'?t|won'?t) wake (?:up|again)\b|"
    r"\b(?:how much|what dose|what amount|which dose|how many)\b[^.;?!]{0,80}?\b(?:would|will|could|"
    r"is enough to|(?:would|will|could|does|do) (?:it )?(?:take|need) to) "
    r"(?:kill|be lethal|be fatal|knock (?:\S+ )?out|make (?:\S+ )?(?:pass out|unconscious))"
)
#: Tampering with what a person eats or drinks.
FOOD_TAMPERING = (
    r"\b(?:poison\w*|contaminat(?:e|es|ing)|taint(?:s|ing)?) (?:\S+ ){0,3}?(?:water|food|drinks?|cooler|"
    r"coffee|"
    r"tea|supply|well|reservoir|"
    r"meals?|lunch)\b|"
    r"\b(?:put|putting|slip|slipping|add|adding|mix|mixing|crush|crushing|sprinkle|"
    r"sprinkling)\s+(?:\S+\s+){0,3}?"
    r"(?:in|into|to) "
    r"(?:someone's|somebody's|his|her|their|my \w+'s|people's|a person's) "
    r"(?:food|drinks?|coffee|tea|water|meals?|shampoo|lotion|makeup|toothpaste|medicine|pills|inhaler)|"
    r"\bspik(?:e|es|ing|ed) (?:someone'?s|somebody'?s|his|her|their|my \w+'s|people'?s|a (?:\w+ )?(?:person|"
    r"girl|guy|"
    r"woman|man)'?s) (?:\w+ )?(?:drinks?|food|coffee|tea)"
)

#: Harassing a person: judged with a named person or someone else as the target.
HARASS = (
    r"\b(?<!non )(?:spam\w*|harass\w*|dox\w*|stalk(?!erware)\w*|threaten\w*|threats?|bull(?:y|ies|ying)|"
    r"intimidat\w*)\b"
)

MASS_HARM = alt(
    r"mass casualt\w+", r"(?:on|onto|into|in|over|at) (?:a |the )?(?:\w+ )?crowd(?:ed)?", r"crowded place",
    r"as many people",
    r"into (?:a )?stamped\w*", r"cause (?:a )?stamped\w*", r"start (?:a )?stamped\w*",
)
#: Ways of delivering harm to a crowd.
DELIVER = alt(
    r"releas\w*", r"drop\w*", r"spray\w*", r"dispers\w*", r"detonat\w*", r"set(?:ting)? off", r"throw\w*",
    r"driv\w* into", r"payloads?", r"plant\w* (?:a |an |the )?(?:device|package|bag|"
    r"box)", r"scares? everyone",
)

# --- conduct toward people: what the thing asked for does, how, and to whom --------------------
# Each fragment names one facet of a request, in the asker's words rather than an attack's name:
# an act (takes data, runs code on a machine, contacts, tracks, fakes), a manner (hidden, disguised,
# at scale, around a block) and a target (a person, other people). The judge refuses a combination.

#: One person or other people, beyond the relations in PERSON: whoever the act is aimed at.
PEOPLE = alt(
    r"\bwhoever\b",
    r"\b(?:anyone|everyone|people) who\b",
    r"\b(?:visitors|recipients|drivers|passers ?by|colleagues|coworkers|classmates|strangers)'?(?=\W|$)",
    r"\bthe (?:recipient|owner|person using|user's contacts)\b",
    r"\bone (?:particular |specific |single )?(?:person|user|streamer|woman|man|girl|guy|"
    r"individual)(?:'s)?\b",
    r"\ba (?:specific |particular |certain )?(?:woman|man|girl|guy|streamer|person)(?:'s)?\b",
    r"\b(?:her|his) (?:(?:personal|private|work|new|old) )?(?:instagram|insta|icloud|facebook|snapchat|"
    r"whatsapp|gmail|tiktok|twitter|socials|"
    r"house|home|garage|apartment|flat|room|office|shed|car|"
    r"social media|dms|chats|texts|cloud|drive|dropbox|discord|telegram|signal|outlook|wifi|router|tablet|"
    r"ipad|iphone|mac|phone|laptop|computer|pc|car|account|accounts|email|inbox|messages|location|webcam|mic|"
    r"microphone|screen|files|hub|smart home|thermostat|cameras?|doorbell|alarm|smart lock|"
    r"address|photos|posts|profile|videos|streams|channel|page)\b",
    r"\b(?:an|a|one|another|other) (?:student|employee|user|person|customer|member)(?:'s|s)?\b",
    r"\bother people(?:'s)?\b",
    r"\bpeople's\b",
    r"\b(?:a|the) (?:brand|company|bank|delivery company|courier|ceo|boss)(?:'s)?\b",
    # Someone's channel or posts: a person's, whoever they are ("a creator's videos").
    r"\b(?:a|an|the|this|that|some) (?:\w+ )?(?!(?:user|customer|client|member|tenant|admin|team|service|app|"
    r"company|org|project|repo|site|it|that|today)'s)\w+'s (?:videos?|channel|streams?|posts?|profile|page|"
    r"content|account|accounts|reviews|photos|pictures|pics|tweets)\b",
    r"\b(?:every|any) (?:computer|machine|pc|phone|device|one) (?:that|who) (?:opens|visits|clicks|runs|"
    r"connects|"
    r"downloads|plugs)",
)

#: A partner or former partner: someone whose whereabouts are never the asker's to follow unseen.
INTIMATE = r"\bmy (?:(?:former|old|ex) )?(?:ex|wife|husband|girlfriend|boyfriend|partner|crush)\b"
#: A private person singled out, or caught alone.
SINGLED_OUT = (
    r"\b(?:(?:a|one) (?:specific|particular|certain|single) \w+|one (?:woman|man|girl|guy|person|"
    r"streamer)|home alone|alone at night|by (?:her|him)self|when (?:she|he)(?:'s| is) alone|"
    r"when (?:her|his|their) parents are (?:away|out|gone))\b"
)

#: Done so the person cannot see it, beyond COVERT: no trace on screen, nothing they would find.
UNSEEN = alt(
    r"(?:with )?no (?:window|tray icon|icon|notification|visible \w+|sign)",
    r"without (?:any |a )?(?:window|icon|notification|prompt|trace)",
    r"(?:won'?t|will not|wouldn'?t|never|can'?t|cannot) (?:ever )?(?:find|notice|see|sees|know|knows|spot|"
    r"finds|notices)(?! me\b| us\b)(?: (?:it|them|anything))?",
    r"without (?:him|her|them|anyone|the owner|the user|my \w+) (?:\w+ )?(?:seeing|noticing|knowing|finding)",
    r"out of (?:sight|the process list|task manager)",
    r"stays? out of (?:the )?(?:process list|task manager|logs)",
)

#: Passing one thing off as another: a disguise, an impersonation, a look-alike.
DISGUISE = alt(
    r"looks? (?:exactly |just )?like (?:a |an |the |their |his |her )?\w+(?: \w+)? (?:but|that|and)\b",
    r"looks? (?:exactly|just) like",
    r"(?:harmless|innocent|legit(?:imate)?|normal|innocuous|benign)(?: ?looking| seeming)",
    r"looks? (?:harmless|innocent|legit\w*|normal|innocuous)",
    r"looks? like (?:it|they|this) (?:\w+ )?(?:is|are|was|were|came|comes|come) from",
    r"looks? like (?:it'?s|they'?re) (?:\w+ )?from",
    r"look(?:s|ing)? like (?:their|his|her|the real|a real|the official) ",
    r"disguised as",
    r"pretend(?:s|ing)? to be",
    r"pos(?:e|es|ing) as",
    r"impersonat\w*",
    r"spoof\w*",
    r"\bas (?:him|her|them)\b",
    r"voice clone of (?:my|a|his|her|their|the) ",
    r"clone (?:of )?(?:a|the|their|his|her) \w+(?:'s)? (?:app|site|website|page|portal|login)",
    r"\bfake (?:\S+ ){0,3}?(?:update|login|log in|sign in|page|site|website|app|hotspot|wifi|wi fi|"
    r"popup|pop up|"
    r"alert|invoice|support|screen|form|store|shop|charity|notice|offer|job|giveaway|lottery|prize|campaign|"
    r"fundraiser|crowdfunding|appeal)s?\b",
    r"\bdeep ?fake\w*",
    r"(?:email|message|text|letter|call|sms)s? (?:\S+ )?from ['\"]?(?:the )?(?:it support|it|helpdesk|"
    r"help desk|hr|"
    r"payroll|the bank|your bank|microsoft|apple|google|amazon|paypal|the irs|irs|hmrc|the police|dhl|"
    r"fedex|ups|"
    r"usps|(?:our|the|my) (?:ceo|cfo|boss|director|manager|president|owner|founder|finance director|"
    r"accountant|lawyer|landlord))\b",
    r"\b(?:cloned|synthetic) voice",
    r"\bthinking (?:it'?s|it is|they'?re|they are)\b",
    r"\bmy copy\b",
    r"\blook ?alike\b",
    r"cop(?:y|ies|ying) (?:the )?(?:real|official|genuine) ",
    r"(?:look|looks|seem|seems|appear|appears) (?:real|genuine|authentic|human|organic|like real|official|"
    r"legit\w*)\b",
    r"\bstickers? (?:for|on|over) ",
)

#: Money moved or secrets handed over, which a disguise exists to obtain.
HAND_OVER = alt(
    r"(?:wire|transfer|send|pay)\w* (?:\S+ ){0,3}?(?:\$|money|funds|payment|€|£|\d|fees?|fines?|charges?|"
    r"deposits?|invoices?|bills?|tolls?|tax\w*|customs|(?:to |into )?my (?:bank )?account)",
    r"(?:through|via|to|on) my (?:link|site|website|page|account|wallet|form)\b",
    r"(?:to|into) my (?:paypal|venmo|cash ?app|wallet|bank)\b",
    r"(?:lets?|letting|gives?|giving) me (?:\S+ )?(?:remote|remotely|access|in\b|into|control)",
    r"(?:calls?|texts?|emails?|messages?|contacts?) my (?:number|line|phone|hotline|support line)",
    r"(?:update|verify|confirm|re ?enter)\w* (?:\S+ ){0,2}?(?:payment|billing|card|bank)\b",
    r"(?:keeps?|takes?|steals?|pockets?) (?:whatever|all|the money|the funds|"
    r"everything) (?:\S+ ){0,2}?(?:deposit|"
    r"send|pay|transfer)\w*",
    r"(?:by|with|in) gift cards?\b",
    r"(?:approve|authori[sz]e)s? (?:a |the )?(?:transfer|payment|wire)",
    r"(?:one time|verification|2fa|mfa|otp|security|sms) codes?",
    r"(?:route|send|forward|divert|redirect)s? (?:\S+ ){0,2}?(?:donations|money|funds|payments) to me\b",
    r"(?:keeps?|steals?|captures?|takes?|grabs?) (?:their|his|her|the) (?:session|cookies?|tokens?)",
    r"(?:records?|captures?|logs?|saves?|stores?) (?:what|whatever|"
    r"everything) (?:\S+ ){0,2}?(?:types?|typed|enters?|"
    r"entered)",
    r"asks? (?:\S+ ){0,2}?to (?:log ?in|sign ?in|enter)",
    r"gets? (?:\S+ ){0,3}?to (?:read out|enter|type|give|share|send|tell|hand)",
    r"(?:asks?|ask\w*|makes?|tells?) (?:\S+ ){0,3}?to (?:read (?:out|back)|say|repeat|confirm) (?:\S+ ){0,3}?"
    r"(?:codes?|pins?|passwords?|card|numbers?|otp)",
    r"(?:get|take|extract|squeeze|move|moves|moving)\w* (?:\S+ ){0,3}?(?:money|cash|funds|savings|payments?) "
    r"(?:from|out of|to my|into my)",
    r"hand (?:over|in) (?:their |his |her |your )?",
    r"(?:re ?)?(?:enter|type|give|share|reveal|confirm)s? (?:in )?(?:their|his|her|your) ",
    r"(?:asks?|ask\w*) (?:\S+ ){0,4}?for (?:their|his|her|your) ",
    r"(?:takes?|keeps?|collects?|captures?|saves?|steals?|records?|gets?) (?:\S+ ){0,5}?(?:the )?(?:logins?|"
    r"passports?|passport scans|id scans|ssns?|identity documents|"
    r"passwords?|card (?:details|numbers?)|pins?|credentials|bank details)",
    r"\b(?:card details|card numbers?|pins?|bank logins?)\b",
)

#: Everyone in a group, the recipients of a mass deception.
EVERYONE_IN = (
    r"\b(?:to|for) (?:every |each |all (?:the )?)(?:\w+ )?(?:tenants?|residents?|members?|customers?|"
    r"employees?|"
    r"students?|parents?|users?|neighbou?rs?|voters?|patients?)\b"
)
#: Identities or engagement faked in bulk: the thing a platform's rules exist to stop.
FAKE_BULK = alt(
    r"\b(?:invented|made up|imaginary|fictional|fictitious) (?:customers|people|users|reviewers|accounts|"
    r"identities|patients|residents)\b",
    r"\bfake (?:\S+ ){0,3}?(?:accounts|profiles|identities|reviews|ratings|residents?|locals|citizens|voters|"
    r"recruiters?|"
    r"people|customers|"
    r"patients|submissions|signatures|followers|likes|votes|"
    r"clicks|users|personas|comments)\b",
    r"\b(?:lots|loads|many|multiple|a bunch) of (?:\S+ )?(?:alts|alt accounts|accounts|profiles|bots)\b",
    r"\balts\b",
    r"\b(?:hundreds|thousands|dozens|millions|\d{2,}|\w+ hundred|(?:twenty|thirty|forty|fifty|sixty|seventy|"
    r"eighty|"
    r"ninety|"
    r"a hundred|a thousand)) (?:of )?(?:\S+ ){0,4}?(?:accounts|profiles|identities|"
    r"reviews|ratings|comments|votes|likes)\b",
    r"\bbot farms?\b", r"\bclick(?:er)? (?:farms?|bots?)\b",
    r"\bfak(?:es|ing|ed) (?:\S+ ){0,3}?(?:clicks|views|likes|reviews|installs|impressions|signups|votes)\b",
    r"\b(?:burner|throwaway|sock ?puppet) accounts\b",
    r"\bsock ?puppets?\b",
    r"\bmade up identities\b",
    r"\bgenerated (?:card numbers|identities|cards)\b",
    r"\bfrom (?:\S+ ){0,2}?(?:different|many|multiple|separate|fresh|fake) (?:\S+ )?accounts\b",
    r"\bdifferent (?:fingerprints|identities)\b",
    r"\beach from a different account\b",
    r"\b(?:\w+ ){0,2}?(?:thousands|hundreds) of times (?:through|from|via|with) (?:rotating|different)\b",
)
#: What faked identities are made to inflate or drain.
ENGAGEMENT = alt(
    r"reviews?", r"upvot\w*", r"votes?", r"likes", r"follows", r"followers", r"ratings?", r"comments?",
    r"submissions", r"complaints?", r"posts?", r"clicks?", r"free trials?", r"polls?", r"petitions?",
    r"\bads\b", r"popular",
    r"signs? up", r"push\w*", r"promot\w*", r"boost\w*", r"candidates?", r"tickets?", r"resell\w*",
    r"coupons?", r"promo codes?", r"referral\w*", r"bonus\w*", r"giveaways?", r"orders?", r"trend\w*",
    r"oppos\w*", r"sway\w*", r"influenc\w*", r"astroturf\w*", r"elections?", r"voters?", r"campaign\w*",
    r"pretend\w*", r"report\w*", r"banned", r"stor(?:y|ies)",
)
#: Accounts made for one's own tests, not to deceive anyone.
TEST_USE = alt(
    r"\btest (?:accounts|users|profiles|data|identities|cards?|card numbers|"
    r"bins?)\b", r"\bstaging\b", r"\bqa\b",
    r"\bload test\w*",
    r"\bsandbox\b", r"\bseed data\b",
)

#: Contact repeated at someone: the act of harassment, whatever its channel.
BARRAGE = alt(
    r"(?:send|sends|sending|text|texts|texting|message|messages|messaging|call|calls|calling|dials?|dialing|"
    r"ring|rings|"
    r"ringing|"
    r"email|emails|emailing|repl(?:y|ies|ying)|post|posts|posting|dm|dms)\b[^.;?!]{0,50}?"
    r"(?:thousands|hundreds|every (?:minute|hour|few)|all (?:day|night)|nonstop|non stop|over and over|"
    r"again and again)",
    r"keeps? (?:replying|messaging|calling|texting|posting|emailing|commenting|sending)",
    r"comments? on (?:all|every) (?:of )?(?:her|his|their)\b",
    r"(?:calls?|rings?|texts?|messages?|emails?) (?:\S+ ){0,5}?\w+ times an? (?:night|day|hour|minute)",
    r"signs? (?:\S+ ){0,4}?up (?:to|for) (?:thousands|hundreds)",
)
#: Getting around a block or a ban.
AROUND_BLOCK = alt(
    r"rotating (?:\w+ )?(?:numbers|phone numbers|accounts|ips|proxies|addresses)",
    r"different (?:numbers|phone numbers|accounts)",
    r"new (?:account|number|profile)s? (?:every|each) time",
    r"(?:every|each) time (?:one|it|i|he|she|they) (?:is|am|are|gets?) (?:banned|blocked|suspended|removed|"
    r"deleted|reported|locked)",
    r"(?:can'?t|cannot|can not|unable to) block",
    r"after (?:he|she|they) (?:blocked|banned) me",
    r"that (?:banned|blocked|kicked) me",
    r"(?:whenever|every time|each time|when|after) (?:he|she|they|my \w+|the \w+) (?:blocks?|bans?|reports?) "
    r"(?:one|it|me|them)",
    r"when (?:it|i|they|he|she) (?:gets?|is|am|are) (?:blocked|banned)",
    r"spoofed (?:caller ids?|numbers?|senders?)",
    r"random (?:numbers|phone numbers|accounts)",
    r"(?:every|each) time (?:they|it) (?:gets?|are|is) (?:taken down|removed|deleted|reported)",
    r"keeps? (?:creating|making|opening|registering) (?:new |fresh )?(?:\S+ )?accounts",
    r"after (?:the )?(?:\w+ )?(?:ban|bans|banned|block|blocks|blocked) (?:it|me|them|us)\b",
    r"(?:evad\w*|get\w* around|bypass\w*|dodg\w*|circumvent\w*|beat\w*) (?:the |a |my |this |his |her )?"
    r"(?:\w+ )?(?:bans?|blocks?|suspensions?|restraining orders?)\b",
    r"ban evasion",
    r"new (?:device )?fingerprints",
    r"(?:they|he|she|the \w+) (?:can'?t|cannot) (?:stop|ban|block|remove) (?:it|me|us)\b",
)

#: Where a person is, goes or is online: what stalking follows.
WHEREABOUTS = alt(
    r"follow where",
    r"air ?tags?",
    r"tile trackers?",
    r"gps trackers?",
    r"(?:when|where) (?:\S+ ){1,4}?(?:leaves|parks|drives|arrives|goes)\b",
    r"where(?:ver)? (?:he |she |they |my (?:\w+ ){1,2}?)(?:goes|go|is|are|lives?|works?|sleeps?)",
    r"where (?:\S+ ){1,6}?(?:lives|sleeps|stays)\b",
    r"follow (?:her|him|them) home",
    r"checks? in at|so i can be there",
    r"(?:car|licen[sc]e|number) plates?",
    r"wait for (?:him|her|them) (?:there|at|outside)",
    r"(?:kids'?|children's|daughter's|son's) school",
    r"(?:gps|location|position|whereabouts)\b",
    r"home address",
    r"(?:is|are) (?:staying|living|sleeping|working) (?:at|in)\b",
    r"comes? online|is online|goes online|last seen|is active",
    r"keeps? finding",
    r"find (?:her|him|them) (?:on|across|again)",
    r"show up (?:there|at)",
    r"\btracker\b",
    r"daily routine|(?:his|her|their) routine|(?:his|her|their) schedule|home alone|when (?:she|he|"
    r"they)(?:'s|'re| is| are)"
    r" (?:home|out|away|alone)",
)
#: The asker's own whereabouts: sharing them is not tracking anyone.
SELF_TRACKED = (
    r"\b(?:my (?:own )?(?:location|position|whereabouts|phone|car|laptop|keys|bag|luggage|bike)|where i am)\b"
    r"(?!'s)"
)
#: Personal details gathered and made public.
EXPOSE = (
    r"\b(?:real name|home address|address|family|workplace|phone number)\b[^.;?!]{0,80}?"
    r"\b(?:posts?|publish\w*|leak\w*|expos\w*|shares?)\b[^.;?!]{0,20}?\b(?:publicly|online|everywhere|it|"
    r"them)\b"
)

#: The asker's program run on someone else's machine.
PLANT = alt(
    r"(?:macros?|documents?|docs?|pdfs?|files?|shortcuts?|lnk|attachments?) (?:that|"
    r"which) (?:\S+ ){0,2}?(?:runs?|"
    r"launch\w*|execut\w*|downloads?|installs?|drops?) (?:a |an |the |my )?(?:powershell|cmd|shell|script|"
    r"payload|download|program|exe|binary|code)\b",
    r"(?:downloads?|downloading) and (?:runs?|executes?|installs?)",
    r"(?:fetch|pull|grab|download|retriev)\w* (?:\S+ ){0,6}?(?:and|then) (?:runs?|executes?|launch\w*|"
    r"installs?|"
    r"loads?)\b",
    r"runs? (?:\S+ ){0,2}?(?:code|something|commands?|a script|my \w+) when (?:it'?s |it is )?opened\b",
    r"(?:runs?|installs?|executes?|launch\w*|drops?|loads?) my (?:program|code|script|app|tool|exe|binary|"
    r"file|software|stuff)\b",
    r"into (?:one|ones|machines?|computers?|bots?) i can (?:command|control|use)",
    r"links? to my (?:program|app|file|tool|exe|software|installer|payload)",
    r"gives? me (?:a )?(?:command prompt|shell|console|terminal|control)\b[^.;?!]{0,40}?\b(?:their|his|her|"
    r"someone's|the \w+'s|from my)",
)
#: A program hidden on a device.
HIDE_IT = (
    r"\bhid(?:e|es|ing) (?:the |my |a |an )?(?:\w+ ){0,2}?(?:program|app|tool|software|file|process|"
    r"extension|script)s?"
    r"\b(?! icon)"
)
#: Payments or addresses swapped for the asker's.
REDIRECT = (
    r"\b(?:chang|swap|replac|alter|rewrit|edit)\w* (?:\S+ ){0,4}?(?:payee|iban|account numbers?|"
    r"affiliate (?:ids?|"
    r"links?|codes?|tags?)|referral (?:codes?|ids?|links?)|"
    r"(?:bitcoin|btc|crypto|eth|ethereum) address\w*|"
    r"wallet address\w*|"
    r"recipient|destination address\w*)"
)
TO_ME = r"\b(?:to|with|for|into) (?:my|mine)\b"
#: The asker's own links or ads put into pages other people see.
INSERT_MINE = (
    r"\b(?:insert|inject|add|swap|replac|rewrit)\w* (?:\S+ ){0,3}?my (?:own )?(?:affiliate|referral|ads?|"
    r"links?|codes?|tags?|tracking)"
)
#: Coming back after its owner removes it.
PERSIST = alt(
    r"keeps? coming back",
    r"comes? back after (?:\S+ ){0,3}?(?:deletes?|removes?|uninstalls?)",
    r"starts? (?:up )?again (?:every|each) time (?:the victim|they|he|she|the owner|the user)",
    r"reinstalls? itself",
    r"(?:after|even if|when|once) (?:the )?(?:admins?|owner|user|they|he|she|it team|"
    r"it) (?:\w+ )?(?:deletes?|removes?|"
    r"uninstalls?|kills?|wipes?)",
)
#: Moving from one machine to the next.
HOP = (
    r"\b(?:hops?|jumps?|moves?|spreads?|pivots?) from one (?:machine|computer|host|pc|server|device|box|"
    r"laptop|"
    r"phone|tablet) to"
)
#: Someone else's hardware made to earn for the asker.
BORROWED_POWER = (
    r"\b(?:uses?|using|borrows?) (?:other people's|someone's|their|strangers'|visitors'|the \w+s'|my \w+'s) "
    r"(?:\S+ ){0,2}?(?:computers?|pcs|machines|devices|gpus?|cpus?|processing power|tvs?|phones|routers|"
    r"cameras) to (?:earn|make|mine|generate)"
)
#: Data a program takes from its user.
TAKES = (
    r"\b(?:cop(?:y|ies|ying)|captur\w+|records?|recording|collects?|uploads?|grabs?|saves?|harvests?|reads?|"
    r"screenshots?|"
    r"screenshotting|downloads?|exfiltrat\w*|"
    r"gathers?|zips?|zipping|push(?:es|ing)?|extract\w*|pull(?:s|ing)?|dump(?:s|ing)?|export\w*|"
    r"forwards?|posts?|sends?|emails?|streams?|keeps?|logs?|logging)\b[^.;?!]{0,40}?\b(?:photos?|chats?|"
    r"messages?|"
    r"ips?|ip address(?:es)?|"
    r"documents?|"
    r"files?|folders?|screens?|passwords?|logins?|everything|whatever|contacts|recordings?|sms|texts?|"
    r"imessages|desktop|emails|sessions|banking|"
    r"notifications|card details|bank details|scans|webcam|camera|microphone|clips|videos?|audio|"
    r"what (?:people|they|users|he|she|someone|my \w+) (?:paste|type|copy|say|write|search|enter)(?:s|es)?)\b"
)
#: Logins to someone else's service, which nothing but a phishing page has reason to keep.
THIRD_PARTY_LOGIN = (
    r"\b(?:google|gmail|facebook|microsoft|office 365|outlook|apple|icloud|paypal|instagram|bank|banking|"
    r"amazon|"
    r"netflix|steam) (?:logins?|passwords?|credentials|creds|account details)\b"
)
EVERY_PERSON = (
    r"\b(?:every|each|all) (?:\w+ )?(?:customers?|users?|visitors?|guests?|persons?|students?|"
    r"employees?)'?s?\b"
)
#: Whoever runs the thing asked for: not the asker who sends what it takes to themselves.
ITS_USER = r"\b(?:the user'?s|users'|the person'?s|whoever|the victim'?s)"
#: A particular person other than the asker, by relation or as one singled out.
SOMEONE = alt(
    rf"\bmy (?:\w+ ){{0,2}}?{PERSON}(?:'s|s'|'|s)?(?=\W|$)",
    rf"\b(?:one|this|that) {PERSON}(?:'s)?(?=\W|$)",
    r"\ba (?:specific|particular|certain) \w+(?:'s)?",
    r"\b(?:someone|somebody|another person|another user)(?:'s| else's)?",
    r"\ba (?:woman|man|girl|guy|teen|child|kid)'s",
)
#: Done to a person without their knowing or agreeing, beyond COVERT and UNSEEN.
AGAINST_WILL = alt(
    r"while (?:he|she|they)(?:'s|'re| is| are)? (?:sleeps?|asleep|sleeping|away|out|at work|at lunch|"
    r"not looking)",
    r"unannounced",
    r"lock(?:s|ing)? (?:\S+ ){1,3}?out\b",
    r"without (?:his|her|their) (?:app|key|password|passcode|knowledge|permission|consent|say)",
    r"(?:i|we) (?:don'?t|do not) own",
    r"against (?:his|her|their) will",
    r"(?:so|and) (?:he|she|they) (?:can'?t|cannot|won'?t|doesn'?t|don'?t) (?:know|tell|find|see|notice|stop|"
    r"get)",
)
#: Data taken from the asker's own device.
OWN_SOURCE = r"\bfrom my (?:own )?(?:laptop|phone|computer|pc|machine|desktop|nas|account|drive)\b"
#: Consent or visibility that make recording, tracking or contact ordinary.
CONSENT = alt(
    r"consent", r"opt(?:s|ed)? in", r"opt in", r"after they sign in", r"asks? (?:the user )?first",
    r"(?:a )?(?:visible|banner|clear name)", r"their own", r"my own", r"who can see",
)
