"""Evaluation on RECOR (paper section 4): query strategies, retrieval runs per domain x
retriever, the retrieval report, and RAG generation judged on five dimensions.

Partitioned by domain (and retriever alias from ``resources/retrievers.yaml``, the QUIT
evaluation's registry: the same retrievers, indexes and searches serve both benchmarks).
"""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, png_markdown, report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version, load_prompt
from assets.common.wiring import Wiring
from assets.eval import retrieve
from assets.eval.recor import rules as conversational
from assets.eval.recor import steps as generation
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from assets.eval.runs import RUN_SCHEMA, run_frame, trec_run
from assets.partitions import domain_partitions, domain_retriever_partitions
from resources.faiss_index import FaissIndexResource
from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.retrieval import RUN, load_retrievers
from resources.storage import MATERIALIZED_PARTITIONS, StorageResource, read_bytes, write_bytes

PREFIX = "eval"
GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
TOP_K = 100


# The benchmark as the evaluation reads it: built or released (assets.eval.sources).
BENCHMARK = wiring.input("recor_turns")
CORPUS = wiring.input("recor_corpus")
BY_DOMAIN = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="domain")


def qrels_frame(benchmark: pl.DataFrame) -> pl.DataFrame:
    """One qrel per turn and gold document; a turn without gold has none (exploding its
    empty list would leave a null document)."""
    return (benchmark.select(pl.col("qid").alias("question_id"), pl.col("gold_doc_ids").alias("passage_id"))
            .explode("passage_id").drop_nulls("passage_id").with_columns(pl.lit(1).alias("label")))


def truncated(spec, texts: list[str]) -> int:
    """How many of ``texts`` the retriever cuts at its input limit: a dense or multi-vector
    encoder with a bounded input (sentence-transformers' ``max_seq_length``; a multi-vector
    model's question length, ``resources.multi_vector.query_limit``) keeps the start,
    so the question survives and the end of the history goes. BM25 and the bundled e5-small
    (sliding windows) read queries whole; a run file or an entry point is a system whose
    input limit the project cannot see, so it counts none."""
    from resources import multi_vector
    from resources.encoders import input_limit, token_counts

    if spec.kind == "multi_vector" and texts:
        return multi_vector.truncated(spec.encoder, texts)
    if spec.kind != "dense" or not texts:
        return 0
    limit = input_limit(spec.encoder)
    if limit is None:
        return 0
    return sum(n > limit for n in token_counts(spec.encoder, texts, "query", query_prefix=spec.query_prefix))


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=domain_partitions, ins={"benchmark": BENCHMARK},
          kinds={"litellm"}, pool=llm_pool("recor"), code_version=code_version("2", "eval/query_rewrite", "eval/search_reasoning"))
def recor_queries(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Every turn's query under each strategy (4.1.1), laid out as the published retrieval
    code does (question first, then ``Conversation History:``, then ``Reasoning:``):
    Baseline (the question), Query Rewrite (made self-contained by the LLM), Reasoning (the
    retrieval guidance stored with the turn at construction), History (the whole
    conversation so far, as released), History+Reasoning, Last turn (the previous question
    and answer, then the question) and LLM reasoning (a search rationale the LLM writes
    now, this project's variant)."""
    alias = llm.role("recor.builder")[0]
    stats = CallStats()
    rows = list(benchmark.iter_rows(named=True))
    rewrite, reason = load_prompt("eval", "query_rewrite"), load_prompt("eval", "search_reasoning")
    later = [t for t in rows if t["turn_id"] > 1]
    # A first question is self-contained already: it is its own rewrite.
    rewritten = llm.run(alias, [LLMRequest(t["qid"], rewrite.messages(history=t["conversation_history"], query=t["query"]),
                                           params={"max_tokens": 60}) for t in later], stats=stats, log=context.log.info)
    why = llm.run(alias, [LLMRequest(t["qid"], reason.messages(history=t["conversation_history"], query=t["query"]),
                                     params={"max_tokens": 80}) for t in rows], stats=stats, log=context.log.info)
    rewrites = {t["qid"]: t["query"] for t in rows if t["turn_id"] == 1}
    rewrites |= {t["qid"]: (" ".join(r.value.split()) or None) if r.ok and r.value else None for t, r in zip(later, rewritten)}
    rationales = {t["qid"]: (" ".join(r.value.split()) or None) if r.ok and r.value else None for t, r in zip(rows, why)}
    frame = conversational.strategy_queries(benchmark, rewrites, rationales)
    fallbacks = dict(frame.filter(pl.col("fallback")).group_by("strategy").len().sort("strategy").iter_rows())
    return dg.Output(frame, metadata={**table_metadata(frame.select("qid", "strategy", "query")),
                                      "fallbacks": int(frame["fallback"].sum()), "fallbacks_by_strategy": counts_md(fallbacks, "strategy"),
                                      "strategies": counts_md(conversational.STRATEGY_TEXT, "strategy", "query text"), **stats.as_metadata()})


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=domain_retriever_partitions,
          ins={"corpus": dg.AssetIn(key=[PREFIX, "recor_corpus"], partition_mapping=BY_DOMAIN),
               "recor_queries": dg.AssetIn(key=[PREFIX, "recor_queries"], partition_mapping=BY_DOMAIN)},
          kinds={"lucene", "faiss"}, code_version="2", op_tags=GPU_STEP_TAGS)
def recor_runs(context: dg.AssetExecutionContext, corpus: pl.DataFrame, recor_queries: pl.DataFrame,
               lucene: LuceneResource, faiss_index: FaissIndexResource, storage: StorageResource) -> dg.Output:
    """One domain's corpus indexed for one retriever and searched with every turn's
    strategy queries: top-100 per turn and strategy, as a table and TREC run files. The
    queries go in whole; ``truncated_queries`` counts those the retriever's input limit cut.
    A run file retriever answers one strategy (its ``strategy``, baseline by default): its
    domain's file holds the turns' ids, and only that strategy's rows are produced."""
    keys = context.partition_key.keys_by_dimension
    domain, spec = keys["domain"], load_retrievers()[keys["retriever"]]
    docs = corpus.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents"))
    name = f"recor_{domain}"
    n, _ = retrieve.build(spec, name, docs, lucene, faiss_index, storage, context.log.info)
    if spec.kind == RUN and spec.strategy not in set(recor_queries["strategy"]):
        raise ValueError(f"retriever {spec.alias!r}: strategy {spec.strategy!r} is not one of the query strategies "
                         f"{sorted(set(recor_queries['strategy']))}")
    frames, cut, found = [], {}, {}
    for (strategy,), group in recor_queries.group_by("strategy", maintain_order=True):
        if spec.kind == RUN and strategy != spec.strategy:
            continue
        cut[strategy] = truncated(spec, group["query"].to_list())
        if spec.kind == RUN:
            # read as RETECO Track 2 reads a run: either query id style, repeats and unknown documents counted
            files = retrieve.from_run_files(spec, "recor", name, {domain: group["qid"].to_list()}, TOP_K, storage,
                                           query_id=reteco.project_qid, lenient=True)
            hits, found = files.hits, files.metadata()
        else:
            hits = retrieve.search(spec, name, group["query"].to_list(), group["qid"].to_list(), TOP_K, lucene, faiss_index, storage)
        run = run_frame(hits, spec.alias).with_columns(pl.lit(strategy).alias("strategy"))
        write_bytes(storage.path(PREFIX, "runs", "recor", domain, f"{spec.alias}.{strategy}.trec"),
                    trec_run(run.drop("strategy")).encode())
        frames.append(run)
    runs = pl.concat(frames) if frames else pl.DataFrame(schema={**RUN_SCHEMA, "strategy": pl.String})
    return dg.Output(runs.with_columns(pl.lit(domain).alias("domain")), metadata={
        **table_metadata(runs.filter(pl.col("rank") <= 3)), "documents": n, "queries": recor_queries.height,
        "truncated_queries": sum(cut.values()), "truncated_by_strategy": counts_md(cut, "strategy"), **found})


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"recor_runs": wiring.materialized("recor_runs"), "benchmark": wiring.materialized("recor_turns")},
          kinds={"ranx", "scipy"}, code_version="2")
def recor_retrieval_metrics(context: dg.AssetExecutionContext, recor_runs: pl.DataFrame, benchmark: pl.DataFrame) -> dg.Output:
    """nDCG@10 (primary), MAP@10, Recall@10 and MRR per turn, over the domains whose runs
    are materialized. Each table says its averaging in its scores' definitions: turn ->
    domain -> macro as the paper's text (Tables 3, 4, 18, 19, 20 and Figure 2), and turn ->
    conversation -> domain -> macro as the published ablation scripts
    (``table_3_conversation_first``, 4, 18). Table 17: paired t-tests over turn-level
    observations, Mean Delta the macro-averaged difference. A turn without gold documents
    has no metric: it is left out and counted (``turns_without_gold``). ``slice`` names the
    domains, turns, retrievers and strategies counted and the run's profile."""
    qrels = qrels_frame(benchmark)
    scores = conversational.turn_scores(recor_runs, qrels, benchmark)
    skipped = conversational.without_gold(benchmark, qrels)
    tables = {}
    for averaging, suffix in ((conversational.TURN_FIRST, ""), (conversational.CONVERSATION_FIRST, "_conversation_first")):
        table3 = conversational.strategy_table(scores, averaging=averaging)
        tables |= {f"table_3{suffix}": (table3, strategy_definitions(averaging)),
                   f"table_4{suffix}": (conversational.ablation_table(table3), table_4_definitions(averaging)),
                   f"table_18{suffix}": (conversational.full_metrics(scores, averaging=averaging), table_18_definitions(averaging))}
    tables |= {"table_17": (conversational.t_tests(scores), TABLE_17_DEFINITIONS),
               "table_19": (conversational.turn_position_table(scores), TABLE_19_DEFINITIONS),
               "table_20": (conversational.domain_table(scores), TABLE_20_DEFINITIONS)}
    return dg.Output(scores, metadata={
        **table_metadata(scores, 5),
        "slice": report_slice(retrieval_covers(benchmark, scores), run_profile(context)),
        "turns": benchmark.height,
        "turns_without_gold": len(skipped),
        "turns_without_gold_ids": ", ".join(skipped[:20]) or "none",
        "strategies": counts_md(conversational.STRATEGY_TEXT, "strategy", "query text"),
        **{name: report_table(table, definitions) for name, (table, definitions) in tables.items()},
        **why_empty({name: (table, NO_SCORED_TURN if scores.is_empty() else NO_HISTORY_REASONING) for name, (table, _) in tables.items()}),
        "figure_2": png_markdown(conversational.turn_curve(scores)),
        "per_domain": png_markdown(conversational.domain_plot(scores)),
    })


NO_HISTORY_REASONING = "no run with History+Reasoning queries: Tables 18-20 read that strategy (19 beside Baseline)"
NO_SCORED_TURN = ("no turn scored: no domain's recor_runs are materialized, or no turn of the benchmark read has a gold "
                  "document (turns_without_gold)")


def retrieval_covers(benchmark: pl.DataFrame, scores: pl.DataFrame) -> str:
    """The domains, conversations and turns a retrieval report counts, and its systems."""
    domains, retrievers = (sorted(scores[c].unique().to_list()) for c in ("domain", "retriever"))
    return (f"{len(domains)} RECOR domains ({', '.join(domains) or 'none'}), {scores['conversation_id'].n_unique()} "
            f"conversations, {scores['qid'].n_unique()} of the benchmark's {benchmark.height} turns scored (a turn without "
            f"gold left out); {len(retrievers)} retrievers ({', '.join(retrievers) or 'none'}), "
            f"{scores['strategy'].n_unique()} query strategies")


def strategy_definitions(averaging: str) -> dict[str, str]:
    """Table 3's columns: each strategy's nDCG@10 under its query text, the averaging named
    in every score's definition (the inline table has no caption line)."""
    return {"retriever": "a retriever alias (resources/retrievers.yaml); Average: the mean over the retrievers",
            **{conversational.SHORT[s]: f"nDCG@10 (a share in [0, 1]), query: {text}; averaging: {conversational.AVERAGING[averaging]}"
               for s, text in conversational.STRATEGY_TEXT.items()}}


def table_4_definitions(averaging: str) -> dict[str, str]:
    """What each column of Table 4 holds: Table 3's scores and each strategy's gain over Base."""
    gains = {f"{conversational.SHORT[s]} gain": f"{conversational.SHORT[s]} / Base - 1, a share (the paper's Gain in "
                                                "percent: 0.25 is +25%); blank where Base is 0"
             for s in conversational.STRATEGY_TEXT if s != "baseline"}
    return {**strategy_definitions(averaging), **gains}


def table_18_definitions(averaging: str) -> dict[str, str]:
    return {"retriever": "a retriever alias (resources/retrievers.yaml)",
            **{m: f"{m} of the History+Reasoning queries' runs, a share in [0, 1]; averaging: {conversational.AVERAGING[averaging]}"
               for m in conversational.TURN_METRICS}}


TABLE_17_DEFINITIONS = {
    "comparison": "strategy B vs. strategy A, over the same turns and retrievers",
    "n": "paired turn-level observations (turn x retriever)",
    "mean delta": "nDCG@10 of B minus A, macro-averaged (turn -> domain -> macro, then the mean over retrievers)",
    "turn delta": "the mean of the paired turn-level differences, which t tests",
    "se": "standard error of the paired differences", "t": "paired t statistic", "p": "two-sided p-value",
    "note": "why t and p are blank, when they are (too few pairs, no variance)"}
TABLE_19_DEFINITIONS = {
    "strategy": "History+Reasoning or Baseline", "retriever": "a retriever alias (resources/retrievers.yaml)",
    **{f"T{i}": f"nDCG@10 at turn {i}, a share in [0, 1]; turn -> domain -> macro" for i in range(1, 5)},
    "T5+": "nDCG@10 at turns 5 and later, a share in [0, 1]; turn -> domain -> macro"}
TABLE_20_DEFINITIONS = {"domain": "a RECOR domain; each other column a retriever's nDCG@10 with History+Reasoning "
                                  "queries, the mean over the domain's turns, a share in [0, 1]"}


def best_configuration(scores: pl.DataFrame) -> tuple[str, str]:
    """The retriever and strategy with the highest macro-averaged nDCG@10."""
    table = conversational.macro(scores, ["retriever", "strategy"]).sort(["ndcg@10", "retriever", "strategy"], descending=[True, False, False])
    row = table.row(0, named=True)
    return row["retriever"], row["strategy"]


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=domain_partitions,
          ins={"benchmark": BENCHMARK, "corpus": CORPUS,
               "recor_runs": dg.AssetIn(key=[PREFIX, "recor_runs"], partition_mapping=BY_DOMAIN),
               "recor_retrieval_metrics": wiring.input("recor_retrieval_metrics")},
          kinds={"litellm"}, pool=llm_pool("recor"), op_tags=GPU_STEP_TAGS,
          code_version=code_version("3", "eval/closed_answer", "eval/rag_answer", "eval/rag_judge"))
def recor_generation(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, corpus: pl.DataFrame, recor_runs: pl.DataFrame,
                     recor_retrieval_metrics: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Every configured generator (registry role ``recor.generators``) answering each turn in
    three modes (4.2.1): Oracle (the gold passages), Retrieved (top 5 of the best retrieval
    configuration by macro nDCG@10) and NoRetrieval; judged on correctness, completeness,
    relevance, coherence and faithfulness (not for NoRetrieval), 1-5 normalized to 0-1, with
    ROUGE-L, METEOR and BERTScore F1 against the reference answer (definitions in the
    metadata). A failed call leaves its scores null; an empty answer scores 0."""
    retriever, strategy = best_configuration(recor_retrieval_metrics)
    run = recor_runs.filter((pl.col("system") == retriever) & (pl.col("strategy") == strategy)).sort("question_id", "rank")
    retrieved = {q: g["passage_id"].to_list() for (q,), g in run.group_by("question_id", maintain_order=True)}
    items = generation.contexts(benchmark, corpus, retrieved)
    judge_alias = llm.role("recor.judge")[0]
    stats = CallStats()
    rows = []
    for generator in llm.role("recor.generators"):
        answers = generation.answer(items, llm, generator, stats, context.log.info)
        grades = generation.judge(items, answers, llm, judge_alias, stats, context.log.info)
        bert = generation.bertscore_f1([i["reference"] for i in items], answers)
        for item, text, grade, f1 in zip(items, answers, grades, bert):
            rows.append({"domain": item["domain"], "qid": item["qid"], "generator": generator, "mode": item["mode"], "answer": text,
                         **{d: grade.get(d) for d in generation.DIMENSIONS}, **generation.lexical(item["reference"], text),
                         "bertscore_f1": f1})
    schema = {"domain": pl.String, "qid": pl.String, "generator": pl.String, "mode": pl.String, "answer": pl.String,
              **{d: pl.Float64 for d in generation.DIMENSIONS}, **{m: pl.Float64 for m in generation.REFERENCE_METRICS}}
    frame = pl.DataFrame(rows, schema=schema)
    return dg.Output(frame, metadata={**table_metadata(frame.select("qid", "generator", "mode", "answer", "correctness")),
                                      "retrieved_with": f"{retriever} / {strategy}", **reference_metric_definitions(),
                                      "empty_answers": frame.filter(pl.col("answer") == "").height, **stats.as_metadata()})


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"recor_generation": wiring.materialized("recor_generation")},
          kinds={"polars"}, code_version="2")
def recor_generation_metrics(context: dg.AssetExecutionContext, recor_generation: pl.DataFrame) -> dg.Output:
    """Generation quality macro-averaged over domains: the overall score (mean of the judged
    dimensions) by domain and generator in Retrieved mode (Table 7), by mode and generator
    (Table 8), per domain in Oracle and NoRetrieval mode (Tables 21 and 22), per dimension in
    Retrieved mode (Table 23; ``dimensions`` every mode), and ROUGE-L / METEOR / BERTScore F1
    (Table 25, every mode; an empty answer's 0 counts in the means). Every score a share in
    [0, 1] (a judge's 1-5 normalized); ``slice`` names what is counted and the run's profile."""
    dims = list(generation.DIMENSIONS)
    columns = [*dims, "overall", *generation.REFERENCE_METRICS]
    scored = recor_generation.with_columns(pl.mean_horizontal(*dims).alias("overall"))
    per_domain = scored.group_by(["domain", "generator", "mode"]).agg([pl.col(c).mean() for c in columns])
    overall = per_domain.group_by(["generator", "mode"]).agg([pl.col(c).mean() for c in columns]).sort("generator", "mode")
    generators = sorted(recor_generation["generator"].unique().to_list())

    def wide(mode: str) -> pl.DataFrame:
        part = per_domain.filter(pl.col("mode") == mode)
        if part.is_empty():
            return pl.DataFrame(schema={"domain": pl.String, **{g: pl.Float64 for g in generators}})
        return part.pivot(on="generator", index="domain", values="overall", sort_columns=True).sort("domain")

    def by_generator(mode: str) -> str:
        return {"domain": "a RECOR domain; each other column a generator's overall judge score in "
                          f"{mode} mode (the mean of its dimensions, 1-5 normalized to [0, 1]), the mean over the domain's turns"}

    table8 = overall.pivot(on="generator", index="mode", values="overall", sort_columns=True).sort("mode") if overall.height else \
        pl.DataFrame(schema={"mode": pl.String})
    dimension = {"generator": "a generator alias (registry role recor.generators)", "mode": ", ".join(generation.MODES),
                 **{d: f"{text} (judged 1-5, normalized to [0, 1]; blank in no_retrieval for faithfulness)"
                    for d, text in generation.DIMENSIONS.items()}}
    lexical = {"generator": dimension["generator"], "mode": dimension["mode"],
               "rouge_l": generation.ROUGE_DEFINITION, "meteor": generation.METEOR_DEFINITION,
               "bertscore_f1": generation.BERTSCORE_DEFINITION}
    none, retrieved = "recor_generation has no answer materialized", "no answer in retrieved mode"
    tables = {
        "table_7": (wide("retrieved"), by_generator("retrieved"), retrieved),
        "table_8": (table8, {"mode": dimension["mode"], **{g: f"{g}'s overall judge score, macro-averaged over domains, "
                                                              "a share in [0, 1]" for g in generators}}, none),
        "table_21_oracle": (wide("oracle"), by_generator("oracle"), "no answer in oracle mode"),
        "table_22_no_retrieval": (wide("no_retrieval"), by_generator("no_retrieval"), "no answer in no_retrieval mode"),
        "table_23_dimensions": (overall.filter(pl.col("mode") == "retrieved").select("generator", *dims), dimension, retrieved),
        "dimensions": (overall.select("generator", "mode", *dims), dimension, none),
        "table_25_lexical": (overall.select("generator", "mode", *generation.REFERENCE_METRICS), lexical, none),
    }
    domains = sorted(recor_generation["domain"].unique().to_list())
    return dg.Output(overall, metadata={
        **table_metadata(overall),
        "slice": report_slice(f"{len(domains)} RECOR domains ({', '.join(domains) or 'none'}), "
                              f"{recor_generation['qid'].n_unique()} turns answered; {len(generators)} generators "
                              f"({', '.join(generators) or 'none'})", run_profile(context)),
        **{name: report_table(table, definitions) for name, (table, definitions, _) in tables.items()},
        **why_empty({name: (table, why) for name, (table, _, why) in tables.items()}),
        **reference_metric_definitions(),
    })


def reference_metric_definitions() -> dict:
    """Which computation each reference-answer score column is, for the tables' metadata."""
    return {"definition/rouge_l": generation.ROUGE_DEFINITION, "definition/meteor": generation.METEOR_DEFINITION,
            "definition/bertscore_f1": generation.BERTSCORE_DEFINITION}


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"recor_runs": wiring.materialized("recor_runs"), "benchmark": wiring.materialized("recor_turns"),
               "corpus": dg.AssetIn(key=[PREFIX, "recor_corpus"], partition_mapping=dg.AllPartitionMapping(),
                                    metadata={**MATERIALIZED_PARTITIONS, "columns": ["domain", "doc_id"]})},
          kinds={"ranx"}, code_version="1")
def reteco_retrieval(recor_runs: pl.DataFrame, benchmark: pl.DataFrame, corpus: pl.DataFrame) -> dg.Output:
    """RECOR's runs scored as SemEval-2027 RETECO Track 2 (sub-tracks 2a and 2c) scores a
    submission (``assets/eval/recor/reteco/rules.py``): each retriever x strategy of ``recor_runs`` is one
    run, written as a TREC file and read by the task's rules against its domain's turns and
    documents (a domain at a time). Per target turn: binary nDCG@10 (official), MAP@10, Recall@10 and MRR;
    the official table (macro over the turns), per domain and by depth T1..T4, T5+. The same
    rules as ``python -m pipelines.reteco score``."""
    # One domain at a time: BRIGHT numbers its questions per domain, so two domains may hold one
    # conversation id, which a task query id cannot tell apart (the command refuses them together).
    frames, notes, turns, documents = [], {}, 0, 0
    domains = sorted(set(benchmark["domain"]))
    for domain in domains:
        targets = reteco.Targets.from_tables(benchmark.filter(pl.col("domain") == domain),
                                             corpus.filter(pl.col("domain") == domain)["doc_id"])
        turns, documents = turns + targets.turns.height, documents + len(targets.documents)
        checked = []
        for (system, strategy), run in recor_runs.filter(pl.col("domain") == domain).group_by(["system", "strategy"],
                                                                                             maintain_order=True):
            name = f"{system}/{strategy}"
            checked.append((name, reteco.check_run(trec_run(run.drop("strategy", "domain")).encode(), f"{domain}: {name}",
                                                   targets), targets))
            notes[f"{domain}: {name}"] = checked[-1][1].summary()
        # a domain's runs scored together (a ranx call costs seconds before its first line), and
        # their rankings let go before the next domain's
        frames.append(reteco.score_runs(checked))
    scores = (pl.concat(frames) if frames else reteco.score_runs([])).with_columns(
        pl.col("run").str.extract(r"^(.*)/[^/]*$").alias("retriever"), pl.col("run").str.extract(r"/([^/]*)$").alias("strategy"))
    slice_ = f"{turns} target turns of {len(domains)} domains ({', '.join(domains)}), {documents:,} documents"
    return dg.Output(scores, metadata={
        **table_metadata(scores, 5),
        "covers": slice_,
        "official": dg.MetadataValue.md("Binary nDCG@10 per target turn, macro-averaged over the turns (a missing turn "
                                        f"scores 0); {slice_}\n\n{md_table(reteco.official_table(scores), 50)}"),
        "by_domain": dg.MetadataValue.md(f"nDCG@10, mean over each domain's target turns (diagnostic)\n\n"
                                         f"{md_table(reteco.domain_table(scores), 20)}"),
        "by_depth": dg.MetadataValue.md(f"nDCG@10 by conversation depth (diagnostic)\n\n{md_table(reteco.depth_table(scores), 10)}"),
        "runs_read": dg.MetadataValue.md("\n\n".join(f"```\n{note}\n```" for note in notes.values()) or "none"),
    })


class ReTeCoSubmission(dg.Config):
    """A participant's generation file, judged beside the configured generators."""

    path: str  # JSONL (turn_id, answer), local or s3://; every domain's answers in one file
    subtrack: str = "2b"  # 2b: judged faithful to the gold passages; 2c: to the run's top five
    run: str | None = None  # 2c: the TREC run file the answers were generated from
    name: str | None = None  # the row's name (default: the file's name)


class ReTeCoGeneration(dg.Config):
    submissions: list[ReTeCoSubmission] = []


def _submission(sub: ReTeCoSubmission, targets: reteco.Targets, domain: str) -> tuple:
    """A submission as (system, sub-track, answers, checked run or None): each file read by the
    task's rules against the domain's turns (another domain's turns are the file's other
    answers, left to their partitions); an unscorable file fails the step with its problems."""
    if sub.subtrack not in reteco_judge.SUBTRACKS or (sub.subtrack == "2c") != bool(sub.run):
        raise dg.Failure(f"submission {sub.path}: sub-track {sub.subtrack!r} with run {sub.run!r}; 2b takes no run, "
                         "2c needs the run file its answers came from")
    checked = reteco.check_generation(read_bytes(sub.path), sub.path, targets)
    run = reteco.check_run(read_bytes(sub.run), sub.run, targets) if sub.run else None
    for c in filter(None, (checked, run)):
        if not c.ok:
            fatal = [str(p) for p in c.problems if p.fatal][:10]
            raise dg.Failure(f"{domain}: {c.summary()}", metadata={"problems": dg.MetadataValue.md("\n".join(fatal))})
    return sub.name or sub.path.rsplit("/", 1)[-1], sub.subtrack, checked.answers, run


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=domain_partitions,
          ins={"benchmark": BENCHMARK, "corpus": CORPUS, "recor_generation": wiring.input("recor_generation"),
               "recor_runs": dg.AssetIn(key=[PREFIX, "recor_runs"], partition_mapping=BY_DOMAIN),
               "recor_retrieval_metrics": wiring.input("recor_retrieval_metrics")},
          kinds={"litellm"}, pool=llm_pool("recor"), code_version=reteco_judge.CODE_VERSION, op_tags=GPU_STEP_TAGS)
def reteco_generation(context: dg.AssetExecutionContext, config: ReTeCoGeneration, benchmark: pl.DataFrame,
                      corpus: pl.DataFrame, recor_generation: pl.DataFrame, recor_runs: pl.DataFrame,
                      recor_retrieval_metrics: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """RECOR's answers judged as SemEval-2027 RETECO Track 2 judges them
    (``assets/eval/recor/reteco/steps.py``): each configured generator's Oracle answers as a 2b
    system (faithful to the gold passages) and its Retrieved answers as a 2c system (faithful
    to the top five of the best retrieval configuration, whose per-turn nDCG@10 it carries),
    plus the generation files given in the run config (``submissions``). Five focused judge
    prompts, integer 1-5 scores normalized (s - 1) / 4; a turn without an answer, or a
    dimension the judge did not score, is 0. ROUGE-L, METEOR and BERTScore F1 as diagnostics
    (the generators' from ``eval/recor_generation``)."""
    domain = context.partition_key
    targets = reteco.Targets.from_tables(benchmark, corpus["doc_id"])
    turns = reteco_judge.table_turns(benchmark, targets)
    retriever, strategy = best_configuration(recor_retrieval_metrics)
    best = f"{retriever}/{strategy}"
    chosen = recor_runs.filter((pl.col("system") == retriever) & (pl.col("strategy") == strategy))
    best_run = reteco.check_run(trec_run(chosen.drop("strategy", "domain")).encode(), best, targets)
    systems, diagnostics = [], {}
    for (generator, mode), answered in recor_generation.filter(pl.col("mode") != "no_retrieval").group_by(
            ["generator", "mode"], maintain_order=True):
        subtrack = "2b" if mode == "oracle" else "2c"
        # a failed generation call has no answer: the task scores the turn 0
        answers = dict(answered.filter(pl.col("answer").is_not_null()).select("qid", "answer").iter_rows())
        systems.append((generator, subtrack, answers, best_run if subtrack == "2c" else None))
        diagnostics[generator, subtrack] = answered.select("qid", *reteco_judge.DIAGNOSTICS)
    systems += [_submission(sub, targets, domain) for sub in config.submissions]

    judge_alias = llm.role("recor.judge")[0]
    stats, frames, judged_all, retrieved = CallStats(), [], [], {}
    text = dict(corpus.select("doc_id", "content").iter_rows())
    for system, subtrack, answers, run in systems:
        passages = reteco_judge.passage_ids(turns, subtrack, run.rankings if run else None)
        items = reteco_judge.judge_items(turns, answers, passages, text)
        judgments = reteco_judge.judge(items, llm, judge_alias, stats, context.log.info)
        judged_all.append(judgments.with_columns(pl.lit(system).alias("system"), pl.lit(subtrack).alias("subtrack")))
        diagnostic = diagnostics.get((system, subtrack))
        scores = reteco_judge.turn_scores(reteco_judge.judged_turns(judgments), targets, system, subtrack,
                                          diagnostic if diagnostic is not None else reteco_judge.diagnostics(items))
        if run is not None and run.source not in retrieved:
            # every generator's 2c answers come from the one best configuration: scored once
            retrieved[run.source] = reteco.score_runs([(run.source, run, targets)]).select("qid", *reteco.METRICS)
        retrieval = (retrieved[run.source] if run else
                     pl.DataFrame({"qid": targets.turns["qid"]}).with_columns(pl.lit(None, dtype=pl.Float64).alias(m)
                                                                               for m in reteco.METRICS))
        frames.append(scores.with_columns(pl.lit(run.source if run else None, dtype=pl.String).alias("run"))
                      .join(retrieval, on="qid", how="left"))
    scores = pl.concat(frames) if frames else pl.DataFrame(schema=RETECO_GENERATION_SCHEMA)
    judgments = pl.concat(judged_all) if judged_all else pl.DataFrame()
    failed = judgments.filter(pl.col("score").is_null()) if judgments.height else judgments
    table = reteco_judge.judge_table(scores) if scores.height else pl.DataFrame()
    return dg.Output(scores.select(list(RETECO_GENERATION_SCHEMA)), metadata={
        **table_metadata(scores.select("qid", "system", "subtrack", *reteco.DIMENSIONS), 5),
        "covers": f"{domain}: {targets.turns.height} target turns, {len(systems)} systems "
                  f"({len(config.submissions)} submitted); 2c generators answered from {best}",
        "generation": dg.MetadataValue.md("Each dimension's judged 1-5 score normalized (s - 1) / 4, the mean over the "
                                          "target turns (a turn without an answer or a score is 0), and their macro "
                                          f"average; ROUGE-L, METEOR, BERTScore F1 are diagnostics\n\n{md_table(table, 40)}"),
        "judge_failures": failed.height,
        # a weak judge (the embedded model) often writes no number: its log-probabilities say which it meant
        **{f"scores_read_from/{where}": judgments.filter(pl.col("read_from") == where).height if judgments.height else 0
           for where in reteco_judge.READ_FROM},
        "judge_failure_examples": dg.MetadataValue.md(md_table(failed.select("system", "subtrack", "qid", "dimension",
                                                                             "reason", "reply").head(10), 10)
                                                      if failed.height else "none"),
        **reference_metric_definitions(), **stats.as_metadata(),
    })


RETECO_GENERATION_SCHEMA = {**reteco.TURN_SCHEMA, "system": pl.String, "subtrack": pl.String, "run": pl.String,
                            **{d: pl.Float64 for d in reteco.DIMENSIONS}, "answered": pl.Boolean,
                            "judge_failures": pl.UInt32, **{m: pl.Float64 for m in reteco_judge.DIAGNOSTICS},
                            **{m: pl.Float64 for m in reteco.METRICS}}


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"reteco_retrieval": wiring.materialized("reteco_retrieval"),
               "reteco_generation": wiring.materialized("reteco_generation")},
          kinds={"polars"}, code_version="1")
def reteco_leaderboard(reteco_retrieval: pl.DataFrame, reteco_generation: pl.DataFrame) -> dg.Output:
    """RETECO Track 2's results, one row per sub-track and run: 2a each retrieval run
    (retriever / strategy) by nDCG@10 with MAP@10, Recall@10 and MRR; 2b and 2c each system
    by the macro average of its five normalized judge dimensions, 2c beside the retrieval
    figures of the run it answered from. Never combined into one number, as the task rules."""
    board = reteco_judge.leaderboard(reteco_retrieval, reteco_generation)
    turns = reteco_retrieval.select("domain", "qid").unique()
    covers = (f"{turns.height} target turns of {turns['domain'].n_unique()} domains "
              f"({', '.join(sorted(turns['domain'].unique()))})")
    tables = {f"subtrack_{st}": dg.MetadataValue.md(f"{what}; {covers}\n\n"
                                                     f"{md_table(board.filter(pl.col('subtrack') == st).drop(drop), 60)}")
              for st, what, drop in (
                  ("2a", "Conversational retrieval, ranked by nDCG@10 (official)", ["subtrack", "retrieval_run", *reteco.DIMENSIONS, "macro"]),
                  ("2b", "Gold-passage generation, ranked by the macro average of the five dimensions",
                   ["subtrack", "retrieval_run", *(reteco.METRIC_NAMES[m] for m in reteco.METRICS)]),
                  ("2c", "Full conversational RAG: the macro (ranking) beside its run's retrieval figures", ["subtrack"]))}
    return dg.Output(board, metadata={**table_metadata(board, 10), "covers": covers, **tables})


recor_eval_assets = [recor_queries, recor_runs, recor_retrieval_metrics, recor_generation, recor_generation_metrics,
                     reteco_retrieval, reteco_generation, reteco_leaderboard]
