"""The benchmarks the evaluation reads: one source asset per benchmark, whose config says
where its tables come from. ``built`` (the default) reads this project's own build from
the storage root; ``release`` reads a published release (a local folder, relative to the
project root unless absolute, or an ``s3://`` prefix, inside one of the deployment's release
folders: :func:`release_location`) through the benchmark's loader in
``assets/<benchmark>/published.py``. Every evaluation asset downstream reads these tables
and nothing else, so a researcher evaluates a system on the published QUIT, RECOR or
WikiProfile by materializing these with ``source: release`` and then the evaluation as
usual; each materialization names its source in the UI.

The built tables are read from storage, not loaded as inputs, so that a release run needs
nothing built: the build assets are ``deps`` (lineage in the UI, and a built source waits
for them when both are in one run)."""

import os
from typing import Literal

import dagster as dg
import polars as pl
from pydantic import Field

from assets.common.metadata import counts_md, table_metadata
from assets.common.records import ROOT, project_path
from assets.common.wiring import Wiring
from assets.partitions import domain_partitions
from assets.quit import published as quit_release
from assets.recor import published as recor_release
from assets.wikiprofile import published as wikiprofile_release
from resources.storage import StorageResource, inside_root, read_parquet, table_uri

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
BUILT, RELEASE = "built", "release"
# The columns of a page that the evaluation reads (the popularity report's tiers), the same
# from the build's page summaries and the release's gbc counts.
PAGES_SCHEMA = {"page_id": pl.String, "title": pl.String, "mean_monthly_views": pl.Float64}
# The folders a release may be read from: the bundled samples, and the deployment's own
# (local folders or s3:// prefixes, separated as PATH is), never anywhere a run names.
BUNDLED_RELEASES = str(ROOT / "data" / "releases")
RELEASES_ENV = "BENCHFOUNDRY_RELEASES"


def release_roots() -> list[str]:
    """The bundled release folder and every folder of ``$BENCHFOUNDRY_RELEASES``."""
    listed = [p for p in os.environ.get(RELEASES_ENV, "").split(os.pathsep) if p.strip()]
    return [BUNDLED_RELEASES, *(project_path(p.strip()) for p in listed)]


def add_release_folder(path: str) -> None:
    """Adds ``path`` to this process's release folders: for a command the deployment's operator
    runs with a release named on its command line (``make run --reteco``), never for a run."""
    listed = os.environ.get(RELEASES_ENV, "")
    os.environ[RELEASES_ENV] = os.pathsep.join(filter(None, (listed, path)))


def release_location(path: str) -> str:
    """A run's ``release_path`` as read: relative to the project root unless absolute or a URI,
    and inside one of :func:`release_roots` (a release a run names is one the deployment put
    there; the path may not lead a run to read any file the worker can). An error names the
    path and the roots."""
    where = project_path(path)
    for root in release_roots():
        try:
            return inside_root(root, where)
        except ValueError:
            continue
    raise dg.Failure(
        f"release_path {path!r} ({where}) is not inside a release folder of this deployment "
        f"({', '.join(release_roots())}); the deployment adds folders with ${RELEASES_ENV}"
    )


class BenchmarkSource(dg.Config):
    source: Literal["built", "release"] = Field(
        default=BUILT,
        description="built: this project's build of the benchmark (from the storage root); "
        "release: the published release at release_path",
    )
    release_path: str = Field(
        default="",
        description="the published release: a folder or s3:// prefix inside one of the deployment's release "
        "folders (data/releases and $BENCHFOUNDRY_RELEASES; relative paths from the project root)",
    )


class QuitSource(BenchmarkSource):
    release_path: str = Field(
        default="data/releases/quit",
        description="a folder or s3:// prefix holding corpus/corpus.jsonl and train.json, dev.json, test.json",
    )
    splits: list[str] | None = Field(
        default=None,
        description="the questions of these splits (train, dev, test) only, before "
        "max_questions (a demo slice); none: every split",
    )
    max_questions: int | None = Field(
        default=None,
        description="the first n questions (train, dev, test in file order) with "
        "their qrels, over the whole corpus (a demo slice); none: all",
    )


class RecorSource(BenchmarkSource):
    release_path: str = Field(
        default="data/releases/recor",
        description="a folder or s3:// prefix holding {domain}_benchmark.jsonl and {domain}_documents.jsonl",
    )
    max_conversations: int | None = Field(
        default=None,
        description="the first n conversations of the domain with all their "
        "turns (a demo slice; the corpus stays whole); none: all",
    )


class WikiProfileSource(BenchmarkSource):
    release_path: str = Field(
        default="data/releases/wikiprofile", description="wikiprofile.csv, or the folder holding it"
    )
    max_facts: int | None = Field(
        default=None, description="the first n facts with their ten tasks (a demo slice); none: all"
    )
    fact_ids: list[str] | None = Field(
        default=None,
        description="these facts (by fact_id, wherever they are in the file) with "
        "their ten tasks, before max_facts (a demo slice); none: all",
    )


# QUIT's splits in the order the release names them (train.json, dev.json, test.json).
SPLIT_ORDER = {split: i for i, split in enumerate(quit_release.SPLITS)}


def first(frame: pl.DataFrame, key: str, n: int | None) -> pl.DataFrame:
    """The rows of the first ``n`` distinct ``key`` values in table order; the whole table
    when ``n`` is None."""
    if n is None:
        return frame
    return frame.join(frame.select(key).unique(maintain_order=True).head(n), on=key, how="semi")


def named(frame: pl.DataFrame, key: str, ids: list[str] | None, where: str) -> pl.DataFrame:
    """The rows whose ``key`` is one of ``ids``, in table order; the whole table when ``ids``
    is None. A named id the table lacks is an error: the slice would silently shrink."""
    if ids is None:
        return frame
    missing = sorted(set(ids) - set(frame[key]))
    if missing:
        raise ValueError(f"{key}s {missing} are not in {where}: name {key}s that it holds")
    return frame.filter(pl.col(key).is_in(ids))


def _sliced(before: int, after: int, what: str) -> dict:
    return {"sliced": f"{after} of {before} {what}"} if after != before else {}


def _built(storage: StorageResource, *key: str, partition: str | None = None) -> pl.DataFrame:
    """A built table where the IO manager stored it (the storage contract of DESIGN.md)."""
    return read_parquet(table_uri(storage.root, key, partition))


def _origin(config: BenchmarkSource, built: str) -> str:
    return f"release {release_location(config.release_path)}" if config.source == RELEASE else f"built ({built})"


def _source_metadata(config: BenchmarkSource, built: str, rejects: pl.DataFrame) -> dict:
    return {
        "source": _origin(config, built),
        "rejects": rejects.height,
        "rejects_by_reason": counts_md(dict(rejects.group_by("reason").len().sort("reason").iter_rows())),
    }


def _with_schema(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])


@dg.multi_asset(
    name="eval_quit_source",
    group_name=GROUP,
    outs={
        "quit_questions": wiring.out(
            "The QUIT questions the evaluation reads (question, split, answer pool, hints).", {"polars"}
        ),
        "quit_corpus": wiring.out("The QUIT passages the retrievers index.", {"polars"}),
        "quit_qrels": wiring.out("Graded labels (2/1) of each question's passages.", {"polars"}),
        "quit_source_rejects": wiring.out(
            "Release records the loader could not use, with the reason (none from a build).", {"polars"}
        ),
    },
    deps=[["quit", "benchmark_questions"], ["quit", "benchmark_corpus"], ["quit", "benchmark_qrels"]],
    code_version="4",
)
def quit_source(config: QuitSource, storage: StorageResource):
    """QUIT's questions, corpus and qrels for the evaluation: the build's final tables, or
    the published release (:func:`assets.quit.published.load_release`: labels from the
    labelers' answers in ``subsets``, columns the release lacks left null)."""
    if config.source == RELEASE:
        questions, corpus, qrels, rejects = quit_release.load_release(release_location(config.release_path))
    else:
        questions, corpus, qrels = (_built(storage, "quit", f"benchmark_{t}") for t in ("questions", "corpus", "qrels"))
        rejects = quit_release.REJECTS.empty()
    total = questions.height
    # A slice keeps the whole corpus: every other question's passages stay as distractors,
    # as the published corpus holds every split's passages for each split's evaluation.
    # The slice reads the splits in the release's order, train first: a slice of train
    # questions and the next split's has both a model to fine-tune and questions to score it on.
    in_order = questions.sort(pl.col("split").replace_strict(SPLIT_ORDER, default=len(SPLIT_ORDER)), "question_id")
    if config.splits is not None:
        unknown = sorted(set(config.splits) - set(SPLIT_ORDER))
        if unknown:
            raise ValueError(f"QUIT splits {unknown} do not exist: name some of {', '.join(SPLIT_ORDER)}")
        in_order = in_order.filter(pl.col("split").is_in(config.splits))
    questions = questions.join(
        first(in_order, "question_id", config.max_questions).select("question_id"), on="question_id", how="semi"
    )
    qrels = qrels.join(questions.select("question_id"), on="question_id", how="semi")
    origin = {**_source_metadata(config, "quit/benchmark_*", rejects), **_sliced(total, questions.height, "questions")}
    splits = counts_md(dict(questions.group_by("split").len().sort("split").iter_rows()), "split")
    yield dg.Output(
        questions,
        output_name="quit_questions",
        metadata={
            **table_metadata(questions.select("question_id", "split", "question", "answer")),
            **origin,
            "splits": splits,
        },
    )
    yield dg.Output(
        corpus, output_name="quit_corpus", metadata={**table_metadata(corpus.select("passage_id", "text")), **origin}
    )
    labels = counts_md(dict(qrels.group_by("label").len().sort("label").iter_rows()), "label")
    yield dg.Output(qrels, output_name="quit_qrels", metadata={**table_metadata(qrels), **origin, "labels": labels})
    yield wiring.rejects("quit_source_rejects", quit_release.REJECTS, rejects)


@dg.multi_asset(
    name="eval_recor_source",
    group_name=GROUP,
    partitions_def=domain_partitions,
    outs={
        "recor_turns": wiring.out(
            "One domain's RECOR turns the evaluation reads (query, answer, gold documents, history).", {"polars"}
        ),
        "recor_corpus": wiring.out("One domain's RECOR documents the retrievers index.", {"polars"}),
        "recor_source_rejects": wiring.out(
            "Release records the loader could not use, with the reason (none from a build).", {"polars"}
        ),
    },
    deps=[["recor", "benchmark"], ["recor", "corpus"]],
    code_version="1",
)
def recor_source(context: dg.AssetExecutionContext, config: RecorSource, storage: StorageResource):
    """One domain's turns and corpus for the evaluation (partition = domain): the build's
    ``recor/benchmark`` and ``recor/corpus``, or the published ``{domain}_benchmark.jsonl``
    and ``{domain}_documents.jsonl`` (:func:`assets.recor.published.load_release`; its
    turns keep their published retrieval guidance and history)."""
    domain = context.partition_key
    extra: dict = {}
    if config.source == RELEASE:
        loaded = recor_release.load_release(release_location(config.release_path), domain)
        turns, corpus, rejects = loaded
        extra = {"gold_from_supporting_doc_ids": loaded.gold_from_supporting, "history_derived": loaded.history_derived}
    else:
        turns, corpus = (_built(storage, "recor", name, partition=domain) for name in ("benchmark", "corpus"))
        rejects = recor_release.REJECTS.empty()
    total = turns["conversation_id"].n_unique()
    turns = first(turns, "conversation_id", config.max_conversations)
    conversations = turns["conversation_id"].n_unique()
    origin = {
        **_source_metadata(config, "recor/benchmark, recor/corpus", rejects),
        **_sliced(total, conversations, "conversations"),
    }
    yield dg.Output(
        turns,
        output_name="recor_turns",
        metadata={
            **table_metadata(turns.select("qid", "query", "answer")),
            **origin,
            **extra,
            "conversations": conversations,
        },
    )
    yield dg.Output(
        corpus, output_name="recor_corpus", metadata={**table_metadata(corpus.select("doc_id", "content")), **origin}
    )
    yield wiring.rejects("recor_source_rejects", recor_release.REJECTS, rejects)


@dg.multi_asset(
    name="eval_wikiprofile_source",
    group_name=GROUP,
    outs={
        "wikiprofile_tasks": wiring.out(
            "The WikiProfile facts with their ten tasks each, as the profiling reads them.", {"polars"}
        ),
        "wikiprofile_pages": wiring.out(
            "The facts' pages with their mean monthly views (the popularity tiers).", {"polars"}
        ),
        "wikiprofile_source_rejects": wiring.out(
            "Release rows the loader could not use, with the reason (none from a build).", {"polars"}
        ),
    },
    deps=[["wikiprofile", "benchmark"], ["wikiprofile", "source_pages"]],
    code_version="1",
)
def wikiprofile_source(config: WikiProfileSource, storage: StorageResource):
    """WikiProfile's tasks for the profiling: the build's ``wikiprofile/benchmark`` with its
    page summaries' views, or the published ``wikiprofile.csv``
    (:func:`assets.wikiprofile.published.parse_release`: popularity from its 29-month ``gbc``
    view counts)."""
    if config.source == RELEASE:
        tasks, pages, rejects = wikiprofile_release.parse_release(
            *wikiprofile_release.read_release(release_location(config.release_path))
        )
    else:
        tasks, pages = _built(storage, "wikiprofile", "benchmark"), _built(storage, "wikiprofile", "source_pages")
        rejects = wikiprofile_release.REJECTS.empty()
    total = tasks["fact_id"].n_unique()
    where = config.release_path if config.source == RELEASE else "the build's wikiprofile/benchmark"
    tasks = first(named(tasks, "fact_id", config.fact_ids, where), "fact_id", config.max_facts)
    pages = _with_schema(pages, PAGES_SCHEMA)
    origin = {
        **_source_metadata(config, "wikiprofile/benchmark, wikiprofile/source_pages", rejects),
        **_sliced(total, tasks["fact_id"].n_unique(), "facts"),
    }
    yield dg.Output(
        tasks,
        output_name="wikiprofile_tasks",
        metadata={
            **table_metadata(tasks.select("fact_id", "task", "question")),
            **origin,
            "facts": tasks["fact_id"].n_unique(),
        },
    )
    yield dg.Output(pages, output_name="wikiprofile_pages", metadata={**table_metadata(pages), **origin})
    yield wiring.rejects("wikiprofile_source_rejects", wikiprofile_release.REJECTS, rejects)


benchmark_assets = [quit_source, recor_source, wikiprofile_source]
