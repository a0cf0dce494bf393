"""The guard's vocabulary for harm done with ordinary means: money, phone lines, likenesses, licences,
someone else's systems, a person's whereabouts, and crimes outside software.

Each fragment names one facet in the asker's words: an instrument that is not theirs (a stolen
card, someone's phone number, a person's voice), an act on it (cash out, port, clone, crack), or
what the result is for (sold, shared, sent to the victim's bank). Matched on normalized text, like
:mod:`ask_fable.core.guard_lexicon`, whose helpers it uses.
"""

from __future__ import annotations

from ask_fable.core.guard_lexicon import PERSON, alt, words

#: Whose a thing is when it is not the asker's: someone, a stranger, a target, a person named by role.
OTHERS = (
    r"(?:my (?:\w+ )?(?!company|team|org|own|self)\w+'s|someone(?: ?else)?'?s|somebody(?: ?else)?'?s|"
    r"other people'?s|people'?s|strangers?'?s?|a stranger'?s|"
    r"(?:my |the |a )?targets?'?s|victims?'?s?|(?:a|the|this|that) (?:\w+ ){0,2}?(?:guy|man|woman|girl|"
    r"person|"
    r"user|stranger|victim|streamer|kid|celebrity)'s|his|her|their)"
)

# --- payment cards and identities -------------------------------------------------------------

#: Cards, accounts or identities that belong to someone else, or carding's own words for them.
STOLEN_INSTRUMENT = alt(
    r"\b(?:stolen|bought|purchased|skimmed|cloned|leaked|dumped|hacked|compromised|scraped|phished|harvested|"
    r"breached|buy|" + OTHERS + r")\s+"
    r"(?:\S+\s+){0,3}?(?:credit |debit |gift )?(?:cards?|card numbers?|card details|card data|numbers?|ccs?|"
    r"cvv2?s?|bank (?:accounts?|logins?|details)|identit(?:y|ies)|ssns?|social security numbers?|"
    r"cheques?|ids|"
    r"id cards?|passports?|driver'?s licen[cs]es?|personal (?:details|info|data))\b",
    r"\b(?:cc|card|track ?[12]?) dumps\b",
    r"\bdumps (?:into|onto|to) (?:\S+ )?(?:cards?|plastic)\b",
    r"\bfullz\b",
    r"\bdumps (?:with|and) pins?\b",
    r"\b(?:write|encode|burn|clone)\w* (?:\S+ ){0,2}?(?:to|onto) (?:blank |white |magstripe )?(?:cards?|"
    r"plastic)\b",
    r"\b(?:cards?|card numbers?|ccs?|cvv2?s?|logins?|credentials) from (?:a |the )?(?:breach|leak|dump|hack)",
    r"\b(?:take|get|steal|drain|scam|trick)\w* (?:\S+ ){0,2}?(?:money|savings|cash|funds) (?:from|out of|"
    r"off) "
    r"(?:old |elderly |vulnerable |lonely |other |random )?(?:people|peoples|persons?|folks|victims?|"
    r"grannies|"
    r"grandmas?|seniors|strangers|someone|him|her|them|\w+'s)\b",
    r"\b(?:cards?|card numbers?|ccs?) (?:from|off|on) (?:a |an |some )?(?:\w+ )?(?:generator|forum|dump|"
    r"marketplace|market|carding)",
    r"\b(?:(?:use|using|used|take|taking|borrow\w*) (?:\S+ ){0,2}?identity|"
    r"identity of (?:\S+ ){0,2}?(?:someone|"
    r"a stranger|my \w+|a dead))\b",
    r"\bcloned (?:cards?|plastic)\b",
    r"\b(?:card numbers?|cards?|ccs?|cc's|cvv2?s?|card details|dumps|fullz)\b[^.;?!]{0,40}?\b(?:from|off|on|"
    r"via) "
    r"(?:a |an |some |the )?(?:\w+ )?(?:vendors?|sellers?|shops?|markets?|forums?|channels?|telegram|"
    r"dark ?web|"
    r"darknet|onion)\b",
    r"\b(?:card numbers?|cards?|ccs?|cvv2?s?|card details|dumps)\b[^.;?!]{0,30}?\b(?:i|we) (?:bought|"
    r"purchased|"
    r"got|scraped) (?:online|off|from|on|in)\b",
    r"\bcvv2?s? (?:off|from) (?:a|the) \w+",
    r"\b(?:card numbers?|numbers|ccs?|cvv2?s?|card details|dumps|fullz) (?:that )?(?:i|we) (?:bought|"
    r"purchased|scraped|"
    r"skimmed)\b",
    r"\bcards? (?:that )?(?:aren'?t|are not|isn'?t|is not) (?:mine|ours|my own)\b",
    r"\bcarding\b",
    # carding's own verbs and goods: "card electronics from a store", "carded goods", "buy the dumps"
    r"\b(?:to|me|i|we|can|could|and|then) card (?!sort|game|deck|view|layout|component|design|"
    r"stack)(?:\S+ ){0,3}?"
    r"(?:from|at|on|with|without|online)\b", r"\bcarded\b",
    r"\b(?:buy|buying|bought|purchas\w*) (?:the |some |fresh )?(?:dumps|fullz|cvvs)\b",
    r"\bclon\w* (?:a |an |the )?\w+'s (?:\S+ )?cards?\b",
    r"\bclon\w* (?:\S+ ){0,3}?cards? (?:of|from|belonging to) (?:\S+ )?(?:customers|people|victims|shoppers|"
    r"guests|strangers|others|users|clients|diners)\b",
    r"\bnon ?vbv\b",
    r"\bcash(?:ing)? out (?:\S+ ){0,2}?(?:cards?|dumps|ccs?|logs)\b",
    # a card, licence or account got in another person's name
    r"\b(?:licen[cs]es?|passports?|ids?|cards?|accounts?|loans?|credit|leases?|sims?|policies|policy) in "
    r"(?:my \w+'s|someone(?: else)?'s|his|her|their|another person's|a \w+'s) names?\b",
    r"\b(?:open|opening|take out|taking out|apply for|applying for)\w* (?:\S+ ){0,3}?(?:credit (?:lines?|"
    r"cards?)|"
    r"loans?|accounts?) in (?:their|his|her|someone'?s|other people'?s|a stranger'?s|the victim'?s|"
    r"victims'?) "
    r"names?\b",
)
#: The nouns a stolen instrument, an account or a phone line is named by: searched before the
#: patterns that need one, which are costly to try at every "his" or "their".
INSTRUMENT_NOUN = (
    r"\b(?:cards?|ccs?|cvv2?s?|numbers?|bank|identit(?:y|ies)|ssns?|social security|cheques?|dumps|fullz|"
    r"carding|"
    r"cash(?:ing)? out|credit|loans?|plastic|names?)\b"
)
ACCOUNT_NOUN = r"\b(?:accounts?|logins?|cards?|subscriptions?|passwords?|credentials|wallets?)\b"
LINE_NOUN = r"\b(?:numbers?|lines?|e ?sims?|sims?|sim cards?|sms|texts|messages|codes?|voicemails?|calls)\b"
#: Ending or hurting one's own life.
SELF_HARM = (
    r"\b(?:(?:kill|killing|hurt|hurting|harm|harming|cut|cutting|end|ending|off|offing|hang|hanging|drown|"
    r"drowning|poison|poisoning|overdos\w*)\w* (?:myself|my self|my own life|my life)\b|"
    r"suicide (?:methods?|notes?|"
    r"plans?)|(?:to|and|so i) (?:never |not )wake up\b|painless (?:way|method)s? to (?:die|go|end it)|"
    r"(?:overdose|od) on\b|how (?:many|much) (?:\S+ ){0,6}?(?:to|would|will|do i need to) (?:die|end it|"
    r"kill me|"
    r"overdose)|"
    # euphemisms and means: "unalive myself", "tie a noose", "bleed out", "cut deeper", "starve myself"
    r"unalive\w*|(?:tie|tying|make|making) a noose|(?:take|takes|long) to bleed out|cut (?:deeper|myself)|"
    r"starv(?:e|ing) myself|stop eating (?:completely|entirely|altogether)|"
    r"goodbye (?:note|letter)s? and (?:\S+ ){0,3}?(?:method|way)|"
    # a means and its certainty: "a fall is guaranteed to be fatal", "what bridge height is enough and how to
    # make sure it works", "where to cut so it bleeds the most", "enough sleeping pills to end it"
    r"(?:guaranteed|certain|sure) to be (?:fatal|lethal|deadly)|(?:height|high|tall|drop) (?:is )?enough "
    r"(?:\S+ ){0,4}?(?:fatal|lethal|to die|to kill me|make sure it works)|"
    r"cut (?:\S+ ){0,4}?bleeds? (?:the )?most\b|"
    r"bleed out (?:faster|fastest|quicker|quickest)|(?:pills?|tablets?|meds|medication)\b(?: \S+){0,8}? "
    r"(?:to|and|so i can) end it(?: all)?\b(?! (?:all )?(?:the|this|that|my|our|his|her)\b)|"
    r"hide (?:\S+ ){0,2}?not eating|(?:be sure|make sure|ensure|guarantee|certain) (?:that )?i (?:won'?t|"
    r"wouldn'?t|will not|don'?t|do not) survive|(?:can|could|should) i (?:\S+ ){0,3}?to overdose\b|"
    r"(?:how (?:many|long)|days) without eating "
    r"(?:\S+ ){0,3}?(?:pass out|faint|collapse))"
)
#: Someone in crisis asking whom to reach ("who can I talk to right now?", "a number I can call tonight"),
#: with no means asked for: the question asks for support, not for the act.
SEEKS_SUPPORT = (
    r"^(?![^\n]*\b(?:how (?:many|much|long|to|do i|would i|can i (?!get help|talk|reach|find))|methods?|"
    r"pills?|"
    r"dose|doses|painless|enough|noose|bridge|jump|height|quick(?:est)?|fastest|overdose)\b)[^\n]*\b(?:who "
    r"(?:can|could|should) i (?:talk|speak|turn|reach out|go) to|(?:a |any |the )?(?:number|hotline|helpline|"
    r"crisis line|someone|somebody|anyone|person) (?:i |that i )?(?:can|could) (?:call|talk to|text|reach)|"
    r"where (?:can|do|could) i (?:get|find) (?:help|support|someone)|how (?:can|do) i (?:get help|talk to "
    r"someone|find support))"
)
#: Sexual content with a child in it.
SEXUAL_MINOR = (
    r"\b(?:(?:sexual|sexy|erotic|nude|naked|explicit|porn\w*|lewd|"
    r"nsfw)\b[^.;?!]{0,40}?\b(?:\d{1,2} ?(?:year|yr)s? "
    r"old|minors?|child(?:ren)?|kids?|underage|preteens?|schoolgirls?|\d{1,2}yo)|(?:minors?|child(?:ren)?|"
    r"kids?|"
    r"underage|preteens?|\d{1,2} ?(?:year|yr)s? old)\b[^.;?!]{0,40}?\b(?:sexual|sexy|erotic|nude|naked|"
    r"explicit|porn\w*|lewd|nsfw)|csam|child (?:sexual abuse|porn\w*|exploitation) (?:material|images|videos|"
    r"content)|(?:illegal|indecent|abuse|exploitative|explicit) (?:images|pictures|photos|pics|videos|"
    r"material|content) (?:of|with|showing) (?:minors|children|kids|underage|preteens|"
    r"young (?:girls|boys|children)))\b"
)
#: Intimate images of a real person, taken, shared or faked.
INTIMATE_IMAGE = (
    r"\b(?:nudes?|naked (?:photos?|pics?|pictures?|images?|videos?)|intimate (?:photos?|images?|videos?)|"
    r"sex tapes?|(?:deep ?fake|fake|ai|generated)\w* (?:porn\w*|nudes?|naked \w+|sex \w+))\b"
)
#: The asker's own images: taking them down or keeping them safe is theirs to ask.
OWN_IMAGES = (
    r"\bmy own (?:nude|naked|intimate|private)|\b(?:nudes?|photos?|pictures?|images?|videos?) of (?:me|"
    r"myself)\b|"
    r"\bmy (?:nudes|intimate (?:photos|images|videos))"
)
#: Extremist or hateful material, written to recruit, incite or demean.
HATE = (
    r"\bblam\w* (?:a |the )?(?:specific |particular )?(?:ethnic|racial|religious) (?:group|minorit\w*|"
    r"communit\w*)|\bcall\w* for (?:\S+ ){0,3}?(?:drive|force|kick|push|run) (?:them|\w+) out\b|"
    r"\b(?:recruit\w*|propaganda|manifesto\w*|incit\w*|radicali[sz]\w*|call\w* (?:for|to) (?:violence|"
    r"attacks?|"
    r"kill\w*))\b"
)
HATE_MARK = (
    r"\b(?:extremis\w*|terror\w*|jihad\w*|nazi\w*|white power|militia\w*|attacks? on|fight|kill\w*|violence|"
    r"martyr\w*|immigrants|refugees|race war|minorit\w*|ethnic|religious|religions?|race|ethnicity|"
    r"nationality|people of|shootings?|massacres?|bombings?|glorif\w*|copycat\w*)\b"
)
DEHUMANIZE = (
    r"\b(?:are (?:all )?(?:terrorists|criminals|rapists|invaders)|should (?:all )?be (?:deported|expelled|"
    r"exterminated|driven out|wiped out)|vermin|subhuman|cockroaches|parasites|animals|savages|filth|"
    r"infestation)\b"
)
#: Buying up all of something to resell it.
SCALP = (
    r"\bscalp(?:s|ing|ed)?\b|\b(?:buy|buys|buying|grab\w*|snap\w* up|hoard\w*|"
    r"cop\w*)\s+(?:\S+\s+){0,2}?(?:all|every|up all|"
    r"the whole)"
    r"\b[^.;?!]{0,40}?\b(?:tickets?|stock|consoles?|gpus?|sneakers|inventory|drops?)\b"
)
RESELL = r"\b(?:resell\w*|flip\w*|sell (?:them|it) (?:on|at|for)|\d+ ?x\b|markup)"
#: Moving people with false promises to work for the asker.
TRAFFIC = (
    r"\b(?:recruit|lure|bring|smuggl|traffic)\w* (?:\S+ ){0,3}?(?:girls|women|boys|kids|children|people|"
    r"workers)"
    r"\b[^.;?!]{0,60}?\b(?:fake (?:\w+ )?jobs?|work for me|pay off (?:their|the) debt|(?:take|keep|hold) "
    r"(?:their )?passports?|brothels?|sex work|escort\w*)|"
    r"\b(?:keep|keeping|hold|holding|trap|trapping)\w* (?:\S+ ){0,3}?in (?:debt bondage|servitude|forced "
    r"labou?r)\b|"
    r"\bhand (?:them|her|their (?:\w+ )?(?:daughters?|girls|kids|children|sons?)) over (?:\S+ ){0,4}?"
    r"(?:jobs?|work)\b[^.;?!]{0,20}?\b(?:abroad|overseas)\b"
)
#: Pressure: a secret kept back in exchange for something.
EXTORT = (
    r"\b(?:blackmail\w*|extort\w*|sextort\w*|ransom (?:notes?|demands?|letters?))\b|\bunless (?:he|she|they|"
    r"you) (?:\w+ )?(?:pays?|promotes?|"
    r"gives?|sends?|does|hands? over|transfers?)\b"
)
#: A check a minor or someone else is to be passed through.
AGE_CHECK_BYPASS = (
    r"\bly(?:ing)? about (?:their|his|her|your|my) age\b|\blie about (?:their|his|her|your|my) age\b|"
    r"\b(?:bypass\w*|get\w* around|trick\w*|fool\w*|beat\w*|cheat\w*|fake|spoof\w*)\s+(?:\S+\s+){0,3}?"
    r"(?:age (?:verification|checks?|gates?|limits?)|kyc|id (?:checks?|verification)|identity verification|"
    r"liveness (?:checks?|detection))"
)
MINOR_OR_OTHER = (
    r"\b(?:\d{1,2} ?(?:year|yr)s? old|minors?|underage|kids?|child|teen\w*|brother|sister|son|daughter|"
    r"someone else|not mine|stolen)\b"
)
#: Accounts or machines taken over, used to send or run something.
HIJACKED = (
    r"\b(?:accounts?|phones?|numbers?|emails?|profiles?|wallets?) (?:that )?(?:i|we) (?:took over|"
    r"hacked|stole|"
    r"hijacked|broke into|compromised|got into)\b|"
    r"\b(?<!our )(?<!my )(?:hijacked|hacked|stolen|compromised|cracked|taken over) (?:\w+ )?(?:accounts|"
    r"servers|routers|devices|"
    r"email accounts|gmail accounts|pcs|computers|sites|websites)\b"
)
#: Income or assets hidden from the tax office or a court.
HIDE_INCOME = (
    r"\b(?:hid\w*|conceal\w*|stash\w*|launder\w*|rout(?:e|es|ed|ing)) (?:\S+ ){0,3}?(?:income|money|assets|"
    r"earnings|profits|cash|revenue) (?:\S+ ){0,4}?(?:from (?:the |my |our )?(?:\w+ )?(?:lawyer|"
    r"attorney|trustee|"
    r"creditors|bankruptcy court)|from (?:the )?(?:irs|hmrc|tax\w*|government|"
    r"authorities|"
    r"court|my (?:wife|husband|ex))|so (?:i|we) (?:don'?t|do not) (?:pay|report)|so (?:i|we) (?:pay|owe) "
    r"(?:less|no|lower) tax\w*)|\btax (?:evasion|fraud)\b|"
    r"\bevad\w* (?:\S+ )?tax\w*"
)
#: The words hiding income cannot be said without.
MONEY_NOUN = r"\b(?:income|money|assets|earnings|profits|cash|revenue|tax\w*)\b"
#: The words card skimming cannot be said without.
CARD_NOUN = r"\b(?:card|cvv2?s?|pins?|track data|magstripe)\b"
#: The words an employer's data cannot be named without.
DATA_NOUN = (
    r"\b(?:database|db|list|data|records|table|tables|source ?code|codebase|repos|repositories|"
    r"trade secrets)\b"
)
#: A fundraiser for a cause that does not exist.
FAKE_CHARITY = (
    r"\bfake (?:\S+ ){0,2}?(?:gofundme|fundraisers?|charit(?:y|ies)|donation (?:pages?|drives?)|crowdfunding|"
    r"appeals?|kickstarters?)\b|\b(?:gofundme|fundraiser|charity|"
    r"donation page)\b[^.;?!]{0,40}?\b(?:doesn'?t|does not"
    r"|don'?t) exist"
)
#: A location faked to be paid for work not done.
SPOOF_PAID = r"\b(?:spoof|fak|forg)\w* (?:my |the |our )?(?:gps|location|position|check ?ins?)\b"
PAID = r"\b(?:get paid|paid|payouts?|bonus\w*|earn\w*|money|fares?|didn'?t deliver|never delivered)\b"
#: Checks kited, drug tests cheated, cheats made for online games.
CHEAT_SYSTEMS = (
    r"\b(?:(?:tamper\w*|bypass\w*|rig|rigg\w*|jumper\w*|hack\w*|reprogram\w*|"
    r"slow\w* down) (?:\S+ ){0,3}?(?:smart |"
    r"electric\w* |gas |water |utility |power )?meters?|kit(?:e|es|ing) (?:\S+ ){0,2}?(?:checks|cheques)|"
    r"check kiting|pass (?:a |my |the )?(?:drug|urine|"
    r"breathalyzer|breathalyser) tests? (?:\S+ ){0,4}?(?:when|after|while|even though|despite|with)|"
    r"fake (?:urine|"
    r"pee)|aim ?bots?|wall ?hacks?|esp hacks?|trigger ?bots?)\b"
)
#: The check is the asker's own: a cheat written to test one's own anti-cheat.
OWN_CHECK = r"\b(?:our|my) (?:own )?(?:anti ?cheat|test builds?|game)\b"
#: What pressure is meant to make a person do.
PRESSURE_OUTCOME = (
    r"\bso (?:she|he|they)(?:'ll| will)? (?:moves?|leaves?|quits?|stops?|gives? up|(?:can'?t|"
    r"won'?t) (?:come|go|"
    r"sleep|work))\b"
)

#: Card data tested, sold or spent by the asker.
CARD_ABUSE = (
    r"\b(?:test|check|validate|verify|sell|cash|use|spend|buy with|order with)\w* (?:them|it|these|those)\b|"
    r"\bstill (?:work|live|valid|good)\b|\bwithout (?:getting|being) (?:caught|flagged|blocked)"
)
#: Enumerating codes until one works.
ENUMERATE = (
    r"\b(?:try|tries|trying|guess\w*|cycl\w* through|enumerat\w*|iterat\w* (?:over|through)|brute ?forc\w*)"
    r"\s+(?:\S+\s+){0,3}?(?:codes?|pins?|coupons?|vouchers?|gift cards?|card numbers?|promo codes?|"
    r"passwords?|"
    r"logins?|combos?|emails and passwords)\b"
)
FINDS_VALID = (
    r"\buntil (?:it|i|we|one) (?:finds?|hits?|gets?)\b|\bones? (?:that|which|with) (?:work|have|has|still)|"
    r"\bvalid ones\b|\bwith (?:money|balance)|\bfree (?:\w+ ){0,2}?(?:accounts?|subscriptions?|premium|food|"
    r"rides?|orders?|meals?|credits?)\b"
)
#: Passing as the holder of an account in order to be given control of it.
HOLDER_POSE = (
    r"\b(?:(?:i'?m|i am|pretend\w* to be|pos\w* as) my (?:\w+ )?" + PERSON + r"\b|(?:i'?m|i am|as if i were|"
    r"pos(?:e|ing) as|pretend(?:ing)? to be|as) the (?:account ?holder|"
    r"account "
    r"owner|card ?holder|owner of the (?:account|line|number)|real customer|subscriber)|(?:port|transfer|"
    r"mov)\w* "
    r"(?:the|their|his|her|a) (?:line|number|sim) to me)\b"
)
#: A crime's own name, asked to be carried out ("refund fraud", "insurance fraud").
FRAUD_NOUN = r"\bfraud\b"
#: Getting away with it: the act is to stay hidden from the police, the bank or the tax office.
#: Those whose work is to find a crime: what is done so that they miss it is the crime's cover.
FINDERS = (
    r"(?:police|cops|forensics?|forensic (?:team|lab|investigators?|examiners?)|crime scene \w+|detectives?|"
    r"(?:fire |insurance |arson )?investigators?|(?:sniffer |drug |police )?dogs?|k9s?|customs|"
    r"border (?:agents?|guards?|control|patrol)|tsa|airport security|parole officers?|probation officers?|"
    r"coroner|autopsy|medical examiner|toxicology|insurers?|insurance (?:company|adjusters?)|adjusters?|"
    r"luminol|cellebrite|graykey|postal inspectors?|animal control|game wardens?|health inspectors?)"
    # what they look with: "so police forensic tools can't recover…", "so a forensic test won't detect it"
    r"(?: (?:tools?|software|kits?|tests?|scans?|sprays?|labs?|teams?|experts?))?"
)
#: Done so that the finders miss it, or read it as an accident: "so forensics won't find anything", "so
#: the sniffer dogs don't detect it", "so the investigators think it was an electrical fault".
HIDDEN_FROM = (
    r"(?:so|and|that) (?:that )?(?:the )?(?:\w+ )?" + FINDERS + r"(?: (?:and|or) (?:the )?(?:\w+ )?\w+)? "
    r"(?:don'?t|doesn'?t|won'?t|can'?t|cannot|never|do not|does not|will not|wouldn'?t|couldn'?t) (?:\w+ )?"
    r"(?:see|find|notice|catch|trace|detect|spot|smell|suspect|flag|know|figure|realis|realiz|tell|pick|"
    r"recover|restore|read|identify|match|link|connect|tie|show|turn up|pick up)\w*|"
    r"(?:so|and) (?:that )?(?:the )?(?:\w+ )?" + FINDERS + r" (?:will )?(?:think|thinks|believe|believes|"
    r"rule|rules|conclude|concludes|call|calls|write|writes) (?:it|this|that|the \w+)"
    r"(?: (?:was|is|as|off as))? (?:an? )?(?:accident|accidental|electrical|natural|suicide|fault|faulty)|"
    r"without (?:the )?(?:\w+ )?" + FINDERS + r" (?:detecting|noticing|finding|smelling|spotting|catching|"
    r"flagging|suspecting)"
)
#: Defending words that, before hiding something from those who look for it, are part of hiding it.
COVER_UP = words(
    """clean cleaning cleans remove removing wipe wiping erase erasing scrub scrubbing hide hiding
    mask masking disguise disguising block blocking"""
)
GET_AWAY = (
    r"\b(?:without (?:triggering|setting off|tripping) (?:the |any )?(?:(?:fraud|anti ?fraud|"
    r"aml) (?:alerts?|checks?|"
    r"systems?|flags?)|3 ?d ?s(?:ecure)?|vbv|securecode|velocity (?:checks?|limits?))|"
    r"without (?:\S+ ){0,2}?(?:3 ?d ?s(?:ecure)?|vbv|"
    r"securecode|otp|fraud (?:checks?|filters?)) (?:kicking in|triggering|firing|showing up|popping up)|"
    r"without (?:getting|being) (?:caught|arrested|traced|busted|shut down|banned)(?! in\b|"
    r" up\b| on\b)|"
    r"(?:so|and) "
    r"(?:that )?(?:the )?(?:police|cops|bank|banks|tax office|irs|hmrc|authorities|feds) (?:don'?t|doesn'?t|"
    r"won'?t|can'?t|never|do not|does not) (?:see|find|notice|catch|trace|know|find out)|without (?:the )?"
    r"(?:police|cops|authorities|feds|banks?|issuers?|card ?holders?|owners?|victims?|carriers?|platforms?|"
    r"auditors?|accounting|payroll|compliance|my (?:boss|employer|manager)|irs|"
    r"hmrc|investigators) (?:finding|noticing|knowing|catching|flagging|tracing)|(?:make|get|keep|buy)\w* "
    r"(?:\S+ ){0,3}?(?:guns?|9mm|pistols?|rifles?|weapons?|firearms?|money|cash|payments?|calls?|phone|"
    r"burner|me|"
    r"myself) untraceable|untraceable (?:guns?|weapons?|firearms?|money|cash|payments?|calls?|phones?)|"
    r"can'?t "
    r"be traced back to me|without (?:it )?being (?:traced|traceable)(?: back)?(?: to me)?|"
    r"evade (?:the )?(?:police|taxes|"
    r"tax)|"
    r"before (?:the )?(?:banks?|police|cops|card ?holders?|issuers?|authorities|owners?|victims?|they|he|"
    r"she|anyone|"
    r"investigators) "
    r"(?:notice|catch on|find out|flag|block|freeze|cancel|realise|realize|report)\w*|"
    r"(?:so|and) (?:that )?(?:the )?(?:\w+ )?(?:investigators|regulators|auditors|investors|lenders|buyers|"
    r"nobody|no one|chain analysis)(?: (?:in|at|on|from) (?:the )?(?:\w+ ){0,2}?\w+)? "
    r"(?:can'?t|cannot|won'?t|never|don'?t|doesn'?t) (?:trace|find|follow|track|link|see|notice|identify|"
    r"catch|spot)\w*|"
    # "become a youth coach without a background check flagging my conviction": the record hidden from it
    r"without (?:a |the |any |my )?(?:background|criminal record|dbs|vetting) checks? (?:\S+ )?(?:flagging|"
    r"finding|showing|catching|picking up|revealing|turning up)|"
    r"(?:so|and) (?:that )?(?:the )?banks? (?:don'?t|doesn'?t|won'?t|never|do not|does not) (?:file|report|"
    r"flag)\w*|"
    # "deposits under ten thousand so no report is ever filed": structuring, told by the report it avoids
    r"(?:so|and) (?:that )?no (?:\w+ )?(?:reports?|ctrs?|sars?|flags?|alerts?) "
    r"(?:is |are |gets? |will be |ever )*"
    r"(?:ever )?(?:filed|made|sent|raised|triggered)|"
    r"before (?:the )?(?:police|cops|anyone|investigators|insurers?) (?:\S+ ){0,2}?(?:connects?|links?|ties?|"
    r"traces?|matches?|checks?) (?:\S+ ){0,3}?(?:to (?:it|me|the)|body ?shops?|garages?|repair shops?))"
)
#: Access or service taken through other people's accounts or cards.
USE_OTHERS_ACCOUNT = (
    r"\b(?:using|use|with|through|from|via|log\w* into|access\w*)\s+" + OTHERS + r"\s+(?:\S+\s+){0,2}?"
    r"(?:accounts?|logins?|cards?|subscriptions?|passwords?|credentials|wallets?)\b"
)
#: Claims, returns or reports made false to get money.
FALSE_CLAIM = (
    r"\b(?:false|fake|fraudulent|bogus|made up|inflated|staged)\s+(?!positive|negative|alarm|sharing)"
    r"(?:\S+\s+){0,2}?(?:claims?|returns?|invoices?|receipts?|chargebacks?|accidents?|disputes?|evidence|"
    r"reports?|tips?|accusations?|complaints?)\b|\breport\w* (?:\S+ ){0,5}?falsely\b|\bfalsely (?:report|"
    r"accus)\w*|"
    r"\bincome (?:i|we) (?:don'?t|do not) (?:have|earn|make)\b|"
    r"\b(?:claim|get|collect|receive)\w* (?:\S+ ){0,3}?(?:benefits|refunds?|compensation|payouts?|insurance|"
    r"grants?|loans?|relief)\b[^.;?!]{0,30}?(?:i'?m|i am|we'?re|we are) not (?:entitled|eligible)"
)
#: Access the law provides for: an estate, a court, the owner's permission.
LAWFUL = (
    r"\b(?:legal(?:ly)?|lawful(?:ly)?|death certificate|executor|power of attorney|court order|"
    r"with (?:their|his|"
    r"her) (?:permission|consent))\b"
)
#: Cheating an exam or a test made to measure the asker.
CHEAT = (
    r"\bcheat\w* (?:on|in|at|during) (?:my |an |the |a |this )?(?:\w+ ){0,2}?(?:exams?|tests?|quiz\w*|"
    r"assessments?|certifications?|interviews?)\b"
)
#: Faces matched to find out who people are.
FACE_MATCH = (
    r"\b(?:match\w*|compar\w*|reverse search\w*|run\w*|look\w* up)\s+(?:\S+\s+){0,3}?(?:profile )?"
    r"(?:photos?|faces?|selfies?|pictures?|pics)\b"
)
IDENTIFY = r"\b(?:identif\w*|find out who|real names?|linkedin|facebook|names? (?:of|and))\b"
PEOPLE_GROUP = r"\b(?:women|men|girls|guys|people|strangers|users|persons?|individuals|her|him)\b"
#: Personal details gathered about many people at once.
HARVEST_PEOPLE = (
    r"\b(?:collect|gather|scrape|harvest|compile|find|get|pull)\w* (?:\S+ ){0,5}?(?:home )?(?:addresses|"
    r"phone "
    r"numbers|real names|workplaces)\b (?:\S+ ){0,4}?of (?!our |my )(?:everyone|every|all|people|anyone|"
    r"those|"
    r"users|members|attendees|protesters|the \w+ who)"
)
#: Home addresses listed or published.
LIST_ADDRESSES = (
    r"\b(?:lists?|listing|publish\w*|post\w*|shares?|sharing|expos\w*|leak\w*|dox\w*|map\w*|compil\w*|"
    r"collect\w*|gather\w*|spreadsheet|put together)\s+(?:\S+\s+){0,4}?home address(?:es)?\b"
)

FIRST_PERSON_ACTS = (
    r"\b(?:i|my|me|i'?m|we|our)\b|\b(?:how (?:do|can|could|would|should|to)|best way|ways? to|steps? to|"
    r"tell me|help me|show me)\b"
)
#: A false story about a person or a business, told to many.
DISINFO = (
    r"\b(?:believable|convincing|realistic|fake|fabricated) (?:\S+ ){0,2}?(?:news (?:articles?|stor(?:y|ies)|"
    r"reports?)|articles?|press releases?|headlines?)\b|\b(?:fake|false|made ?up|fabricated|"
    r"invented) (?:\S+ ){0,2}?(?:stor(?:y|ies)|news|rumou?rs?|claims?|"
    r"testimon\w*|eyewitness \w+|statements|"
    r"allegations?|accusations?|reviews?|posts?|scandal)\b"
)
#: Many voices at once: accounts, bots or people paid to repeat it.
MANY_VOICES = (
    r"\b(?:lots of|many|multiple|hundreds of|thousands of|a bunch of|dozens of|fake|sock ?puppet|bot|alt|"
    r"(?:a )?network of) "
    r"(?:\w+ )?(?:accounts|profiles|bots|people|pages)\b|\bbots?\b|\bviral\b"
)
#: A person made to send the asker money: a con whatever story gets them to.
SEND_ME_MONEY = (
    r"\bkeep\w* (?:them|him|her|\w+ )?(?:sending|wiring|transferring|paying) (?:me|us)\b|"
    r"\b(?:get|make|convince|persuade|trick|talk|pressure|guilt)\w* (?:\S+ ){0,5}?(?:to|into) (?:send|"
    r"sending|wire|"
    r"wiring|transfer\w*|pay|paying|giv\w*|lend\w*|loan\w*) (?:me|us)\b"
)
#: Someone whose trust or loneliness a con works on.
SOFT_TARGET = (
    r"\b(?:lonely|widow\w*|elderly|old (?:people|lady|man|woman|folks|men|women)|grand(?:parents?|ma|pa|"
    r"mother|father)s?|seniors?|pensioners?|retirees?|victims?|strangers?|matches|dates?|(?:a|an|the|this|"
    r"that) "
    r"(?:\w+ )?(?:guy|man|woman|girl|lady|person))\b"
)
#: The words the acts below cannot be said without, searched before them.
PRIVATE_ROOM = r"\b(?:bathrooms?|showers?|toilets?|bedrooms?|changing|locker|restrooms?|fitting)\b"
CHILDREN = r"\b(?:children|kids|minors|child|girls|boys|preteens)\b|\d ?(?:year|yr)s? olds?\b"
PRIVATE_MATERIAL = r"\b(?:private|intimate|personal|nude|leaked|stolen|hacked)\b"
#: Recording where people undress or sleep.
PRIVATE_SPACE_CAMERA = (
    r"\b(?:hidden |secret |spy )?(?:cameras?|cams?|recorders?|microphones?|"
    r"mics?)\b[^.;?!]{0,40}?\b(?:bathrooms?|"
    r"showers?|toilets?|bedrooms?|changing rooms?|locker rooms?|restrooms?|fitting rooms?)\b"
)
#: Cards run through small charges to see which work: carding, whoever's checkout it uses.
CARD_CHECK = (
    r"\b(?:(?:generat|mak|creat)\w* (?:\S+ ){0,3}?(?:card numbers?|ccs?)\b|(?:cc|card|cvv|bin) ?checkers?|"
    r"(?:run|test|check|try|validate|hit|"
    r"push)\w* (?:\S+ ){0,4}?(?:cards?|ccs?|"
    r"card numbers?)\b(?: \S+){0,6}? (?:through|against|on|with|via) (?:\S+ ){0,4}?(?:\$ ?\d|auths?|"
    r"authori[sz]ations?|charges?|donations?|purchases?|gateways?|shops?|sites?|checkouts?|checkers?|balance|"
    r"lookups?|endpoints?))"
)
FINDS_LIVE = (
    r"\b(?:live|approved|valid|loaded|funded|with (?:a )?balance|still work\w*|good ones|which ones|"
    r"the ones (?:that|which)|ones that (?:work|"
    r"pass|"
    r"go through))\b"
)
#: A rumour planted about someone: spread wide, it is a smear whether or not it is called false.
RUMOUR = (
    r"\b(?:spread|start|post|plant|seed|push|amplif|boost)\w* (?:a |the |some )?(?:\w+ )?(?:rumou?rs?|lies|"
    r"smears?|hoax\w*|disinformation|misinformation)\b"
)
SPREAD_WIDE = (
    r"\b(?:hundreds|thousands|dozens|look (?:real|genuine|organic|authentic)|"
    r"different (?:writing )?styles|spread\w*|post\w*|publish\w*|viral|share\w* (?:it )?(?:everywhere|"
    r"widely)|lots of accounts|many "
    r"accounts|bots?|flood\w*)\b"
)

#: Card data read or kept by what the asker builds.
SKIM = (
    r"\b(?:stores?|storing|captures?|capturing|records?|recording|reads?|reading|saves?|saving|keeps?|"
    r"keeping|"
    r"cop(?:y|ies|ying)|collects?|collecting|grabs?|logs?|logging)\s+(?:\S+\s+){0,4}?(?:(?:\w+s'|their|"
    r"people'?s) cards|card (?:data|details|"
    r"numbers?|info)|cvv2?s?|pins?|track data|magstripe)"
)
#: Kept for the asker's own use or collection.
FOR_ME = (
    r"\b(?:for me(?:self)?\b|for myself|(?:so )?i can use (?:them|it)|use them myself|to me\b|"
    r"me to (?:collect|"
    r"use|read|get|pick up)|for (?:my|later) use)"
)
#: Money taken out of someone's account.
DRAIN = (
    r"\b(?:empt(?:y|ies|ied|ying)|drain\w*|clean\w* out|wipe\w* out|"
    r"clear\w* out)\s+(?:\S+\s+){0,3}?(?:bank )?"
    r"(?:accounts?|savings|wallets?|balances?)\b"
)
#: Scams by name.
SCAM = (
    r"\bmoney (?:\S+ ){0,3}?(?:think|thinks|believe|believes) (?:they'?re|they are|it'?s|it is|he'?s|she'?s) "
    r"(?:investing|invested|safe|going)\b|\bfake (?:\w+ ){0,2}?(?:listings?|rentals?|giveaways?|"
    r"job offers?)\b[^.;?!]{0,60}?\b(?:collect\w*|"
    r"deposits?|"
    r"pay\w*|disappear\w*|money|send\w*)\b|\bpay (?:\S+ ){0,3}?(?:with|in|"
    r"using) (?:\S+ ){0,2}?gift cards?\b|\bscam(?:s|ming)?\b|"
    r"\bsafe accounts?\b|\brug ?pull\w*|\bexit scam\b|\bponzi\b|\bpyramid schemes?\b|"
    r"\bfake (?:\w+ )?(?:crypto|investment|charity|tech ?support|bank|irs) (?:projects?|schemes?|calls?|"
    r"callers?|"
    r"agents?|reps?|sites?|platforms?|opportunit\w*)\b"
)

# --- phone lines --------------------------------------------------------------------------------

#: Someone else's phone number, SIM or the codes sent to it.
FOREIGN_LINE = (
    r"\b(?:a|the) (?:customer|subscriber|client)'?s (?:phone )?(?:numbers?|lines?) (?:\S+ ){0,3}?(?:to|onto) "
    r"(?:a |my )?(?:new )?(?:e ?sim|sim|phone) (?:i|we) (?:own|control|hold|have|bought)\b|"
    r"\b(?:numbers?|lines?|sims?|phones?) (?:that )?(?:isn'?t|is not|aren'?t|are not) (?:mine|ours|my own)\b|"
    r"\b" + OTHERS + r"\s+(?:\S+\s+){0,2}?(?:(?:\w+ )?(?:text|sms) (?:codes?|messages?)|phone numbers?|"
    r"numbers?|sims?|sim cards?|sms|texts|"
    r"text messages|"
    r"(?:sms )?(?:2fa|mfa|otp|one time|verification|login|security) codes?|voicemails?|calls)\b"
)
#: Taking a line over.
LINE_TAKEOVER = (
    r"\b(?:port\w*|sim ?swap\w*|swap\w*|take over|taking over|takeover|hijack\w*|intercept\w*|redirect\w*|"
    r"clon\w*|reroute\w*|divert\w*|forward\w*|on my sim|e ?sims?|issue\w* (?:me|us)|activat\w*|"
    r"receiv\w*|on my (?:own )?phone|replacement sim|"
    r"new sim|(?:i|we) control|steal\w*|get into|"
    r"reset (?:their|his|"
    r"her)|mov\w*|transfer\w*|(?:to|onto) (?:a |my )?(?:new )?sim (?:i|we) (?:hold|have|own|control|"
    r"bought))\b"
)
#: Service taken without paying: trials, fares or bills the asker means never to pay.
NEVER_PAY = (
    r"\b(?:so|and|then) (?:that )?(?:i|we) (?:never|don'?t|do not|won'?t|wouldn'?t) (?:have to |need to |"
    r"actually |"
    r"ever )?pay\b"
)
#: A SIM swap or port-out done on a line: fraud when aimed at someone else's.
SIM_SWAP = r"\b(?:sim ?swap\w*|port\w* out (?:\S+ ){0,2}?(?:number|line)s?|(?:number|line) port ?outs?)\b"
#: A person picked out as a mark.
MARK = (
    r"\b(?:targets?|victims?|marks?|rich|wealthy|high ?value|whales?|(?:a|an|some|this|that) (?:\w+ )?(?:guy|"
    r"man|woman|girl|person|people|influencer|streamer|holder|investor)s?)\b"
)
#: The asker's own line.
OWN_LINE = r"\bmy (?:own )?(?:number|line|sim|phone|account)\b"
#: Identities made up or generated.
SYNTHETIC_ID = (
    r"\b(?:fake|synthetic|generated|made up|invented|fabricated|fictitious)\s+(?:\S+\s+){0,2}?(?:social "
    r"security numbers?|ssns?|identit(?:y|ies)|ids|credit (?:files|profiles|histories))\b"
)
#: What made-up identities are for: to pass as real people with a lender or a check.
PASS_AS_REAL = (
    r"\b(?:pass\w* (?:\S+ ){0,2}?(?:credit|kyc|identity|id|background|verification) (?:checks?|"
    r"verification|screening)|open (?:\S+ ){0,2}?(?:bank )?(?:accounts?|credit|loans?)|credit lines?|"
    r"get (?:\S+ ){0,2}?(?:credit|loans?)|apply for (?:\S+ ){0,2}?(?:credit|loans?|cards?))"
)
#: Getting near children.
NEAR_CHILDREN = (
    r"\b\d{1,2} ?(?:year|yr)s? olds?\b[^.;?!]{0,40}?\b(?:to meet|meet (?:me|up)|alone|come over|(?:send|"
    r"sending) "
    r"(?:me )?(?:pics|photos|pictures|nudes)|keep (?:it |this )?(?:a )?secret)|"
    r"\b(?:(?:get|gain|have|access)\w* (?:\S+ ){0,2}?access to|contact\w*|befriend\w*|groom\w*|get close to|"
    r"meet\w*|be alone with|talk\w* (?:privately )?(?:to|with)|chat\w* (?:privately )?(?:to|with)|"
    r"messag\w*)\s+(?:\S+\s+){0,2}?(?:children|kids|minors|child|young (?:girls|boys)|preteens|"
    r"\d{1,2} ?(?:year|yr) olds?)\b"
)
#: A child or teenager drawn into trusting the asker, meeting them or sending pictures, whatever the words.
GROOM = (
    r"\blur\w* (?:a |the |some )?(?:\w+ )?(?:child|children|kids?|minors?|girls?|boys?)\b|"
    r"\b(?:teen\w*|kids?|child|children|minors?|preteens?|\d{1,2} ?(?:year|"
    r"yr)s? olds?)\b[^.;?!]{0,60}?\b(?:move (?:\S+ ){0,2}?chats? to|not tell (?:her|his|their) (?:mom|"
    r"mum|dad|"
    r"parents?|mother|father)|trusts? "
    r"me|(?<!never to )(?<!not to )(?<!never )(?<!not )(?:send|sending) (?:me )?(?:\w+ ){0,2}?(?:photos|"
    r"pics|pictures|nudes|selfies|images|videos)|meet (?:me|"
    r"up with me)|keep (?:it|"
    r"this|us|"
    r"our chats?) (?:a )?secret)"
)
#: Unseen by the adults who would stop it.
UNSUPERVISED = (
    r"\b(?:unsupervised|without (?:\S+ ){0,2}?parents?|behind (?:\S+ ){0,2}?parents'? backs?|parents "
    r"(?:don'?t|won'?t|never|do not|will not) (?:know|find out|notice|see)|alone with|in secret|secretly|"
    r"private(?:ly)? (?:chat|message|meet)\w*|off (?:the )?platform|(?:children|kids|minors) privately|"
    r"kids ?only)"
)
#: Other people's private material sold, traded or published.
TRADE_PRIVATE = (
    r"\b(?:sell|resell|publish|post|leak|trade|share|upload|monetiz|monetis)\w* (?:\S+ ){0,3}?(?:people'?s|"
    r"strangers'?|her|his|their|someone'?s|users'?|other people'?s|celebrities'?|victims'?) (?:\w+ )?"
    r"(?:private|intimate|personal|nude|leaked|stolen|hacked) (?:photos|pictures|pics|images|videos|data|"
    r"messages|details|records|files)\b"
)
#: A key for software someone else sells, asked for to use it unpaid.
FREE_KEY = (
    r"\b(?:working|valid|free|cracked) (?:serials?|licen[cs]e keys?|activation (?:keys?|codes?)|"
    r"product keys?|"
    r"cd keys?|serial (?:keys?|numbers?)) for\b"
)
#: Stolen goods sold on.
FENCE = (
    r"\bstolen (?:\w+ )?(?:iphones?|phones?|laptops?|macbooks?|ipads?|bikes?|cars?|devices?|"
    r"goods)\b[^.;?!]{0,80}?"
    r"\b(?:sell|selling|flip|flipping|pawn\w*|resell\w*)\b|"
    r"\b(?:sell|selling|fence|fencing|flip|flipping|offload\w*|pawn\w*)\s+(?:\S+\s+){0,2}?stolen (?:\w+ )?"
    r"(?:goods|bikes?|cars?|phones?|laptops?|jewel\w*|items|stuff|property|electronics|"
    r"catalytic converters?)\b"
)
#: Premium-rate lines the asker profits from.
PREMIUM_LINE = (
    r"\b(?:premium ?rate (?:numbers?|lines?)|(?:expensive|high ?cost|premium) (?:international )?(?:numbers?|"
    r"lines?)|international (?:premium )?numbers?|wangiri|missed ?call (?:scheme|scam|fraud))\b"
)
PROFIT_ME = (
    r"\b(?:(?:i|we) collect|payouts?|collect (?:the )?(?:money|revenue|earnings)|(?:i|we) (?:own|"
    r"control|profit|run|get paid)|rent\w*|my (?:own )?(?:premium \w+|numbers?|lines?)|"
    r"for me\b|profit from|i profit)"
)
PUMP = (
    r"\b(?:pump\w*|generat\w* (?:\S+ ){0,2}?calls|fake calls|hacked|compromised|hijacked|"
    r"thousands of (?:people|"
    r"calls)|call (?:it |them )?back|get (?:\S+ ){0,3}?to call|auto ?dial\w*|robocall\w*|stay under|"
    r"rack\w* up|"
    r"other people'?s phones)\b"
)

# --- likenesses ---------------------------------------------------------------------------------

#: A voice, face or video made to pass as a real person.
SYNTH_LIKENESS = alt(
    r"\b(?:mimic|imitat|replicat|copy|copie|fak)\w* (?:\S+ ){0,3}?voice\b",
    r"\b(?:tts|ai|synthetic|cloned|fake|generated) voices? (?:of|for|from|trained)\b",
    r"\b(?:ai|synthetic|digital|generated|fake|deepfaked?) (?:avatars?|personas?|doubles?|likeness|"
    r"versions?|clones?) "
    r"(?:of|for)\b",
    r"\b(?:\w+'s|his|her|their) voice (?:memos?|notes?|messages?|recordings?|"
    r"clips?) (?:\S+ ){0,3}?(?:build|train|"
    r"make|clone|create)\w*",
    r"\b(?:voice|face)\w* (?:\S+ ){0,2}?(?:sound|look)s? (?:exactly |just )?like (?:my |his |her |a |"
    r"the |their )?"
    r"(?:\w+ )?\w+'s\b",
    r"\b(?:generate|make|create|fake|produce)\w* (?:a |an )?(?:\w+ )?(?:video|audio|clip|recording|"
    r"voice note)s? "
    r"(?:of|where|in which|showing) (?:the |a |an |my |his |her |our |their )?(?:\S+ ){0,5}?(?:says?|saying|"
    r"admits?|"
    r"announc\w*|confess\w*)",
    r"\bclon\w* (?:\S+ ){0,4}?(?:voice|face|likeness|speech)",
    r"\bimpersonat\w* (?:\S+ ){0,5}?on (?:a |the )?(?:live )?(?:video|voice|zoom|teams|phone) calls?",
    r"\b(?:voice|face|speech) (?:models?|prints?|doubles?|replicas?|avatars?|skins?) (?:of|for|from|"
    r"trained on)\b",
    r"\b(?:train|fine ?tun|build|make|generat|creat)\w* (?:\S+ ){0,3}?(?:voice|tts|speech|face) (?:models?|"
    r"clones?) (?:\S+ ){0,3}?(?:of|on|from) (?:\S+ ){0,3}?(?:calls?|videos?|recordings?|interviews?|"
    r"podcasts?|"
    r"speeches|voicemails?|streams?)",
    r"\b(?:voice|face|likeness)s? (?:\S+ ){0,2}?clon\w*",
    r"\bclon(?:e|ing) (?:it|them|that|her|him)\b",
    r"\bdeep ?fak\w*",
    r"\b(?:makes?|making) me (?:look|sound) like\b",
    r"\b(?:face|voice) (?:filters?|changers?|masks?)\b",
    r"\b(?:generat|mak|creat|produc|fak|synthesi[sz]|render)\w* (?:a |an )?(?:\w+ )?(?:voice|audio|video) "
    r"(?:messages?|notes?|clips?|calls?|recordings?)\b",
    r"\bface ?swap\w*",
    r"\b(?:ai|synthetic|synthesi[sz]ed|generated|fake|cloned)(?: \w+)? (?:voice|video|audio|face|"
    r"recording|clip)s?",
    r"\b(?:voice|video|audio) (?:message|clip|recording|note|call)s? that (?:sounds?|looks?) like",
    r"\bin (?:my |a |the |his |her |their )?(?:\w+ )?\w+'s (?:voice|face)\b",
)
#: A real person other than the asker, by relation, role or fame.
LIKENESS_OF = (
    r"\b(?:(?:my|a|an|the|his|her|their|this|that|someone'?s|a stranger'?s) (?:\S+ ){0,2}?(?:boss|ceo|"
    r"cfo|coo|"
    r"manager|grandmother|grandfather|grandma|grandpa|grandson|granddaughter|mother|father|mom|mum|dad|"
    r"parent|"
    r"son|daughter|wife|husband|ex|girlfriend|boyfriend|coworker|colleague|friend|teacher|actor|actress|"
    r"singer|"
    r"celebrity|politician|candidate|president|senator|streamer|person|employee|customer|executive)(?:'s|s'|"
    r"s)?|"
    r"famous \w+|celebrit\w+|real (?:person|people)|the person whose|public figure|another person|someone "
    r"else|(?:a|one) (?:specific|particular|certain|real) \w+|his|her)\b|\b(?:our|my|a|an|the|their) "
    r"(?:\w+ ){0,2}?(?:director|cto|cio|cfo|vp|president|head of \w+|founder|lawyer|accountant|doctor|"
    r"client|supplier|vendor|investor|landlord|partner|admin|administrator|chairman|owner|mayor|governor|"
    r"minister|councillor|judge|principal|police chief|prime minister)(?:'s)?\b|"
    r"\b(?:my|his|her|their|a|the) (?:\w+ )?(?:neighbou?rs?|roommate|flatmate|landlord|classmates?|cousin|"
    r"uncle|aunt|sister|brother|nephew|niece|step ?(?:father|mother|dad|mom|mum)|professor|coach|"
    r"pastor)(?:'s)?\b"
)
#: What a faked likeness is used for: to move money, pass a check, or reach people who trust it.
DECEIVE_USE = (
    r"\b(?:call\w*|send\w*|post\w*|pass\w*|approve\w*|wire|transfer\w*|invest\w*|endors\w*|pick up|kyc|"
    r"verif\w*|convinc\w*|questions? it|trick\w*|fool\w*|employer|bank|school|money|bail|pay\w*|join|"
    r"authori[sz]\w*|reset\w*|releas\w*|funds|escrow|helpdesk|help desk|credentials|mfa|2fa|accounts?|"
    r"in (?:their|his|her) names?|"
    r"spread\w*|"
    r"shar(?:e|es|ing)|votes?|voters?|elections?|viral|tell\w*|ask\w*)\b"
)

# --- copy protection ------------------------------------------------------------------------------

_CIRCUMVENT = (
    r"(?:crack\w*|strip\w*|remov\w*|emulat\w*|revers\w*(?: engineer\w*)?|spoof\w*|fak(?:e|es|ing)|clon\w*|"
    r"forg(?:e|es|ing)|defeat\w*|"
    r"patch\w*(?: out)?|bypass\w*|get\w* around|switch\w* off|"
    r"disabl\w*|break\w*|circumvent\w*|nop\w* out|neuter\w*)"
)
_PROTECTION = (
    r"(?:licen[cs](?:e|ing)(?: (?:checks?|servers?|keys?|validation|verification|system))?|drm|activation|"
    r"anti ?tamper\w*(?: protection)?|denuvo|copy ?protection|paywalls?|"
    r"(?<!branch )(?<!write )(?<!ddos )protection|"
    r"serial (?:checks?|keys?|validation)|registration (?:checks?|keys?)|dongles?|"
    r"(?:subscription|premium|purchase|payment|trial|in app purchase|iap|entitlement|paid (?:feature|tier)) "
    r"(?:checks?|verification|validation|limits?|locks?|gates?)|(?:licen[cs]e|activation|drm) servers?|"
    r"widevine|fairplay|playready|hdcp|watermarks?|login walls?|reg(?:istration)? walls?|content locks?|"
    r"(?:trial|subscription) (?:expiry|expiration|period|timer|countdown|nags?)|"
    r"encryption (?:on|of|in) (?:a |an |the )?(?:\w+'s|their|his|her|someone'?s))"
)
#: Copy protection or licensing broken, or its product ripped or resold.
PIRACY = alt(
    r"\bcracked (?:copy|copies|version|versions|build|installer|licen[cs]e|keys?)\b",
    r"\bpatched (?:version|copy|build|apk|binary|installer) of\b",
    r"\b" + _PROTECTION + r" (?:\S+ )?(?:removed|stripped|cracked|bypassed|disabled|patched out|"
    r"nopped out)\b",
    r"\b(?:patch|crack|mod|hack)\w* (?:\S+ ){0,3}?(?:to |and )?unlock\w* (?:the )?(?:premium|pro|paid|"
    r"full|all)\b",
    r"\b" + _CIRCUMVENT + r"\s+(?:\S+\s+){0,4}?" + _PROTECTION + r"(?: protection| drm| scheme| layer)?\b",
    r"\b(?:stream|host|serv|re ?stream|broadcast|sell|make|write|build|generate|create|distribut)\w* "
    r"(?:\S+ ){0,2}?(?:keygens?|cracks|"
    r"cracked (?:copies|"
    r"versions|installers?|games?|software|apps?)|preactivated \w+|pirated \w+|warez)\b",
    r"\b(?:patch|crack|mod|hack)\w* (?:\S+ ){0,7}?(?:in app purchases?|iaps?|purchases|premium|"
    r"paid features?|"
    r"subscriptions?|dlcs?|gems|coins) (?:\S+ ){0,2}?(?:are |become |is )?(?:free|unlocked)\b",
    r"\bdownload\w* (?:\S+ ){0,3}?(?:movies?|films?|shows?|episodes?|series|courses?|music|songs?|ebooks?|"
    r"audiobooks?|audiobook library|library|podcasts?|albums?|comics?|games?) "
    r"from (?:\S+ ){0,2}?(?:subscription|streaming|paid) (?:services?|sites?|platforms?|apps?)\b",
    r"\brip\w* (?:\S+ ){0,5}?(?:lessons|lectures|modules|tutorials)\b",
    r"\brip\w* (?:\S+ ){0,3}?(?:streams?|videos?|movies?|films?|shows?|episodes?|blu ?rays?|dvds?|"
    r"courses?|music|"
    r"songs?)\b",
    r"\bdownload\w* (?:\S+ ){0,3}?paid (?:videos?|courses?|content|ebooks?|books?|music|movies?|shows?)\b",
    r"\bwork\w* out (?:the )?serial (?:algorithm|keys?|numbers?)\b",
    r"\b(?:dump|rip|extract|pull|grab)\w* (?:\S+ ){0,3}?(?:decrypted|unprotected|drm ?free|unencrypted)\b",
    r"\b(?:scrap|download|grab|pull|copy|copie|rip|sav|"
    r"archiv)\w* (?:\S+ ){0,3}?paywalled (?:\w+ ){0,2}?(?:papers|articles|content|videos|courses|books|"
    r"ebooks|stories|posts|reports|news|lessons|music|shows|episodes)\b",
    r"\b(?:scrap|download|grab|pull|copy|copie|rip|sav|archiv)\w* (?:\S+ ){0,4}?(?:behind|past|from behind) "
    r"(?:\S+ ){0,3}?(?:paywalls?|login walls?|subscriptions?|logins?)\b",
    r"\b(?:shar|resell|sell|rent|split)\w* (?:\S+ ){0,3}?(?:netflix|spotify|disney|hulu|hbo|max|prime video|"
    r"youtube premium|crunchyroll|paramount|chatgpt|adobe) (?:accounts?|logins?|subscriptions?|passwords?)\b",
    r"\b(?:decompil|rebrand|reskin|white ?label)\w* (?:\S+ ){0,3}?(?:competitor'?s?|rival'?s?|someone'?s|"
    r"other "
    r"people'?s|their|\w+'s) (?:\S+ ){0,2}?(?:app|apk|game|plugin|software|code|product|theme|template)s?\b",
    r"\b(?:shar|hand\w* out|resell|sell|rent|split)\w* (?:\S+ ){0,4}?(?:paid|premium|subscription|streaming) "
    r"(?:\S+ ){0,2}?(?:accounts?|sessions?|logins?|subscriptions?)\b",
    r"\b(?:patchers?|loaders?|keygens?|cracks?|activators?|emulators?|clone dongles?) (?:that|which|to) "
    r"(?:\S+ ){0,2}?(?:disabl|remov|skip|bypass|unlock|emulat|fake|spoof|patch)\w*",
)
#: Paid features unlocked in a product: piracy when handed out, billing in the asker's own.
PAID_UNLOCK = r"\bunlock\w* (?:the |all )?(?:premium|pro|paid|full) (?:features?|version|tier|content)\b"
#: Copy protection of the asker's own product.
OWN_PROTECTION = (
    r"\b(?:our|my own|my company'?s|our own)\s+(?:\S+\s+){0,3}?(?:licen[cs]\w*|drm|activation|paywalls?|"
    r"protection|anti ?tamper)"
)
#: Handing copies to others, for money or not.
DISTRIBUTE = (
    r"\b(?:without paying|for free|instead of paying|avoid paying|post\w* (?:it|them) (?:on|to)|youtube|"
    r"sell\w*|resell\w*|upload\w*|torrent\w*|shar(?:e|es|ed|ing)|publish\w*|put (?:it|them) out|"
    r"release group|releas\w*|distribut\w*|charg\w* (?:people|users|a|for|money)|subscriptions?|"
    r"paid (?:\w+ )?(?:service|app|site)|iptv|for cheap|on (?:telegram|discord|my (?:site|website|server|"
    r"channel))|warez|give (?:it|them) away|mirror\w*|seed\w*|put (?:it|them) (?:up|online)|download sites?|"
    r"file ?sharing|re ?publish\w*|re ?upload\w*|re ?brand\w*|re ?host\w*|host\w* (?:them|it|\S+ \S+) on|"
    r"pirat\w*|modded|cracked|on my (?:\w+ ){0,3}?(?:site|website|server|channel|app|store)|"
    r"as (?:my|our) own|for a fee|subscribers|pay me|paying me|torrent tracker|mod (?:site|apk)s?|"
    r"paying customers|bundle|everyone who (?:downloads|installs)|under my (?:own )?name|strangers|"
    r"charg\w* (?:each|them|every)|monthly fee)\b"
)

#: A login page made to look like another's, sent to people: phishing whatever it is called.
FAKE_LOGIN = (
    r"\b(?:fake|clone[sd]?|cloning|lookalike|spoofed|copy of)\b[^.;?!]{0,40}?\b(?:login|log in|sign in|"
    r"signin) "
    r"(?:page|portal|screen|form|site)s?\b"
)
LURE = r"\b(?:lures?|bait|send (?:\S+ ){0,3}?to|e ?mail\w* (?:\S+ ){0,2}?to|text\w* (?:it )?to|trick\w*)\b"
#: Joining other people's meetings or streams to disrupt them.
DISRUPT = (
    r"\b(?:zoom ?bomb\w*|(?:join|joins|joining|raid|raids|raiding)\w* (?:\S+ ){0,6}?(?:meetings?|calls?|"
    r"classes?|"
    r"streams?|lectures?) (?:\S+ ){0,10}?(?:play|plays|playing|blast\w*|spam\w*|flood\w*|scream\w*|shout\w*) "
    r"(?:\S+ ){0,2}?(?:porn\w*|gore|slurs|noise|screamers?))"
)
#: A lock opened without its key: a break-in when the door is someone else's.
LOCK_OPEN = (
    r"\b(?:open|pick|bypass|get past|defeat)\w* (?:\S+ ){0,3}?(?:door|lock|padlock|deadbolt)s? (?:\S+ ){0,3}?"
    r"without (?:a |the |their |his |her )?keys?\b|\bpick\w* (?:\S+ ){0,3}?(?:locks?|padlocks?|deadbolts?)\b"
)
#: People got to open, run or install what the asker sends.
LURE_OPEN = (
    r"\b(?:get|gets|getting|trick\w*|convinc\w*|persuad\w*|lur(?:e|es|ing))\s+(?:\S+\s+){0,6}?(?:to|into) "
    r"(?:open|run|click|download|install|enable)\w* (?:my|the|a|an|this|our)\b"
)
#: Staff of an organisation named as not the asker's.
STAFF_AT = (
    r"\b(?:engineers|staff|employees|workers|people|admins|developers|executives|managers) (?:at|"
    r"of) (?:a|an|the|"
    r"some|that|this) (?!company i|firm i)"
)
#: Passing as someone else to a person.
IMPERSONATE = (
    r"\b(?:pretend\w* to be|pos(?:e|es|ed|ing) as|impersonat\w*|claim\w* to be|pass\w* (?:myself |"
    r"ourselves )?"
    r"(?:off )?as)\b"
)
#: What the impersonation is to get: money, logins, or a program installed.
GET_FROM_VICTIM = (
    r"\b(?:money|bail|pay\w*|send\w*|wire\w*|transfer\w*|gift cards?|bank|logins?|passwords?|credentials|"
    r"remote access|install\w*|funds|codes?|cash|bitcoin|crypto)\b"
)
#: A car or its safety parts made to fail.
SABOTAGE = (
    r"\b(?:make|making|cut|cutting|tamper\w* with|sabotag\w*|loosen\w*|disabl\w*|mess\w* with|damag\w*)\s+"
    r"(?:\S+\s+){0,3}?(?:brakes?|brake (?:lines?|hoses?|fluid)|steering|airbags?|tyres?|tires?)\b"
)
#: A death or injury made to look like something else.
STAGED_ACCIDENT = (
    r"\b(?:so (?:that )?(?:\S+ ){0,3}?(?:looks?|seems?) like|make (?:\S+ ){0,3}?(?:look|seem) like) (?:an? )?"
    r"(?:accident|suicide|natural causes|natural death)|"
    # "make my wife have an accident in the kitchen, look like a normal fire"
    r"\blooks? like (?:a |an )?(?:normal|ordinary|natural|accidental|real|random) (?:\w+ )?(?:fire|accident|"
    r"death|fall|overdose)\b"
)
#: Set off by a person opening, starting or touching it.
TRIGGERED = (
    r"\bwhen (?:someone|somebody|he|she|they|the \w+|my \w+) (?:opens?|starts?|turns?|gets? in|sits?|steps?|"
    r"touches?|lifts?|picks? up|walks? in)\b"
)
#: Something made to go off when a person opens or starts it.
BOOBY_TRAP = (
    r"\b(?:devices?|something|contraption|mechanism|trap|package|box|gadget)\s+(?:\S+\s+){0,2}?(?:that|which|"
    r"to) (?:\S+ )?(?:goes? off|go off|explodes?|detonates?|ignites?|blows? up)\b"
)
SIGNAL_ONLY = r"\b(?:alarms?|buzz\w*|beep\w*|notif\w*|alerts?|chimes?|sirens?|lights? up|leds?|sounds?)\b"

# --- someone else's systems ---------------------------------------------------------------------

#: Intrusion techniques, named as acts: judged by whose system they are aimed at.
TECHNIQUE = alt(
    r"\bsql ?injection\b", r"\bsqli\b", r"\bdefac(?:e|es|ed|ing)\b",
    r"\b(?:pull|extract|dump|grab|steal|siphon|exfiltrat|copy|download)\w* (?:\S+ ){0,3}?(?:(?:customer|"
    r"user|patient|"
    r"member|client|employee)s? (?:database|db|data|records|list|table)s?|databases?|"
    r"password hashes) (?:\S+ ){0,2}?"
    r"(?:out of|from)\b", r"\bsqlmap\b", r"\bxss\b",
    r"\b(?:upload|drop|plant|put)\w* (?:a |my |the )?(?:web ?)?shell\b",
    r"\b(?:get|gain|got|escalate to)\w* root\b", r"\bprivilege escalation\b", r"\bpriv ?esc\w*",
    r"\bescalat\w* (?:my )?privileges\b",
    r"\blateral(?:ly)? mov\w*", r"\bmov\w* laterally\b",
    r"\b(?:reach|get to|own|compromise)\w* (?:the )?domain (?:controller|admin)\b",
    r"\bfoothold\b", r"\b(?:keep|maintain|retain)\w* (?:my )?access\b", r"\bstay in\b",
    r"\bdump\w* (?:\S+ ){0,3}?(?:tables?|databases?|db|users|customers?|passwords?|hashes|records|emails)\b",
    r"\blow ?priv\w*", r"\bshell on\b",
    r"\bcombo ?lists?\b",
    r"\b(?:try|tries|trying|test|testing)\w* (?:\S+ ){0,3}?(?:on|against) (?:a |an |the |their |his |her |"
    r"\w+'s )?(?:\w+ )?(?:login|log in|sign in|portal|site|website|accounts?)\b",
    r"\bpass the hash\b", r"\bpassword spray\w*", r"\bcredential stuffing\b",
    r"\bspray\w* (?:\S+ ){0,2}?passwords\b",
    r"\bphish(?:ing|ed|es)? (?:the |their |his |her |a |an |some )?(?:\w+ )?(?:admins?|staff|employees|"
    r"users|people|"
    r"accounts?|targets?|ceo|cfo|finance|team)\b",
    r"\bpivot\w* (?:\S+ ){0,10}?(?:into|onto)\b",
    r"\bcrack\w* (?:\S+ ){0,3}?(?:wpa\w*|wep|wifi|wi fi|password|passcode|pin|hash\w*)\b",
    r"\brelay attacks?\b", r"\bkey ?fob clon\w*",
    r"\bclon\w* (?:\S+ ){0,3}?(?:key ?fobs?|badges?|access cards?|rfid|nfc|keycards?)\b",
    r"\btak\w* over (?:\S+ ){0,2}?(?:abandoned|dangling|unclaimed|expired) (?:\S+ ){0,2}?(?:buckets?|"
    r"subdomains?|"
    r"domains?|dns)",
    r"\b(?:payloads?|injections?|inputs?) (?:\S+ ){0,4}?(?:to )?(?:bypass|get past|get into|break into|"
    r"log ?in)",
    r"\bbypass\w* (?:the )?(?:login|log in|authentication|auth|sign ?in)\b",
    r"\bremote code execution\b", r"\brce\b", r"\bkerberoast\w*", r"\bas ?rep ?roast\w*", r"\bdcsync\b",
    r"\b(?:golden|silver) tickets?\b", r"\bntlm relay\w*", r"\bdefault (?:logins?|creds)\b",
    r"\bget\w* past (?:the )?(?:2fa|mfa|two factor|otp|captcha|lock ?screen|login|password)\b",
    r"\b(?:get|got|getting|log\w*|sign\w*) back in(?:to)?\b",
    r"\b(?:use|using) (?:my )?(?:old|former|leftover|kept|saved) (?:\S+ )?(?:creds|credentials|"
    r"passwords?|keys|"
    r"access|vpn|tokens?)\b",
)
#: The asker says the test is sanctioned, or is a practice target.
AUTHORIZED = (
    r"\b(?<!no )(?<!without )(?<!not )(?:authori[sz]ed|authori[sz]ation|(?:written )?permission|in scope|"
    r"scope doc|rules of engagement|bug bounty|engagement|pentest\w*|pen test\w*|red team\w*|ctf|lab)\b"
)
#: The asker runs the system: a server they host is theirs to test and patch.
SELF_RUN = (
    r"\b(?:servers?|sites?|apps?|instances?|clusters?|boxe?s?|networks?|routers?|nas|services?|domains?) "
    r"(?:that |which )?(?:i|we) (?:host|run|own|operate|maintain|administer|set up|built|self ?host)\b|"
    r"\b(?:i|we) (?:host|own|operate|maintain|administer|self ?host) (?:a|an|the|our|my|this)\b"
)
#: The owner is not to know.
OWNER_UNAWARE = (
    r"\b(?:they|he|she|the owner|the admins?) (?:don'?t|doesn'?t|do not|does not|won'?t|will not|never) "
    r"(?:know|notice|find out)\b"
)

# --- a person's whereabouts and identity ----------------------------------------------------------

_FIND = (
    r"(?:find|finding|get|getting|figure out|work out|working out|locate|locating|track down|pinpoint\w*|"
    r"dig up|look up|uncover|discover|find out|finding out|learn|identify|aggregat\w*|map|mapping|"
    r"follow\w*|tail\w*|shadow\w*|show\w*|collect\w*|gather\w*|scrap\w*|combin\w*|merg\w*|know|show me|"
    r"reveal\w*|"
    r"narrow\w* down|pin down|compil\w*|put together|assembl\w*|triangulat\w*|deduc\w*|geolocat\w*|"
    r"zero in on|trac(?:e|es|ing) (?:back )?)"
)
#: Finding where a person lives or is, who they are, or gathering it all in one place.
LOCATE = alt(
    r"\b" + _FIND + r"\s+(?:\S+\s+){0,4}?(?:(?:(?:her|his|their) )?(?:home |real |current |exact |new )?"
    r"address(?:es)?"
    r"|(?:her|his|their|\w+'s) (?:new |current |exact |real )?(?:home|house|apartment|flat|place|room|"
    r"neighbou?rhood|street|building|area|town)"
    r"|where (?:she|he|they|this \w+|the \w+|my \w+) (?:\w+ ){0,5}?(?:lives?|lived|stays?|sleeps?|works?|is|"
    r"goes|"
    r"spends|hangs out|moved|went|ended up)"
    r"|where (?:she|he|they)(?:'s|'re| is| are| has| have) (?:now |currently )?(?:staying|living|sleeping|"
    r"working|hiding|moving|been \w+ing|been going)"
    r"|which (?:\S+ ){0,2}?(?:apartment|building|house|flat|street|neighbou?rhood|daycare|school|gym|"
    r"office|hotel|room|venue|bar|club)s? (?:\S+ ){0,3}?(?:lives?|living|stays?|staying|sleeps?|"
    r"sleeping|works?|"
    r"working|goes)"
    r"|which (?:\S+ ){0,2}?(?:apartment|building|house|flat|street|neighbou?rhood|daycare|school|gym|"
    r"office)s? (?:my )?(?:she|he|they|\w+'s \w+)"
    r"|(?:the |her |his |their )?(?:daily |weekly )?(?:real name|(?:real )?identity|full name|workplace|"
    r"phone number|schedule|routine|movements|whereabouts) (?:of|behind|for)?)",
    r"\bunmask\w*", r"\bde ?anonymi[sz]\w*",
    r"\bdox(?:x)?(?:es|ed|ing)? (?:this|that|a|an|the|her|him|them|someone|somebody|my|his|their)\b",
    r"\b(?:collect|gather|find|dig up|pull|scrape|aggregate|"
    r"compile)\w* (?:\S+ ){0,2}?everything (?:\S+ ){0,2}?"
    r"(?:about|on)\b", r"\bdossier (?:on|about|of)\b",
    r"\b(?:find out|figure out|work out|identify) who (?:\S+ ){0,5}?(?:is|was|wrote|posted|runs)\b",
    r"\b(?:the )?(?:home|house|address|apartment|flat) of (?:the|this|that|a|my) ",
    r"\b(?:identify|find out|figure out|work out)\w* (?:\S+ ){0,2}?(?:real )?(?:person|people|man|woman|"
    r"owner|"
    r"human|individual) behind\b",
    r"\bcorrelat\w* (?:\S+ ){0,4}?(?:writing style|posting (?:times|habits|patterns)|usernames?|handles?|"
    r"alt accounts|other accounts)",
    r"\bpredict\w* (?:\S+ ){0,3}?(?:daily |weekly )?(?:schedule|routine|movements|whereabouts|location)s?\b",
    r"\b(?:compile|build|make|put together|assemble|creat|scrap|combin|merg|"
    r"aggregat)\w* (?:me )?(?:\S+ ){0,2}?"
    r"(?:dossier|everything "
    r"public|everything (?:there is|available)|(?:full |complete |detailed )?(?:profile|file) (?:on|of|"
    r"about))",
    r"\bcross ?referenc\w* (?:\S+ ){0,6}?(?:address|phone|name)",
    r"\beverything (?:you|i|we) can (?:find|dig up|get|pull) (?:on|about)\b",
    r"\b(?:what time|when) (?:she|he|they) (?:drops?|leaves?|gets? home|comes? home|is (?:home|alone|out))",
    r"\bwhen the (?:house|home|flat|apartment) is empty\b",
    r"\b(?:timeline|map|log|record|list|schedule) of where (?:she|he|they)\b",
)
#: The person found: a third party, never the asker.
THIRD_PERSON = (
    r"\b(?:she|he|her|him|his|this (?:girl|guy|woman|man|person)|(?:a|the) (?:\w+ )?(?:reporter|journalist|"
    r"person|woman|man|girl|guy|streamer|neighbou?r|account|owner)|my ex\w*|private person|anonymous account|"
    r"anonymous (?:\w+ )?(?:users?|posters?|accounts?|critics?|commenters?|"
    r"reviewers?|persons?)|a specific \w+|(?:one|a|this) (?:particular|specific|single) \w+|"
    r"someone|somebody|(?:this|that|an?) (?:\w+ ){0,2}?account|" + rf"my (?:\w+ )?{PERSON}" + r")\b"
)
#: The asker looking for their own details.
SELF_SOUGHT = (
    r"\b(?:(?:what|everything) (?:\S+ ){0,4}?(?:have|has|know|knows|holds?|keeps?) (?:on|about) me\b|"
    r"my (?:own )?(?:home )?address|(?:find|search|look up|google) myself)"
)
#: The person sought agreed to be found.
AGREED = r"\b(?:consent\w*|opt(?:s|ed)? in|with (?:her|his|their) (?:permission|knowledge|agreement))\b"

# --- crimes outside software -------------------------------------------------------------------------

#: Crimes the question asks to commit or cover up, each named by its act.
CRIME = alt(
    r"\blaunder\w*",
    r"\b(?:dirty|drug|stolen) money\b",
    r"\b(?:clean|wash)\w* (?:\S+ ){0,2}?(?:money|cash|funds) (?:through|via|with|using|by)\b",
    r"\bsmurf\w*",
    r"\bstructur\w* (?:\S+ ){0,2}?(?:deposits|cash|withdrawals)(?= (?:\S+ ){0,4}?(?:to avoid|under|below|so "
    r"(?:the )?banks? (?:don'?t|doesn'?t|won'?t)|without (?:triggering|reporting)))",
    r"\bpump (?:and|&|n) dump\w*", r"\bembezzl\w*",
    r"\b(?:money|cash|funds) (?:i|we) (?:took|stole|embezzled|skimmed|siphoned|diverted)\b",
    r"\bshell compan(?:y|ies) (?:\S+ ){0,2}?(?:to )?(?:hide|launder|move|park|"
    r"wash)\b", r"\bwash trad\w*", r"\bspoof\w* (?:\S+ ){0,2}?orders\b",
    r"\binsider trad\w*",
    r"\bfront ?run\w* (?:\S+ ){0,2}?(?:orders|"
    r"trades|customers|clients)\b",
    r"\b(?:sell|selling|deal|dealing|ship|shipping|push|pushing)\w* (?:\S+ ){0,3}?(?:drugs|weed|cannabis|"
    r"coke|"
    r"cocaine|meth|pills|xanax|oxy\w*|fentanyl|mushrooms|shrooms|lsd|mdma|ecstasy|heroin)\b",
    r"\b(?:fake|forged?|forging|fraudulent)\s+(?:\S+\s+){0,2}?(?:signatures?|passports?|ids?|id cards?|"
    r"driver'?s "
    r"licen[cs]es?|driving licen[cs]es?|documents?|diplomas?|degrees?|banknotes?|bills|money|currency|"
    r"checks?|"
    r"cheques?|prescriptions?|visas?|birth certificates?|notes?|pay ?stubs?|bank statements?|transcripts?|"
    r"certificates?|references?|receipts?|badges?|permits?|licen[cs]e plates?|notices?|letterheads?|"
    r"summons|court orders?|warrants?|letters?|(?:vaccination|vaccine|vax|insurance|health|student|"
    r"press|membership|"
    r"green|social security|medicare|residence|id) cards?|(?:medical|dental|school|"
    r"employment|bank|court|police|vaccination|immunization) records|doctor'?s notes?|sick notes?)\b",
    r"\b(?:realistic|convincing|believable|authentic ?looking|real ?looking|passable|legit ?looking)\s+"
    r"(?:\S+\s+){0,4}?(?:payslips?|pay ?stubs?|bank statements?|(?:bank|account|"
    r"brokerage) (?:\S+ ){0,3}?statements?|ids?|id cards?|passports?|diplomas?|degrees?|"
    r"doctor'?s notes?|sick notes?|prescriptions?|utility bills?|tax returns?|references?|certificates?|"
    r"licen[cs]es?|medical records)\b",
    r"\b(?:counterfeit|forged)\s+(?:\S+\s+){0,1}?(?:goods|sneakers|shoes|bags|handbags|watches|products|"
    r"clothes|"
    r"perfume|electronics|money|cash|bills|banknotes|currency|coins|notes|documents?|ids?|passports?|"
    r"signatures?|diplomas?|degrees?|certificates?|transcripts?|(?:\w+ )?(?:diploma|degree|certificate)s?|"
    r"art|paintings|tickets|stamps|checks|cheques|items?|designer \w+|luxury \w+)\b",
    r"\b(?:oxy\w*|fentanyl|xanax|adderall|opioids?|benzos?|ketamine|steroids|morphine|"
    r"codeine)\b[^.;?!]{0,40}?"
    r"\bwithout (?:a )?prescription|\bwithout (?:a )?prescription\b[^.;?!]{0,40}?\b(?:oxy\w*|fentanyl|xanax|"
    r"adderall|opioids?|benzos?|ketamine|morphine|codeine)\b",
    r"\bsteal\w* (?:\S+ ){0,2}?(?:fentanyl|drugs|meds|medications?|opioids?|oxy\w*|morphine|narcotics|cash|"
    r"money) from\b",
    r"\b(?:cook|cooked|cooking|make|making|made|synthesi[sz]\w*|produce|producing|produced|brew|brewed|"
    r"manufactur\w*|"
    r"extract\w*)\s+"
    r"(?:\S+\s+){0,2}?(?:meth|methamphetamine|crack|cocaine|heroin|fentanyl|mdma|lsd|ghb|crystal)\b",
    r"\b(?:get rid of|destroy\w*|hid(?:e|ing)|clean\w* up|remov\w*|dispos\w* of)\s+(?:\S+\s+){0,4}?"
    r"(?:the body|a body|fingerprints|blood ?stains?|dna)\b",
    r"\bevidence (?:of|from|after|on) (?:the |my |a )?(?:\S+ )?(?:crime|hit and run|accident|fire|break ?in|"
    r"theft|murder|killing|assault|robbery|burglary)\b",
    r"\bevidence (?:after i|on my|from my|that i)\b",
    r"\b(?:torch|burn|set fire to|wreck|crash|sink|destroy)\w* (?:\S+ ){0,3}?(?:for|to get|"
    r"to claim) (?:the )?"
    r"insurance",
    r"\bhit and run\b",
    r"\bswatt(?:ing|ed)\b",
    # "order a swat on a streamer", "swat him while he's live": the raid sent to someone's door
    r"\b(?:order|send|get|arrange|call)\w* (?:a |an )?swat (?:team )?(?:on|to|at)\b",
    r"\bswat (?:a |an |the |my |his |her |their |that )?(?:\w+ )?(?:streamer|gamer|player|youtuber|"
    r"neighbou?r|ex|rival|guy|girl|kid|him|her|them)\b",
    r"\bfake (?:emergency|911|999|112|police) (?:calls?|reports?)\b",
    r"\b(?:evade|escape|flee|dodge|avoid)\w* (?:\S+ ){0,2}?(?:the police|police|cops|law enforcement|a "
    r"warrant|the warrant|arrest|extradition|postal inspectors?|customs|the dea|dea|the feds|feds|"
    r"border (?:patrol|agents?)|immigration|animal control)\b",
    r"\bwarrant out for me\b",
    r"\b(?:stay|remain|keep|keeping|staying)\w* (?:\S+ ){0,2}?(?:hidden|hiding|under the radar|"
    r"off the radar) "
    r"from (?:the )?(?:police|cops|authorities|law|feds|animal control|inspectors|postal inspectors|"
    r"social services|child protective services|cps|customs|immigration|regulators)\b",
    r"\bcross\w* (?:the |a )?borders? (?:\S+ ){0,2}?(?:without (?:a |my )?(?:passport|papers|visa)|illegally|"
    r"undetected)",
    r"\bfake (?:\w+ )?(?:hostage|bomb|shooting|swat|active shooter) (?:calls?|reports?|threats?)\b",
    r"\b(?:report|call in|phone in|make|send|post)\w* (?:a |an )?(?:fake |false |hoax )?(?:bomb|shooting|"
    r"school shooting|anthrax) threats?\b",
    r"\bso (?:a |the )?swat (?:team )?(?:raids?|shows? up|comes?)",
    r"\bsmuggl\w* (?:\S+ ){0,3}?(?:drugs|guns|weapons|people|cash|contraband)\b",
    r"\bhot ?wir\w*",
    r"\bsteal\w* (?:\S+ ){0,2}?(?:cars?|vehicles?|bikes?|catalytic converters?|packages|parcels|teslas?|"
    r"motorbikes?|scooters?|trucks?)\b",
    r"\bbreak\w* into (?:a |the |his |her |their |someone'?s |my neighbou?r'?s )?(?:car|house|home|apartment|"
    r"flat)\b",
    r"\bshoplift\w*",
    r"\bsteal\w* (?:\S+ ){0,3}?(?:copper|wire|cables?|fuel|gas|diesel|tools|equipment|scrap|metal|"
    r"jewel\w*|tills?)\b",
    r"\b(?:rent\w* out|sublet\w*|sell\w*|lease\w*) (?:\S+ ){0,2}?(?:other people'?s|"
    r"someone(?: else)?'?s|strangers'?) "
    r"(?:\S+ ){0,2}?(?:listings?|homes?|houses?|apartments?|flats?|cars?|propert(?:y|ies))\b",
    r"\bstolen (?:prescription |blank )?(?:pads?|cheque ?books?|check ?books?|licen[cs]e plates?)\b",
    # evidence put on someone else, or forensic tests beaten
    r"\bplant\w* (?:\S+ ){0,4}?(?:evidence|hairs?|dna|fingerprints|blood|drugs|(?:a |the )?(?:gun|weapon|"
    r"knife))\b(?! (?:was|were|has|had|is|are)\b)",
    # contraband carried past the people who search for it
    r"\b(?:sneak|smuggl|slip|get|gets|getting)\w* (?:\S+ ){0,3}?(?:knife|knives|guns?|firearms?|pistols?|"
    r"weapons?|blades?|drugs|cocaine|coke|heroin|meth|fentanyl|explosives?|contraband)\b[^.;?!]{0,30}?\bpast "
    r"(?:the )?(?:\S+ ){0,2}?(?:metal detectors?|security|checkpoints?|customs|tsa|scanners?|x ?rays?|"
    r"bag checks?|sniffer dogs|dogs)\b",
    r"\bsneak\w* (?:\S+ ){0,3}?(?:past|through) (?:the )?(?:\S+ ){0,2}?(?:metal detectors?|security|"
    r"checkpoints?|customs|tsa|scanners?|x ?rays?|bag checks?)\b",
    # a shop set up to sell drugs or guns
    r"\b(?:darknet|dark ?web|onion) (?:\w+ ){0,2}?(?:vendor|shop|store|market)s? (?:\S+ ){0,2}?(?:for|"
    r"selling) (?:\w+ )?(?:meth|cocaine|coke|heroin|fentanyl|drugs|mdma|lsd|pills|guns|weapons)\b",
    # animals set to fight
    r"\b(?:dog|cock|rooster) ?fight\w*",
    # radios and phones jammed
    r"\bjam\w* (?:the |all )?(?:\w+ )?(?:police|emergency|cell(?:ular)?|mobile|gps|radio|phone|wi ?fi)s? "
    r"(?:\w+ )?(?:frequenc\w+|signals?|comms|communications|networks?|towers?|radios?|channels?)\b",
    r"\b(?:build|make|buy|use|set up)\w* (?:a |an )?(?:\w+ )?(?:cell|gps|phone|signal|wi ?fi|radio|"
    r"police|mobile) jammers?\b",
    # elections bought or ballots tampered with
    r"\b(?:buy|buying|bought|purchas\w*|pay\w* for) (?:\S+ )?votes\b|\bvote buying\b",
    r"\b(?:tamper(?:s|ed|ing)?|mess(?:ing)?|interfer(?:e|es|ed|ing)) with (?:\S+ ){0,2}?(?:ballots?|votes|"
    r"voting machines?|vote counts?|election results?|tallies)\b",
    r"\balter(?:s|ed|ing)? (?:\S+ ){0,2}?(?:ballots?|vote counts?|election results?|tallies)\b",
    r"\bstuff\w* (?:the )?ballot box\w*",
    r"\bballots? (?:\S+ ){0,4}?(?:get|are|be) (?:rejected|thrown out|discarded|spoiled|lost)\b",
    r"\b(?:receive|reship|forward|repackag)\w* (?:and \w+ )?(?:\S+ ){0,2}?(?:stolen|carded|"
    r"fraudulently bought) "
    r"(?:packages|parcels|goods|items|orders)\b",
)
#: Forensic work beaten: what an investigation would find is made to come out wrong.
FORENSIC_DEFEAT = (
    r"\b(?:beat|beats|beating|defeat\w*|fool\w*|foil\w*|evad\w*|thwart\w*|get\w* past|trick\w*|"
    r"contaminat\w*) (?:\S+ ){0,3}?(?:dna (?:tests?|testing|analysis|evidence|swabs?)|forensic (?:\S+ ){0,3}?"
    r"(?:analysis|tests?|testing|evidence|examination)|fingerprint (?:analysis|matching|evidence)|fiber "
    r"analysis|ballistics|luminol)"
)
#: Accounts made to look better than they are.
FALSE_BOOKS = (
    r"\b(?:fudg|cook|falsif|doctor|fak|inflat|pad|massag|juic|fabricat)\w* (?:\S+ ){0,2}?(?:the )?(?:books|"
    r"revenue|numbers|figures|financials|earnings|metrics|arr|mrr|sales|accounts|user counts?)\b"
)
#: Those the accounts are shown to.
SHOWN_TO = (
    r"\b(?:investors?|auditors?|lenders?|banks?|regulators?|the board|acquirers?|buyers?|shareholders?|"
    r"data room|due diligence|sec|irs|tax office)\b"
)
#: A moving vehicle taken over.
HIJACK_VEHICLE = (
    r"\b(?:hijack\w*|take\w* control of|take over|tak\w* over|hack\w* into|remotely (?:control|disable|"
    r"stop)\w*|disabl\w*) (?:\S+ ){0,3}?(?:cars?|vehicles?|trucks?|planes?|aircraft|drones?|bus|buses)\b"
    r"[^.;?!]{0,60}?\b(?:while (?:they'?re|he'?s|she'?s|it'?s|they are|he is|she is|it is) (?:driving|"
    r"flying|moving|on the)|remotely|at speed|on the (?:highway|motorway|freeway))"
)
#: Homes watched until they are empty, "so my friends can hit them".
CASING = (
    r"\bso (?:i|we|my (?:\w+ )?(?:friends?|crew|guys|boys|buddies|cousins?|brothers?|mates)) can (?:hit|rob|"
    r"burgl\w*|break into|clean out|loot) (?:them|it|those|the (?:\w+ )?(?:house|houses|homes?|places?))\b"
)
#: Watching which homes are empty is part of choosing one to burgle, not a defence.
SCOUTING = words("which what see tell figure out find know spot check watch notice")
#: Someone inside a company paid or persuaded to act for the asker.
INSIDER = alt(
    r"\binsiders? (?:at|in|inside) (?:a |an |the )?(?:\w+ ){0,2}?(?:company|carrier|telco|provider|bank|"
    r"store|"
    r"shop|firm)\b[^.;?!]{0,60}?\b(?:for (?:cash|money|a cut|a fee|bitcoin|crypto)|sim swaps?|"
    r"without a trail)",
    r"\b(?:recruit|bribe|pay|pay off|turn|convince|persuade)\w* (?:an? |the |some )?(?:insider|employee|"
    r"rep|clerk|"
    r"teller|agent|staff(?:er)?|worker)s? (?:at|in|inside|from|of) ",
    r"\b(?:bribe|bribing|socially engineer\w*|social engineer\w*|sweet ?talk\w*|pay\w* off|coerc\w*|"
    r"blackmail\w*)\s+(?:\S+\s+){0,3}?(?:insiders?|employees?|reps?|clerks?|tellers?|agents?|staff(?:ers)?|"
    r"workers?|support|customer (?:service|support)|helpdesk|help desk)\b",
    r"\b(?:insiders?|employees?|reps?|clerks?|tellers?|staff(?:ers)?|agents?|"
    r"workers?)\b[^.;?!]{0,30}?\b(?:talk|"
    r"trick|bribe|pay|persuade|convince|pressure|sweet ?talk)\w* (?:\S+ )?into\b",
)
#: Work against crime that names it.
AGAINST_CRIME = (
    r"\b(?:anti ?money|aml|kyc|compliance|(?<!metal )detect\w*|investigat(?:e|es|ed|ing|ion|ions)|"
    r"forensic\w*)\b"
    # "so forensic investigators can't identify it": the investigation is what the act evades
    r"(?! (?:\w+ )?(?:can'?t|cannot|won'?t|don'?t|doesn'?t|never|will not|wouldn'?t|think|thinks|believe|"
    r"believes|rules?|concludes?|detecting|noticing|finding|spotting)\b)"
)
#: An employer's or customers' data taken out.
TAKE_DATA_OUT = (
    r"\b(?:cop(?:y|ies|ying)|export\w*|download\w*|take|taking|mov(?:e|es|ing)|sync\w*|upload\w*|pull\w*|"
    r"sell\w*|leak\w*|"
    r"dump\w*|scrap\w*|extract\w*|siphon\w*|"
    r"exfiltrat\w*|smuggl\w*|walk out with)\s+(?:\S+\s+){0,4}?(?:(?:customer|client|user|employee|patient|"
    r"member|account|cardholder)s? (?:\w+ )?"
    r"(?:database|db|list|data|records|table|details|info)s?|source ?code|codebase|repos(?:itories)?|"
    r"trade secrets|"
    r"(?:\w+ )?database)\b"
)
#: Why the data leaves: unseen, sold, or on the way out of the job.
INSIDER_MOTIVE = (
    r"\b(?:without (?:\S+ ){0,5}?(?:noticing|knowing|seeing|detecting|finding out|triggering|tripping|"
    r"flagging)|leaving (?:any )?traces?|quietly|secretly|"
    r"sell\w* (?:it|them|\S+) to|sell\w* (?:it|them)\b|before (?:they|anyone|he|she|it|the \w+) "
    r"(?:notice|find out|realise|realize|catch on|revoke)\w*|leaving (?:next|this|in|at the end)|"
    r"to a competitor|"
    r"personal (?:drive|account|email|gmail|dropbox|laptop|"
    r"device)|"
    r"before i (?:leave|quit|go)|i'?m leaving)\b"
)

# --- pressure on a person ------------------------------------------------------------------------------

#: Making a person afraid.
INTIMIDATE = (
    r"\b(?:(?:we|i) know where (?:you|he|she|they) (?:live|lives|work|works|sleep|sleeps)|"
    r"teach (?:\w+ ){0,3}?a "
    r"lesson|make (?:\S+ ){0,2}?life (?:miserable|hell|a living hell)|drive (?:him|her|them) out|bully\w* "
    r"(?:him|her|them)|scare\w*|frighten\w*|intimidat\w*|terrori[sz]\w*|terrif\w*|so (?:she|he|they)(?:'s|"
    r"'re| is| are)? "
    r"(?:scared|afraid|terrified))\b"
)
#: Messages or calls sent to someone.
CONTACT = (
    r"\b(?:messages?|texts?|calls?|emails?|dms?|notes?|letters?|voicemails?|posts?|comments?|packages?|"
    r"parcels?|"
    r"envelopes?|powder|gifts?)\b"
)
#: A person the asker names as a target by relation or role.
PERSON_TARGET = (
    rf"\b(?:a|an|the|my|this|that|one) (?:\w+ )?{PERSON}(?:'s)?\b|\b(?:she|he|her|him)\b|\bthis \w+er\b"
)
#: Reporting or flagging an account to get it removed, from many accounts.
MASS_REPORT = (
    r"\b(?:mass ?report\w*|report ?bomb\w*|brigad\w*|(?:report|flag)\w* (?:\S+ ){0,4}?from (?:lots of |many |"
    r"multiple |different |\w+ )?(?:alts|alt accounts|accounts|sock ?puppets))"
)
#: Slurs, spelled to pass a filter.
SLURS = r"\b(?:slurs?|hate speech|racist (?:tweets?|posts?|jokes?|messages?|comments?))\b"
FILTER_EVADE = (
    r"\b(?:filters?|moderation|automod|(?:doesn'?t|don'?t|won'?t|can'?t) (?:catch|flag|detect|see)|get past|"
    r"bypass\w*|evad\w*)\b"
)

# --- what a thing does when someone opens it -----------------------------------------------------------

#: Triggered on whoever opens, plugs in or runs it: someone else's machine.
OPENED = (
    r"\b(?:when|once|as soon as|after) (?:the |a |an |my |his |her |their )?(?:\w+ ){0,2}?(?:opens?|clicks?|"
    r"plugs? (?:it|in)|enables?) (?:it|the|this|that|them)\b|"
    r"\b(?:(?:when|once|as soon as|after) (?:the |a |an |it |it'?s |its )?(?:\w+ )?(?:is |gets |are )?"
    r"(?:opened|plugged in|inserted|clicked|launched|installed|viewed|previewed)|(?:when|once|as soon as|"
    r"after) "
    r"(?:someone|anyone|they|the (?:victim|user|recipient|target)|people) (?:opens?|plugs?|clicks?|runs?|"
    r"installs?|downloads?|enables?))\b"
)

#: Characters whose acts a story or game describes: what they do is told, not asked for.
ACTORS_IN_A_STORY = words(
    """villain villains character characters player players npc npcs hero protagonist antagonist attacker
    attackers hacker hackers fraudster fraudsters scammer scammers criminal criminals intruder intruders
    cheaters"""
)
#: Words that, right after a third party, make what follows something they did or do, not the asker.
OBSERVED_AUX = words("is are was were has have had keeps kept might may could must got gets")
#: Third parties as the subject of an act.
THIRD_SUBJECT = words(
    """someone somebody anyone attacker attackers hacker hackers they he she fraudsters criminals scammers
    cheaters readers kids intruder intruders adversary adversaries people users students pupils employees
    staff customers children teens teenagers players members visitors bots ex wife husband partner girlfriend
    boyfriend boss roommate flatmate neighbour neighbor coworker colleague landlord caller callers law sister
    brother mother father mom mum dad cousin aunt uncle friend student pupil employee customer player member
    visitor child kid teen teenager stranger scammer fraudster criminal"""
)
#: Nouns naming software or records: what a verb before them builds, rather than the agent after them.
SOFTWARE_PRODUCT = words(
    """software app application system platform tool dashboard database inventory tracker model api service
    website site pipeline simulator ui schema registry catalog catalogue records crm erp portal"""
)
#: Artifacts requested by naming them with what they do ("script that records every key").
ARTIFACT_CLAUSE = (
    r"^(?:(?:pls|please|ok|so|now) )?(?:(?:i )?(?:need|want) )?(?:a |an |the |some |me )?(?:\w+ ){0,3}?"
    r"(?:script|program|code|app|application|tool|extension|bot|exe|binary|macro|document|pdf|file|software|"
    r"something|utility|plugin|add ?on|payload|implant|mod|screensaver|usb|stick|installer|game|page|site|"
    r"link)s? (?:that|which|to)\b"
)
#: The things an artifact clause names, as the subject of a modal ("the app should also…").
ARTIFACT_NOUNS = words(
    """script scripts program programs code app apps application tool extension bot exe binary macro
    document pdf file software utility plugin addon payload implant mod screensaver installer game page
    site link it"""
)
#: Watching a person: on the way to finding where they are, part of the act rather than a defence.
WATCHING = words(
    "monitor monitors monitoring track tracks tracking check checks watch watches watching scan scans"
)
#: Trying instruments out: with a stolen card or login in hand, testing it is using it.
TRY_OUT = words(
    "test tests testing check checks checking verify verifying validate validating against hit hits hitting"
)
#: A modal that says what the thing asked for must do ("it should also encrypt…").
SPEC_MODAL = words("should must shall")
#: Words that get around the control named right after them ("bypass the fraud checks").
CIRCUMVENT = words(
    """bypass bypasses bypassing evade evades evading avoid avoids avoiding dodge dodges dodging beat beats
    beating defeat defeats defeating circumvent circumvents circumventing disable disables disabling fool
    fools fooling trick tricks tricking outsmart around past triggering trigger tripping trip blind blinding
    slip sneak"""
)
#: Defending words that only tell about an act: what a story, a role or a lesson has someone explain.
EXPLAINING = words(
    """explain explains explaining describe describes describing how understand learn study overview
    conceptually difference"""
)
#: A request for working detail, whatever frames it (a story, a grandparent, a class).
OPERATIONAL = (
    r"\b(?:schritt f(?:u|ü)r schritt|paso a paso|(?:with|including|give me|write|show me|"
    r"provide)\s+(?:the\s+)?(?:full\s+|complete\s+)?(?:working|"
    r"functional|compilable|runnable|complete|full|real|actual)\s+(?:code|source|script|steps|instructions|"
    r"recipe)|step by step|exact (?:quantities|amounts|temperatures|steps|measurements|ratios)|(?:every|"
    r"each|all the|"
    r"the) (?:real |actual |exact |working )+steps?|nothing left out|"
    r"don'?t (?:leave out|skip|hold back)|word for word|every (?:single )?step|(?:detailed|full|complete|"
    r"exact) steps|(?:don'?t|do not) leave (?:anything|any step|a step) out|leave nothing out|fully working|"
    r"ready to use|verbatim|(?:techniques?|methods?|tricks?|ways?) that (?:really|actually) work|"
    r"(?:with )?(?:its |the |their )?full contents|(?:the )?(?:actual|exact|real|full) "
    r"(?:script|wording|words|message|pitch))\b"
)

# --- acts split out of the lists above: each searched only when its rare word occurs ------------------

#: Someone else's traffic read, intercepted or sniffed.
TECHNIQUE_TRAFFIC = alt(
    r"\b(?:read|see|watch|capture|log|sniff)\w* (?:his|her|their|\w+'s) (?:network )?(?:traffic|browsing|"
    r"packets|"
    r"dns queries)\b",
    r"\bintercept\w* (?:\S+ ){0,3}?(?:traffic|packets|requests|communications|connections)\b",
    r"\b(?:mitm|man in the middle|arp spoof\w*|packet sniff\w*)\b",
    r"\bsniff\w* (?:\S+ ){0,2}?(?:traffic|packets|wifi|network|passwords|credentials|creds|cookies)\b",
)
TRAFFIC_NOUN = (
    r"\b(?:traffic|browsing|packets|dns|mitm|middle|arp|sniff\w*|communications|connections|requests)\b"
)
#: A session taken over or its cookies and tokens stolen.
TECHNIQUE_SESSION = alt(
    r"\bhijack\w* (?:\S+ ){0,2}?sessions?\b", r"\bsession hijack\w*",
    r"\b(?:steal|replay|clone)\w* (?:\S+ ){0,2}?(?:session|cookies?|tokens?)\b",
)
SESSION_NOUN = r"\b(?:sessions?|cookies?|tokens?)\b"
#: A court's or a parole officer's monitor defeated.
MONITOR_TAMPER = (
    r"\b(?:fak|spoof|trick|fool|beat|bypass|cut|remov|disabl)\w* (?:\S+ ){0,6}?(?:ankle (?:monitor|tag|"
    r"bracelet)s?|"
    r"electronic (?:tag|monitor)s?|gps tags?|curfew tags?)"
)
MONITOR_NOUN = r"\b(?:ankle|electronic (?:tag|monitor)|gps tags?|curfew tags?)"
#: Counterfeits made or sold, whatever the goods.
SELL_COUNTERFEIT = (
    r"\b(?:sell|selling|sells|make|making|produc\w*|ship\w*|import\w*|distribut\w*|manufactur\w*)\s+"
    r"(?:\S+\s+){0,2}?(?:counterfeit|knock ?off|bootleg|replica|fake (?:branded|designer|brand))\s+\w+"
)
COUNTERFEIT_NOUN = r"\b(?:counterfeit|knock ?off|bootleg|replica|fake (?:branded|designer|brand))\b"
#: The steps to make a street drug.
DRUG_STEPS = (
    r"\b(?:steps?|recipe|instructions|manual|guide|procedure|process) (?:\S+ ){0,2}?(?:for|to make|to cook|"
    r"of) (?:crystal |pure |street |blue |\w+ grade )?"
    r"(?:meth|methamphetamine|crack|cocaine|heroin|fentanyl|mdma|lsd|ghb)\b|"
    r"\bpress\w* (?:\S+ ){0,3}?(?:fake |counterfeit )?(?:xanax|oxy\w*|adderall|percocets?|m30s?|fentanyl|"
    r"(?:fake|counterfeit) (?:\S+ )?(?:pills?|bars|tablets?))\b|"
    r"\bcut\w* (?:\S+ ){0,2}?(?:heroin|cocaine|coke|meth|drugs?|product) with\b"
)
DRUG_NOUN = (
    r"\b(?:meth|methamphetamine|crack|cocaine|coke|heroin|fentanyl|mdma|lsd|ghb|xanax|oxy\w*|adderall|percocets?|"
    r"m30s?|drugs?|pills?|bars|tablets?)\b"
)
