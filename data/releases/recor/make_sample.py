"""Writes the bundled RECOR release sample (README.md beside this file says what is real).

Two domains in the layout of the published release (``data/benchmark/{domain}_benchmark.jsonl``,
``data/corpus/{domain}_documents.jsonl``): biology shaped as a BRIGHT domain, law as a
StackExchange one, two conversations each. The documents, turns, answers and retrieval
reasoning are written out below; each turn's ``conversation_history`` is composed by the
published construction's rule (``assets.recor.release.history_text``), so that it cannot drift
from the turns before it.

Run from the project root: ``.venv/bin/python data/releases/recor/make_sample.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from assets.recor.release import history_text

HERE = Path(__file__).resolve().parent

BIO_DOCS = {
    "apple_browning/Polyphenol_oxidase_0.txt": (
        "Polyphenol oxidase (PPO) is a copper-containing enzyme found in most plants and in some fungi and animals. In intact plant "
        "cells the enzyme sits in the plastids while its phenolic substrates are stored mainly in the vacuole, so the two rarely meet. "
        "When tissue is cut, bruised or bitten, these compartments break open and, in the presence of oxygen, the enzyme oxidises "
        "phenols such as chlorogenic acid and catechins to quinones. Quinones are highly reactive: they polymerise and combine with "
        "amino acids and proteins to form brown pigments known as melanins."),
    "apple_browning/Enzymatic_browning_1.txt": (
        "Enzymatic browning is the discoloration of fruits and vegetables such as apples, pears, bananas, potatoes and avocados after "
        "they are cut or damaged. It needs three things at once: the enzyme, its phenolic substrates and oxygen. Cooks and food "
        "processors slow it by taking one of these away: keeping air out by covering slices with water or packing them under vacuum, "
        "chilling them, since cold slows the reaction, or inactivating the enzyme by blanching with heat. Not all enzymatic browning "
        "is unwanted; it gives black tea and raisins much of their colour."),
    "apple_browning/Ascorbic_acid_2.txt": (
        "Ascorbic acid (vitamin C) is the most widely used agent against browning of cut fruit. It is a reducing agent: it turns the "
        "quinones formed by polyphenol oxidase back into colourless phenols before they can polymerise, so browning is delayed until "
        "the ascorbic acid has been used up. Lemon juice acts in a similar way. Besides its ascorbic acid, its citric acid lowers the "
        "pH, and the enzyme loses most of its activity in strongly acidic conditions; citric acid also binds the copper the enzyme "
        "needs."),
    "apple_browning/Arctic_apple_3.txt": (
        "Arctic apples are genetically engineered apple varieties developed by the Canadian company Okanagan Specialty Fruits. Gene "
        "silencing was used to reduce the fruit's production of polyphenol oxidase, so that slices stay pale long after cutting. The "
        "first two varieties, derived from Golden Delicious and Granny Smith, were approved in the United States and in Canada in 2015. "
        "Conventional varieties also differ in how quickly they brown, because they differ in their content of the enzyme and of "
        "phenolic compounds."),
    "apple_browning/Maillard_reaction_4.txt": (
        "The Maillard reaction is a non-enzymatic browning reaction between amino acids and reducing sugars that takes place when food "
        "is heated. It is named after the French chemist Louis Camille Maillard, who described it in 1912. It produces the colour and "
        "many of the flavours of bread crust, roasted coffee, toasted nuts and seared meat, and it proceeds quickly at the high "
        "temperatures of baking, roasting and frying."),
    "apple_browning/Caramelization_5.txt": (
        "Caramelization is the browning of sugar itself when it is heated strongly. Unlike the Maillard reaction it needs no amino "
        "acids: the sugar molecules break down and recombine into hundreds of compounds that give caramel its brown colour, nutty "
        "flavour and slight bitterness. Table sugar (sucrose) begins to caramelize at around 160 degrees Celsius."),
    "apple_browning/Ethylene_6.txt": (
        "Ethylene is a gaseous plant hormone that triggers ripening in climacteric fruits such as apples, bananas, pears and tomatoes. "
        "A ripening fruit releases ethylene, which speeds the ripening of the fruit around it; this is why a ripe banana placed in a "
        "bag with unripe fruit hastens it. Apples are kept for months in stores with a low-oxygen controlled atmosphere, often after "
        "treatment with 1-methylcyclopropene, a compound that blocks the fruit's response to ethylene."),
    "apple_browning/Apple_7.txt": (
        "The apple (Malus domestica) is a tree of the rose family, Rosaceae, grown for its fruit. It originated in Central Asia, where "
        "its main wild ancestor, Malus sieversii, still grows. There are thousands of cultivars. Because apples grown from seed differ "
        "from their parents, cultivars are propagated by grafting onto rootstocks, which also control the size of the tree."),
    "tardigrade_survival/Tardigrade_0.txt": (
        "Tardigrades, also called water bears, are microscopic eight-legged animals, most of them less than a millimetre long. They "
        "live in the seas, in fresh water and in the films of water on mosses, lichens and leaf litter. Many land-dwelling species "
        "survive drying out by anhydrobiosis: as their surroundings dry, they draw in their head and legs and contract into a compact "
        "barrel-shaped form called a tun, lose almost all of their body water and reduce their metabolism to an undetectable level. "
        "In this state they can persist for years and become active again within hours of being rehydrated."),
    "tardigrade_survival/Cryptobiosis_1.txt": (
        "Cryptobiosis is a state in which an organism's metabolism falls to an undetectable level while it remains alive and able to "
        "recover. Its forms are named after their cause: anhydrobiosis (extreme drying), cryobiosis (freezing), osmobiosis (high "
        "salt concentration) and anoxybiosis (lack of oxygen). Besides tardigrades, organisms capable of it include bdelloid "
        "rotifers, some nematodes, the cysts of brine shrimp and the larvae of the African midge Polypedilum vanderplanki."),
    "tardigrade_survival/Intrinsically_disordered_proteins_2.txt": (
        "Many organisms that survive drying accumulate the sugar trehalose, which takes the place of water around membranes and "
        "proteins and solidifies into a glass as the cell dries. Tardigrades make little or none of it. A study published in 2017 "
        "found instead that they rely on tardigrade-specific intrinsically disordered proteins, among them the cytoplasmic-abundant "
        "heat-soluble (CAHS) proteins, which are produced in large amounts as the animals dry and form a glass-like solid. Reducing "
        "the proteins' production lowered the tardigrades' survival of drying, and producing them in yeast and bacteria made those "
        "organisms more tolerant of it."),
    "tardigrade_survival/Dsup_3.txt": (
        "Dsup (damage suppressor) is a protein found in the tardigrade Ramazzottius varieornatus, described in 2016 after the "
        "species' genome was sequenced. It binds to nucleosomes, the units in which DNA is wound around histone proteins, and is "
        "thought to shield the DNA from hydroxyl radicals produced by radiation. Cultured human cells engineered to produce Dsup "
        "suffered markedly less DNA damage from X-rays than unmodified cells."),
    "tardigrade_survival/Tardigrades_in_space_4.txt": (
        "In September 2007, in the TARDIS experiment on the FOTON-M3 mission, dried tardigrades of two species were exposed to "
        "open space in low Earth orbit for about ten days. Animals exposed to the vacuum alone, shielded from sunlight, survived and "
        "reproduced about as well as animals kept on the ground. Exposure to the Sun's unfiltered ultraviolet radiation as well killed "
        "most of them, although a few individuals survived it."),
    "tardigrade_survival/Bdelloid_rotifer_5.txt": (
        "Bdelloid rotifers are microscopic freshwater animals known for two unusual traits. No males have ever been found, and the "
        "animals appear to have reproduced without sex for millions of years. They also survive complete drying at any stage of "
        "life, and their genomes contain many genes acquired from bacteria, fungi and plants by horizontal gene transfer."),
    "tardigrade_survival/Extremophile_6.txt": (
        "An extremophile is an organism that thrives in physical or chemical conditions that are lethal to most life, such as high "
        "temperature, acidity, salinity or pressure. Thermophiles grow best at high temperatures; the bacterium Thermus aquaticus, "
        "isolated from a hot spring in Yellowstone National Park, is the source of the Taq polymerase used in the polymerase chain "
        "reaction. A strain of the archaeon Methanopyrus kandleri has been grown at 122 degrees Celsius."),
    "tardigrade_survival/Deinococcus_radiodurans_7.txt": (
        "Deinococcus radiodurans is a bacterium that is exceptionally resistant to ionizing radiation, surviving doses thousands of "
        "times higher than those that kill a human. It keeps several copies of its genome and can reassemble chromosomes shattered "
        "into many fragments, and it protects its repair proteins from oxidative damage. It was first isolated in 1956 from canned "
        "meat that had been sterilized with radiation."),
    "tardigrade_survival/Panspermia_8.txt": (
        "Panspermia is the hypothesis that life exists throughout the universe and is spread between planets by meteoroids, comets "
        "or asteroids. A version called lithopanspermia proposes that microorganisms travel inside rocks thrown off a planet by "
        "impacts. Experiments exposing hardy organisms to space are cited in the debate, but there is no evidence that life has ever "
        "travelled between planets."),
    "tardigrade_survival/Ecdysozoa_9.txt": (
        "Ecdysozoa is a major group of animals that grow by moulting their outer layer, the cuticle. It includes the arthropods, the "
        "nematodes and the tardigrades, along with several smaller groups. The grouping was proposed in 1997 on the basis of "
        "molecular data, and it replaced the earlier view that arthropods were most closely related to segmented worms."),
}

LAW_DOCS = {
    "law_ex_41233_doc_0": (
        "In common-law systems most agreements do not have to be written down to be enforceable. A contract is formed when one party "
        "makes an offer, the other accepts it, and each gives something of value in exchange, called consideration. An oral agreement "
        "that meets these requirements binds the parties as a written one would; the practical difficulty is proving what was agreed, "
        "which may depend on witnesses, messages, payments or the parties' later conduct."),
    "law_ex_41233_doc_1": (
        "The statute of frauds, first enacted in England in 1677, requires certain kinds of contract to be evidenced by a writing "
        "signed by the party against whom enforcement is sought. In the United States the categories usually include contracts for "
        "the sale of an interest in land, contracts that cannot be performed within one year of their making, promises to answer "
        "for another person's debt, contracts made in consideration of marriage, and promises by an executor to pay the estate's "
        "debts personally. Under section 2-201 of the Uniform Commercial Code, a contract for the sale of goods for a price of $500 "
        "or more also needs a signed writing."),
    "law_ex_41233_doc_2": (
        "Courts enforce some oral agreements despite the statute of frauds. Under the part-performance doctrine, an oral contract to "
        "sell land may be enforced where the buyer has taken possession and paid or made improvements in reliance on it, and "
        "promissory estoppel can protect a party who relied on a promise to their detriment. For sales of goods, section 2-201 of the "
        "Uniform Commercial Code dispenses with the writing for specially manufactured goods, for goods that have been paid for and "
        "accepted or received and accepted, where the party against whom enforcement is sought admits the contract in court, and, "
        "between merchants, where a written confirmation was sent and not objected to within ten days."),
    "law_ex_52871_doc_0": (
        "Under United States copyright law a mere list of ingredients is not protected. Copyright covers original expression, not "
        "ideas, procedures, processes or methods of operation (17 U.S.C. section 102(b)), and the U.S. Copyright Office does not "
        "register a list of ingredients or simple directions for making a dish. In Publications International, Ltd. v. Meredith Corp. "
        "(1996) the Court of Appeals for the Seventh Circuit held that the recipes in a cookbook, as functional lists of ingredients "
        "and directions, were not copyrightable."),
    "law_ex_52871_doc_1": (
        "Copyright can protect the literary expression that accompanies a recipe, such as an explanation, an anecdote or a "
        "description in original wording, and the photographs and illustrations of a cookbook. A cookbook can also be protected as "
        "a compilation when the selection and arrangement of its recipes are original, although that protection does not extend to "
        "the individual recipes. Copying a recipe's text word for word can therefore infringe even though cooking the dish from it, "
        "or restating the ingredients and steps in one's own words, does not."),
    "law_ex_52871_doc_2": (
        "A recipe or formula that is kept confidential can be protected as a trade secret. The protection lasts as long as the "
        "secret is kept, but it does not stop anyone who works the formula out independently or by analysing the product; the formula "
        "of Coca-Cola is a well-known example of a trade secret. A new and non-obvious process for preparing food can in principle be "
        "patented, but a patent publishes the invention and lasts about twenty years from filing. The name of a dish or product can "
        "be registered as a trademark, which does not prevent others from making the dish."),
    "law_ex_41233_hn_0": (
        "The parol evidence rule limits the use of evidence of earlier or contemporaneous agreements to change the terms of a written "
        "contract that the parties intended as the final expression of their agreement. Evidence may still be admitted to show fraud, "
        "mistake or a condition on which the contract's effect depends, or to explain an ambiguous term."),
    "law_ex_41233_hn_1": (
        "A contract of adhesion is a standard-form contract drafted by one party and offered to the other on a take-it-or-leave-it "
        "basis, such as an insurance policy or the terms of service of a website. Such contracts are generally enforceable, but courts "
        "read ambiguous terms against the party that drafted them and may refuse to enforce terms that are unconscionable."),
    "law_ex_41233_hn_2": (
        "In the United States the Electronic Signatures in Global and National Commerce Act of 2000 (ESIGN) and the Uniform Electronic "
        "Transactions Act, adopted by most states, provide that a signature, contract or record may not be denied legal effect solely "
        "because it is in electronic form."),
    "law_ex_41233_hn_3": (
        "Lemon laws are state laws in the United States that give remedies to buyers of new vehicles with serious defects that the "
        "manufacturer fails to repair after a reasonable number of attempts, usually a replacement vehicle or a refund. Most of them "
        "cover only new vehicles; purchases of used cars are governed mainly by the contract and by warranty law."),
    "law_ex_41233_hn_4": (
        "Past consideration is generally not valid consideration: a promise made in return for something the other party has already "
        "done, without any request or expectation of payment at the time, is usually not enforceable as a contract. Some "
        "jurisdictions enforce such promises in limited cases, for example a written promise to pay a debt barred by limitation."),
    "law_ex_52871_hn_0": (
        "Fair use is a defence to copyright infringement in United States law. Section 107 of the Copyright Act directs courts to "
        "weigh four factors: the purpose and character of the use, including whether it is commercial; the nature of the copyrighted "
        "work; the amount and substantiality of the portion used; and the effect of the use on the market for the original."),
    "law_ex_52871_hn_1": (
        "In the United States, copyright in a work created on or after 1 January 1978 lasts for the life of the author plus 70 years. "
        "For a work made for hire, or an anonymous or pseudonymous work, it lasts 95 years from first publication or 120 years from "
        "creation, whichever ends first."),
    "law_ex_52871_hn_2": (
        "A work in the public domain is one that no exclusive intellectual property right protects, because its protection has "
        "expired, was forfeited, or never existed. Works first published in the United States before 1929 are in the public domain "
        "there, and so are most works produced by officers and employees of the United States federal government as part of their "
        "duties."),
    "law_ex_52871_hn_3": (
        "Genericide is the loss of trademark protection when a brand name becomes the common name for a kind of product. In the "
        "United States, aspirin and escalator were once trademarks and became generic terms, which is why owners of marks in wide "
        "use urge the public to use them as adjectives followed by the product's generic name."),
}

# (conversation id, original query, original answer, [(query, answer, gold, reasoning, target, relevance, irrelevance)])
BIOLOGY = [
    ("biology_12",
     "Why does an apple I cut for my lunch turn brown within a few minutes, and is there anything I can do about it?",
     "Cutting ruptures the apple's cells, letting the enzyme polyphenol oxidase meet the fruit's phenolic compounds; with oxygen "
     "from the air it oxidises them to quinones, which polymerise into brown melanins. Lemon juice slows this because its "
     "ascorbic acid reduces the quinones back to phenols and its acidity inhibits the enzyme; cold and keeping air away help too. "
     "Varieties differ in how fast they brown, and genetically engineered Arctic apples barely brown at all.",
     [("Why does a sliced apple go brown after a few minutes on the counter?",
       "Cutting breaks open the apple's cells, so the enzyme polyphenol oxidase, normally kept apart from the fruit's phenolic "
       "compounds, comes into contact with them. With oxygen from the air it oxidises the phenols to quinones, which link up into "
       "brown melanin pigments. This is called enzymatic browning.",
       ["apple_browning/Polyphenol_oxidase_0.txt", "apple_browning/Enzymatic_browning_1.txt"],
       "The user asks for the cause of the colour change. Useful documents explain the enzyme involved, why it only acts once the "
       "cells are damaged, and what pigment results; documents on browning caused by cooking do not explain a raw apple.",
       "the enzymatic reaction that turns cut apple flesh brown",
       ["polyphenol oxidase", "phenolic compounds", "oxygen", "quinones and melanin"],
       ["Maillard reaction", "browning on heating", "fruit ripening"]),
      ("Why does squeezing lemon juice on it keep it from browning?",
       "Lemon juice contains ascorbic acid, which turns the quinones back into colourless phenols before they can form pigments, "
       "and its citric acid lowers the pH, which slows the enzyme. The protection lasts until the ascorbic acid is used up.",
       ["apple_browning/Ascorbic_acid_2.txt"],
       "This follow-up is about preventing the reaction described before. Relevant documents say how an ingredient of lemon juice "
       "interferes with polyphenol oxidase or with its products; general descriptions of browning are not enough.",
       "how ascorbic acid and acidity inhibit enzymatic browning",
       ["ascorbic acid", "reducing agent", "low pH", "anti-browning"],
       ["vitamin C in nutrition", "caramelization"]),
      ("Are there apples that don't brown at all?",
       "Varieties brown at different speeds because they contain different amounts of the enzyme and its substrates. Arctic "
       "apples go further: they were genetically engineered to make much less polyphenol oxidase, so their flesh stays pale after "
       "cutting; the first of them were approved in the United States and Canada in 2015.",
       ["apple_browning/Arctic_apple_3.txt"],
       "The user wants apples that resist browning. Look for documents on varieties with low polyphenol oxidase, in particular "
       "engineered ones; documents on apple cultivation or storage in general do not answer it.",
       "apple varieties that do not brown and how they were made",
       ["non-browning apple", "gene silencing", "reduced polyphenol oxidase"],
       ["grafting and rootstocks", "controlled-atmosphere storage"])]),
    ("biology_31",
     "How do tardigrades survive conditions that would kill almost any other animal, like drying out, radiation and even space?",
     "Tardigrades survive drying by anhydrobiosis, a form of cryptobiosis: they contract into a tun, lose almost all their water "
     "and suspend metabolism until rehydrated. Rather than relying on trehalose they produce tardigrade-specific intrinsically "
     "disordered proteins that form a protective glass. Some species make Dsup, a protein that binds chromatin and reduces DNA "
     "damage from radiation. In 2007 dried tardigrades survived ten days of exposure to the vacuum of space in orbit, though "
     "unfiltered solar ultraviolet light killed most of them.",
     [("How can tardigrades survive being completely dried out?",
       "They enter anhydrobiosis, a form of cryptobiosis: as they dry they pull in their head and legs and shrink into a "
       "barrel-shaped tun, lose almost all of their body water and reduce their metabolism to an undetectable level. They can stay "
       "like that for years and become active again within hours of getting water.",
       ["tardigrade_survival/Tardigrade_0.txt", "tardigrade_survival/Cryptobiosis_1.txt"],
       "The first question asks for the survival strategy itself. Relevant documents describe the dried state of tardigrades and "
       "the general phenomenon of suspended metabolism; documents about other hardy organisms only help if they define the state.",
       "what happens to a tardigrade as it dries out and how it revives",
       ["anhydrobiosis", "tun state", "cryptobiosis", "rehydration"],
       ["bacterial radiation resistance", "heat-loving microbes"]),
      ("Do they use sugars like trehalose to protect their cells, as other animals do?",
       "Mostly not: tardigrades make little or no trehalose. Instead they produce tardigrade-specific intrinsically disordered "
       "proteins, such as the CAHS proteins, in large amounts while drying; these form a glass-like solid, and without them the "
       "animals survive drying far less well.",
       ["tardigrade_survival/Intrinsically_disordered_proteins_2.txt"],
       "The user asks about the molecules behind desiccation tolerance, naming trehalose. Useful documents compare trehalose with "
       "what tardigrades actually make and give the experimental evidence; descriptions of the tun alone are not enough.",
       "the molecules tardigrades use to protect their cells during drying",
       ["trehalose", "intrinsically disordered proteins", "CAHS", "vitrification"],
       ["horizontal gene transfer", "tardigrade classification"]),
      ("Is it true they can also survive radiation? What protects their DNA?",
       "Yes. The tardigrade Ramazzottius varieornatus makes a protein called Dsup that binds to nucleosomes in its chromatin and "
       "is thought to shield the DNA from hydroxyl radicals; human cells engineered to make Dsup suffered markedly less DNA damage "
       "from X-rays.",
       ["tardigrade_survival/Dsup_3.txt"],
       "The user moves from drying to radiation and asks what protects the genome. Relevant documents name a tardigrade protein "
       "and how it protects DNA; documents on radiation-resistant bacteria describe other organisms' mechanisms.",
       "the tardigrade protein that protects DNA from radiation damage",
       ["Dsup", "nucleosome binding", "X-ray", "DNA damage"],
       ["Deinococcus radiodurans", "DNA repair in bacteria"]),
      ("Have they actually survived in outer space?",
       "Yes. In the TARDIS experiment on the FOTON-M3 mission in 2007, dried tardigrades spent about ten days exposed to open space "
       "in orbit. Those exposed only to the vacuum survived and reproduced about as well as ground controls; unfiltered solar "
       "ultraviolet radiation killed most of the others, though a few survived.",
       ["tardigrade_survival/Tardigrades_in_space_4.txt"],
       "This turn asks for evidence from an actual experiment in space. Useful documents report a mission, the conditions of "
       "exposure and the survival of the animals; speculation about life travelling between planets does not answer it.",
       "results of exposing tardigrades to open space",
       ["low Earth orbit", "space vacuum", "solar ultraviolet", "FOTON-M3"],
       ["panspermia hypothesis", "extremophile definitions"])]),
]

LAW = [
    ("ex_41233",
     "Is a verbal agreement to sell my car legally binding? My neighbour and I agreed verbally that he would buy my old car for "
     "$3,000. Nothing was written down. Can either of us back out?",
     "Most contracts need no writing: offer, acceptance and consideration are enough, though the terms must be proved. The statute "
     "of frauds makes exceptions, and under UCC section 2-201 a sale of goods for $500 or more, such as this car, needs a signed "
     "writing. That requirement does not apply to goods that have been paid for and accepted, so once the neighbour has paid and "
     "taken the car the sale can be enforced.",
     [("My neighbour and I agreed out loud that he'd buy my old car for $3,000. Is a spoken agreement like that legally binding?",
       "In general, yes: a contract is formed by offer, acceptance and consideration, and does not have to be written down to bind "
       "the parties. The practical difficulty with an oral agreement is proving its terms, for which witnesses, messages or "
       "payments can serve.",
       ["law_ex_41233_doc_0"],
       "The user asks whether an oral agreement can be a contract at all. Relevant documents state the elements of contract "
       "formation and whether a writing is among them; documents about the interpretation of written contracts do not answer it.",
       "whether oral agreements are enforceable contracts",
       ["offer and acceptance", "consideration", "oral contract", "proof of terms"],
       ["parol evidence rule", "standard-form contracts"]),
      ("Are there kinds of agreements that do have to be in writing?",
       "Yes. Under the statute of frauds, contracts for the sale of land, contracts that cannot be performed within a year, "
       "promises to pay another person's debt, contracts in consideration of marriage and an executor's promise to pay the "
       "estate's debts personally need a signed writing. Under UCC section 2-201, so does a sale of goods for $500 or more, which "
       "covers a $3,000 car.",
       ["law_ex_41233_doc_1"],
       "The follow-up asks for the exceptions to the rule just given. Look for documents listing the categories of contract that "
       "need a signed writing, including the rule for sales of goods; documents on electronic signatures only concern the form "
       "of a writing.",
       "which contracts the statute of frauds requires to be in writing",
       ["statute of frauds", "signed writing", "sale of goods", "UCC 2-201"],
       ["electronic signatures", "lemon laws"]),
      ("So if he's already paid me and driven the car away, can he still back out because nothing was written?",
       "Probably not. Section 2-201 of the Uniform Commercial Code does not require a writing for goods that have been paid for "
       "and accepted, so a completed sale of the car is enforceable even without one; courts also enforce some oral agreements "
       "on grounds such as part performance or reliance.",
       ["law_ex_41233_doc_2"],
       "The user now describes performance of the oral deal. Relevant documents explain the exceptions that let an oral contract "
       "be enforced despite the writing requirement, especially for goods paid for and accepted; consumer remedies for defective "
       "cars are a different question.",
       "exceptions to the writing requirement once a contract has been performed",
       ["part performance", "goods paid for and accepted", "promissory estoppel", "merchant's confirmation"],
       ["lemon laws", "past consideration"])]),
    ("ex_52871",
     "Can I publish recipes from cookbooks on my blog? I want to post my grandmother's recipe collection online, but several of "
     "the recipes were copied from published cookbooks. Are recipes protected by copyright in the US?",
     "A list of ingredients and simple directions is not protected by US copyright, as the Copyright Office and the Seventh "
     "Circuit in Publications International v. Meredith have said. The original text around a recipe, photographs and the "
     "selection and arrangement of a cookbook can be protected, so the recipes should be restated in one's own words rather "
     "than copied verbatim. Secret formulas are protected as trade secrets, and dish names can be trademarks.",
     [("I want to post my grandmother's recipes online, but some came from published cookbooks. Are recipes protected by copyright?",
       "A bare list of ingredients with simple directions is not: copyright protects original expression, not procedures or "
       "methods, and the U.S. Copyright Office will not register such a list. In Publications International v. Meredith (1996) "
       "the Seventh Circuit held that a cookbook's recipes were not copyrightable.",
       ["law_ex_52871_doc_0"],
       "The user asks whether recipes themselves can be copyrighted. Relevant documents state what copyright does not cover and "
       "how that applies to ingredient lists, ideally with a court decision; general rules on how long copyright lasts do not "
       "answer it.",
       "whether recipes are copyrightable under US law",
       ["ingredient list", "idea-expression distinction", "17 U.S.C. 102(b)", "Publications International v. Meredith"],
       ["copyright term", "fair use factors"]),
      ("What parts of a cookbook are protected then?",
       "The original writing around the recipes, such as explanations and anecdotes, and the photographs and illustrations are "
       "protected, and so is the cookbook's original selection and arrangement as a compilation. Copying the text word for word "
       "can infringe, while restating the ingredients and steps in your own words does not.",
       ["law_ex_52871_doc_1"],
       "The follow-up asks what copyright does cover in a cookbook. Useful documents distinguish protected expression and "
       "compilations from the unprotected recipe; documents on the public domain only matter for old books.",
       "which elements of a cookbook copyright protects",
       ["literary expression", "compilation", "photographs", "verbatim copying"],
       ["public domain", "trademarks"]),
      ("If copyright doesn't cover the recipe itself, how do companies protect their secret formulas?",
       "By keeping them secret: a confidential recipe can be a trade secret, protected as long as it stays secret but not against "
       "someone who works it out independently; the Coca-Cola formula is the classic example. A new, non-obvious food process can "
       "be patented for about twenty years at the cost of publishing it, and a product's name can be a trademark.",
       ["law_ex_52871_doc_2"],
       "The user asks about protection other than copyright. Look for documents on trade secrets and patents for recipes or "
       "formulas; documents on how trademarks become generic do not say how to protect a recipe.",
       "legal protection for secret recipes and food formulas",
       ["trade secret", "confidentiality", "patent", "Coca-Cola formula"],
       ["genericide", "fair use"])]),
]


def record(cid: str, task: str, original_query: str, original_answer: str, turns: list[tuple], source: str, method: str) -> dict:
    """One benchmark line with the published keys. ``gold_doc_count`` is the source question's
    gold documents, which here are all used by some turn; ``created_at`` is made up."""
    out, earlier = [], []
    for n, (q, a, gold, why, target, rel, irr) in enumerate(turns, 1):
        out.append({"turn_id": n, "query": q, "answer": a, "gold_doc_ids": gold, "conversation_history": history_text(earlier),
                    "subquestion_reasoning": why,
                    "subquestion_reasoning_metadata": {"target_information": target, "relevance_signals": rel,
                                                       "irrelevance_signals": irr}})
        earlier.append({"query": q, "answer": a})
    gold_count = len({d for t in turns for d in t[2]})
    return {"id": cid, "task": task, "original_query": original_query, "original_answer": original_answer, "turns": out,
            "metadata": {"num_turns": len(out), "gold_doc_count": gold_count, "version": "unified_v1",
                         "created_at": "2025-08-01T12:00:00", "source": source, "method": method}}


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def build() -> dict[str, str]:
    """The sample's files, by path under this folder, as text."""
    files = {}
    for name, convs, docs, source in (("biology", BIOLOGY, BIO_DOCS, "bright"), ("law", LAW, LAW_DOCS, "stackexchange")):
        files[f"data/benchmark/{name}_benchmark.jsonl"] = jsonl(
            [record(c, name, oq, oa, ts, source, f"unified_{source}_workflow") for c, oq, oa, ts in convs])
        files[f"data/corpus/{name}_documents.jsonl"] = jsonl([{"doc_id": d, "content": t} for d, t in docs.items()])
    return files


def main() -> None:
    for name, text in build().items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
