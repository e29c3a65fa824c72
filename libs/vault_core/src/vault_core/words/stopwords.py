"""Function words per language: what a question is made of besides what it asks about.

Short on purpose — articles, pronouns, prepositions, auxiliaries, question words —
so that no word a note could be about ("link", "page", "new", "open") is ever dropped.
"""

from __future__ import annotations

from collections.abc import Mapping

_LISTS = {
    "english": """a an the this that these those it its i me my we us our you your he him his
        she her they them their what which who whom whose where when why how is are was were
        be been being am do does did doing done have has had having can could shall should will
        would may might must of to in on at by for with from into onto about as than then so
        if or and but not no nor any some there here also just only very too more most such
        own same other each both all either neither whether while until up down out over under
        again once get gets got please want wants way ways something anything one ones i'm
        i've i'd i'll don't doesn't can't isn't aren't what's it's that's there's let's""",
    "german": """der die das den dem des ein eine einen einem einer eines und oder aber nicht
        kein keine ist sind war waren bin bist sein seine ihr ihre ich du er sie es wir mich
        mir dich dir uns euch man wie was wer wo wann warum welche welcher welches wieso mit
        von zu zum zur bei auf aus an am im in ins für über unter nach vor durch um als auch
        nur noch schon so dass ob wenn kann kannst können muss müssen soll sollte will wollen
        werden wird wurde habe hast hat haben hatte gibt es diese dieser dieses mein meine""",
    "french": """le la les l un une des du de d et ou mais ne pas ni est sont était être ai as
        a avons avez ont je tu il elle on nous vous ils elles me te se moi toi lui leur leurs
        mon ma mes ton ta tes son sa ses ce cet cette ces qui que quoi quel quelle quels quelles
        où quand comment pourquoi dans en sur sous avec sans pour par au aux y plus moins très
        aussi si peut peux pouvez puis faire fait dois doit veux voudrais est-ce c qu s""",
    "spanish": """el la los las lo un una unos unas y o pero no ni es son era ser estar está
        están he ha han hay yo tú él ella nosotros vosotros ellos ellas me te se nos os mi mis
        tu tus su sus qué que cuál cuáles quién quiénes dónde cuándo cómo por porqué de del a
        al en con sin para sobre entre como más menos muy también si puedo puede pueden
        quiero debo hacer este esta estos estas ese esa""",
    "italian": """il lo la i gli le un uno una e o ma non né è sono era essere ho hai ha
        abbiamo hanno io tu lui lei noi voi loro mi ti si ci vi mio mia tuo tua suo sua che
        chi cosa quale quali dove quando come perché di del della dei delle a al alla da in
        nel nella con su per tra fra più meno molto anche se posso può possono""",
    "portuguese": """o a os as um uma uns umas e ou mas não nem é são era ser estar está
        tenho tem têm eu tu ele ela nós vós eles elas me te se nos meu minha teu tua seu sua
        que qual quais quem onde quando como porque de do da dos das em no na nos nas com sem
        para por sobre entre mais menos muito também se posso pode podem""",
    "dutch": """de het een en of maar niet geen is zijn was waren ben ik jij je hij zij ze
        wij we mij me ons jullie hun wat welke wie waar wanneer waarom hoe van naar in op aan
        met zonder voor door over bij uit als ook nog al dat dit die deze kan kunnen moet
        wil wordt worden heb heeft hebben mijn""",
}

STOPWORDS: Mapping[str, frozenset[str]] = {
    language: frozenset(words.split()) for language, words in _LISTS.items()
}
