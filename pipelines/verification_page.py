"""The human verification page of QUIT (appendix A.1).

``python -m pipelines.verification_page`` serves a small page on 127.0.0.1 listing, per
question, the gold answer and every distinct generated answer (judged-correct ones
preselected, exact matches highlighted). Saving writes a decisions file that
``quit_verification_sensor`` picks up; the ``verified_labels`` asset then applies it.
"""

from __future__ import annotations

import html
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import polars as pl

from assets.common.text import normalize
from assets.quit.sources import decisions_path, load_decisions
from resources.storage import StorageResource, read_parquet, storage_root, write_bytes

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

    storage = StorageResource(root=storage_root())
    candidates_uri = storage.path("quit", "verification_candidates.parquet")
    decisions_uri = decisions_path(QuitSettings(), storage)
    server = serve(candidates_uri, decisions_uri)
    print(f"verification page on http://127.0.0.1:{server.server_address[1]} (decisions -> {decisions_uri})")
    server.serve_forever()


if __name__ == "__main__":
    main()
