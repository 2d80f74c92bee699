"""Human verification of generated answers (QUIT appendix A.1) and the label update (3.2.4).

``python -m assets.quit.verification`` serves a small page on 127.0.0.1 listing, per question,
the gold answer and every distinct generated answer (judged-correct ones preselected, exact
matches highlighted). Saving writes a decisions file that ``quit_verification_sensor`` picks
up; the ``verified_labels`` asset then applies it.
"""

from __future__ import annotations

import dataclasses
import html
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import polars as pl

from assets.quit.sources import REJECT_SCHEMA
from assets.text import exact_match, normalize
from resources.storage import exists, join, read_parquet, read_text, storage_root, write_bytes

CANDIDATE_SCHEMA = {
    "question_id": pl.String,
    "question": pl.String,
    "gold": pl.String,
    "candidate": pl.String,
    "occurrences": pl.Int64,
    "judged_correct": pl.Boolean,
    "exact_match": pl.Boolean,
}


def decisions_path(settings) -> str:
    return settings.decisions_path or join(storage_root(), "quit", "human_verification", "decisions.json")


def candidates(answers: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """Distinct generated answers per question with how often they occur and the verdicts."""
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answer", "aliases").iter_rows(named=True)}
    groups: dict[tuple[str, str], dict] = {}
    for r in answers.filter(pl.col("answer").is_not_null()).iter_rows(named=True):
        if r["question_id"] not in q:
            continue
        key = (r["question_id"], normalize(r["answer"]))
        g = groups.setdefault(key, {"candidate": r["answer"], "occurrences": 0, "judged_correct": False})
        g["occurrences"] += 1
        g["judged_correct"] |= bool(r["correct"])
    rows = []
    for (qid, _), g in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[1]["occurrences"])):
        question = q[qid]
        rows.append({"question_id": qid, "question": question["question"], "gold": question["answer"],
                     "candidate": g["candidate"], "occurrences": g["occurrences"],
                     "judged_correct": g["judged_correct"], "exact_match": exact_match(g["candidate"], question["aliases"])})
    return pl.DataFrame(rows, schema=CANDIDATE_SCHEMA)


def load_decisions(path: str) -> dict[str, dict]:
    """``{question_id: {"accepted": [...], "rejected": [...]}}``; empty when no file."""
    if not exists(path):
        return {}
    try:
        raw = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: decisions file is not valid JSON ({e})") from e
    for qid, d in raw.items():
        if not isinstance(d, dict) or not all(isinstance(d.get(k, []), list) for k in ("accepted", "rejected")):
            raise ValueError(f"{path}: decision for {qid!r} needs 'accepted' and 'rejected' lists")
    return raw


@dataclasses.dataclass
class Verified:
    labels: pl.DataFrame
    pools: pl.DataFrame
    rejects: pl.DataFrame
    verified: bool
    decided: int
    demoted: int


def apply(decisions, answers, labels, pools, questions, llm, judge_alias, stats, log=None) -> Verified:
    """The label update of 3.2.4 for questions with decisions; others pass through."""
    from assets.quit import steps

    empty_rejects = pl.DataFrame(schema=REJECT_SCHEMA)
    if not decisions:
        return Verified(labels, pools, empty_rejects, False, 0, 0)
    golds = {r["question_id"]: r["aliases"] for r in questions.select("question_id", "aliases").iter_rows(named=True)}
    accepted = {q: {normalize(a) for a in d.get("accepted", [])} for q, d in decisions.items()}
    rejected = {q: {normalize(a) for a in d.get("rejected", [])} for q, d in decisions.items()}

    def still_correct(qid: str, answer: str | None, correct: bool) -> bool:
        if answer is None:
            return False
        if exact_match(answer, golds.get(qid, [])):
            return True
        if qid not in decisions:
            return bool(correct)
        key = normalize(answer)
        return key in accepted[qid] or (bool(correct) and key not in rejected[qid])

    updated = answers.with_columns(
        pl.struct("question_id", "answer", "correct")
        .map_elements(lambda s: still_correct(s["question_id"], s["answer"], s["correct"]), return_dtype=pl.Boolean)
        .alias("correct")
    )
    any_correct = updated.group_by("passage_id").agg(pl.col("correct").any().alias("ok"))
    new_labels = (
        labels.join(any_correct, on="passage_id", how="left")
        .with_columns(pl.when(pl.col("ok")).then(2).otherwise(1).cast(pl.Int8).alias("label")).drop("ok")
    )
    demoted = int(labels.join(new_labels.select("passage_id", pl.col("label").alias("new")), on="passage_id")
                  .filter((pl.col("label") == 2) & (pl.col("new") == 1)).height)

    def pool_for(qid: str, pool: list[str]) -> list[str]:
        if qid not in decisions:
            return pool
        kept = [a for a in pool if exact_match(a, golds.get(qid, [])) or normalize(a) not in rejected[qid]]
        extra = [a for a in decisions[qid].get("accepted", []) if normalize(a) not in {normalize(k) for k in kept}]
        return kept + extra

    new_pools = pools.with_columns(
        pl.struct("question_id", "answer_pool").map_elements(lambda s: pool_for(s["question_id"], list(s["answer_pool"])),
                                                             return_dtype=pl.List(pl.String)).alias("answer_pool")
    )
    # Newly accepted answers may leak through a hint: screen those questions again.
    newly = [q for q in decisions if q in golds and accepted[q] - {normalize(a) for a in pools.filter(pl.col("question_id") == q)["answer_pool"].explode().drop_nulls()}]
    rejects = empty_rejects
    if newly:
        recheck = questions.filter(pl.col("question_id").is_in(newly)).drop("aliases").join(
            new_pools.select("question_id", pl.col("answer_pool").alias("aliases")), on="question_id")
        _, rejects = steps.screen_leakage(recheck, llm, judge_alias, stats, step="human_verification", log=log)
    return Verified(new_labels, new_pools, rejects, True, len(decisions), demoted)


# --- the annotation page -------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>QUIT answer verification</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}} .q{{border:1px solid #ccc;padding:1em;margin:1em 0}}
.exact{{background:#d4f7d4}} .gold{{font-weight:bold}}</style></head><body>
<h1>QUIT answer verification</h1><p>Keep the answers that are correct for the question; untick the wrong ones.
Answers that exactly match the gold answer are highlighted.</p><form method="post" action="/save">{body}
<button type="submit">Save decisions</button></form>{note}</body></html>"""


def render(cands: pl.DataFrame, decisions: dict) -> str:
    parts = []
    for (qid,), group in cands.group_by("question_id", maintain_order=True):
        first = group.row(0, named=True)
        d = decisions.get(qid)
        items = []
        for i, r in enumerate(group.iter_rows(named=True)):
            checked = (normalize(r["candidate"]) in {normalize(a) for a in d["accepted"]}) if d else r["judged_correct"]
            name = html.escape(f"{qid}\t{r['candidate']}")
            cls = ' class="exact"' if r["exact_match"] else ""
            items.append(f'<li{cls}><label><input type="checkbox" name="accept" value="{name}"{" checked" if checked else ""}>'
                         f'{html.escape(r["candidate"])} <small>({r["occurrences"]} passages)</small></label>'
                         f'<input type="hidden" name="shown" value="{name}"></li>')
        parts.append(f'<div class="q"><div>{html.escape(first["question"])}</div><div class="gold">Gold: {html.escape(first["gold"])}</div>'
                     f'<ul>{"".join(items)}</ul></div>')
    return "".join(parts)


def decisions_from_form(form: dict[str, list[str]]) -> dict[str, dict]:
    shown = [v.split("\t", 1) for v in form.get("shown", [])]
    accept = {tuple(v.split("\t", 1)) for v in form.get("accept", [])}
    out: dict[str, dict] = {}
    for qid, cand in shown:
        d = out.setdefault(qid, {"accepted": [], "rejected": [], "decided_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
        (d["accepted"] if (qid, cand) in accept else d["rejected"]).append(cand)
    return out


def serve(candidates_uri: str, decisions_uri: str, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _page(self, note: str = "") -> None:
            cands = read_parquet(candidates_uri)
            body = PAGE.format(body=render(cands, load_decisions(decisions_uri)), note=note).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's naming)
            self._page()

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            form = parse_qs(self.rfile.read(length).decode())
            decisions = {**load_decisions(decisions_uri), **decisions_from_form(form)}
            write_bytes(decisions_uri, json.dumps(decisions, indent=1, ensure_ascii=False).encode())
            self._page(f"<p>Saved decisions for {len(decisions)} questions.</p>")

        def log_message(self, *args):
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main() -> None:
    from assets.quit.settings import QuitSettings

    candidates_uri = join(storage_root(), "quit", "verification_candidates.parquet")
    decisions_uri = decisions_path(QuitSettings())
    server = serve(candidates_uri, decisions_uri)
    print(f"verification page on http://127.0.0.1:{server.server_address[1]} (decisions -> {decisions_uri})")
    server.serve_forever()


if __name__ == "__main__":
    main()
