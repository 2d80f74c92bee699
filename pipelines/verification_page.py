"""The human verification page of QUIT (appendix A.1).

``python -m pipelines.verification_page`` serves a small page on 127.0.0.1 listing, per
question, the gold answer and every distinct generated answer (judged-correct ones
preselected, exact matches highlighted). Saving writes a decisions file that
``quit_verification_sensor`` picks up; the ``verified_labels`` asset then applies it.

Any web page the annotator has open could post to a port on 127.0.0.1, so a save is taken
only from the page itself: its Origin (or, without one, its Referer) must be the address
the page was asked for, under a loopback name, and the form must carry the token this
server put in it. The token lives as long as the server: after a restart, reload the page.
A save decides only the answers the page lists, and concurrent saves are applied one at a
time, each replacing the file whole.
"""

from __future__ import annotations

import hmac
import html
import json
import os
import secrets
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import polars as pl
import pyarrow.fs as pafs

from assets.common.text import normalize
from assets.quit.sources import decisions_path, load_decisions
from resources.storage import StorageResource, filesystem, read_parquet, storage_root, write_bytes

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>QUIT answer verification</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}} .q{{border:1px solid #ccc;padding:1em;margin:1em 0}}
.exact{{background:#d4f7d4}} .gold{{font-weight:bold}}</style></head><body>
<h1>QUIT answer verification</h1><p>Keep the answers that are correct for the question; untick the wrong ones.
Answers that exactly match the gold answer are highlighted.</p><form method="post" action="{save}">
<input type="hidden" name="token" value="{token}">{body}
<button type="submit">Save decisions</button></form>{note}</body></html>"""

ERROR_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{status} {phrase}</title></head><body>
<h1>{status} {phrase}</h1><p>{message}</p><p><a href="/">Back to the verification page</a></p></body></html>"""

SAVE_PATH = "/save"
# Names a browser on this machine reaches the page by; any port, so that an SSH tunnel to
# another local port still works. Other names are refused: a foreign site whose name
# resolves to 127.0.0.1 (DNS rebinding) would otherwise read the page and its token.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
# A bound on what a save may post, far above a page of the papers' size.
MAX_FORM_BYTES = 256 * 2**20
# One save at a time in this process (the server answers each request on its own thread):
# a save reads the decisions file, adds its decisions and writes the whole file back.
SAVING = threading.Lock()


class PageServer(ThreadingHTTPServer):
    # a team saving at once: with http.server's backlog of 5, connections past it were reset
    request_queue_size = 128
    daemon_threads = True


class Refused(Exception):
    """A request answered with an error page, nothing saved."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


def render(cands: pl.DataFrame, decisions: dict) -> str:
    parts = []
    for (qid,), group in cands.group_by("question_id", maintain_order=True):
        first = group.row(0, named=True)
        d = decisions.get(qid)
        items = []
        for r in group.iter_rows(named=True):
            checked = (normalize(r["candidate"]) in {normalize(a) for a in d["accepted"]}) if d else r["judged_correct"]
            name = html.escape(f"{qid}\t{r['candidate']}")
            cls = ' class="exact"' if r["exact_match"] else ""
            items.append(
                f'<li{cls}><label><input type="checkbox" name="accept" value="{name}"{" checked" if checked else ""}>'
                f"{html.escape(r['candidate'])} <small>({r['occurrences']} passages)</small></label>"
                f'<input type="hidden" name="shown" value="{name}"></li>'
            )
        parts.append(
            f'<div class="q"><div>{html.escape(first["question"])}</div><div class="gold">Gold: {html.escape(first["gold"])}</div>'
            f"<ul>{''.join(items)}</ul></div>"
        )
    return "".join(parts)


def allowed_names(host: str) -> frozenset[str]:
    """The host names the page answers to when served on ``host``."""
    return LOOPBACK_NAMES if host in WILDCARD_HOSTS else LOOPBACK_NAMES | {host.strip("[]").lower()}


def check_host(host_header: str | None, names: frozenset[str]) -> str:
    """The request's own origin (``http://<Host>``), after checking that Host names this machine."""
    if not host_header:
        raise Refused(HTTPStatus.BAD_REQUEST, "the request has no Host header")
    name = urlsplit(f"http://{host_header}").hostname
    if name not in names:
        raise Refused(
            HTTPStatus.FORBIDDEN,
            f"this page answers only to {', '.join(sorted(names))}, not to "
            f"{host_header!r}: open it as http://127.0.0.1:<port>/",
        )
    return f"http://{host_header}".lower()


def check_origin(origin: str | None, referer: str | None, own: str) -> None:
    """Refuse a save that another page sent: the browser names the sending page's origin in
    Origin, or, where it leaves that out, in Referer."""
    if origin is not None:
        sender, header = origin.lower(), "Origin"
    elif referer:
        parts = urlsplit(referer)
        sender, header = f"{parts.scheme}://{parts.netloc}".lower(), "Referer"
    else:
        raise Refused(
            HTTPStatus.FORBIDDEN,
            "the save has neither an Origin nor a Referer header, so it cannot be told "
            "apart from one sent by another site; save from the verification page in a browser",
        )
    if sender != own:
        raise Refused(
            HTTPStatus.FORBIDDEN,
            f"a save from origin {sender!r} ({header} header) is refused: only the "
            f"verification page itself ({own}) may save decisions",
        )


def check_token(form: dict[str, list[str]], token: str) -> None:
    given = form.get("token", [])
    # compare_digest takes the same time wherever the strings differ, so timing tells nothing about the token
    if len(given) != 1 or not hmac.compare_digest(given[0].encode(), token.encode()):
        raise Refused(
            HTTPStatus.FORBIDDEN,
            "the form's token is missing or not this server's (the server restarts "
            "with a new one): reload the verification page and save again",
        )


def parse_form(body: bytes) -> dict[str, list[str]]:
    try:
        return parse_qs(body.decode("utf-8"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as e:
        raise Refused(HTTPStatus.BAD_REQUEST, f"the form is not UTF-8 ({e}); save from the verification page") from e


def form_pairs(form: dict[str, list[str]], field: str) -> list[tuple[str, str]]:
    """The ``question_id<TAB>candidate`` values of ``field``."""
    pairs = []
    for value in form.get(field, []):
        qid, tab, cand = value.partition("\t")
        if not tab:
            raise Refused(
                HTTPStatus.BAD_REQUEST,
                f"form value {field}={value!r} is not 'question id<TAB>answer'; save from the verification page",
            )
        pairs.append((qid, cand))
    return pairs


def decisions_from_form(form: dict[str, list[str]], listed: set[tuple[str, str]]) -> dict[str, dict]:
    """The decisions a saved form makes: each shown answer accepted when ticked, else rejected.
    ``listed`` is the (question id, candidate) pairs the page lists; anything else is refused."""
    shown, accept = form_pairs(form, "shown"), form_pairs(form, "accept")
    questions = {qid for qid, _ in listed}
    unknown = [
        f"question {qid!r}" if qid not in questions else f"answer {cand!r} of question {qid!r}"
        for qid, cand in dict.fromkeys(shown)
        if (qid, cand) not in listed
    ]
    if unknown:
        raise Refused(
            HTTPStatus.BAD_REQUEST,
            f"not among the answers the page lists: {'; '.join(unknown)}; "
            f"reload the page (the candidates may have been rebuilt) and save again",
        )
    shown_set = set(shown)
    unshown = [
        f"answer {cand!r} of question {qid!r}" for qid, cand in dict.fromkeys(accept) if (qid, cand) not in shown_set
    ]
    if unshown:
        raise Refused(HTTPStatus.BAD_REQUEST, f"ticked but not shown: {'; '.join(unshown)}")
    accepted = set(accept)
    out: dict[str, dict] = {}
    for qid, cand in shown:
        d = out.setdefault(qid, {"accepted": [], "rejected": [], "decided_at": time.strftime("%Y-%m-%dT%H:%M:%S")})
        (d["accepted"] if (qid, cand) in accepted else d["rejected"]).append(cand)
    return out


def save_decisions(uri: str, decisions: dict[str, dict]) -> dict[str, dict]:
    """Add ``decisions`` to the file at ``uri``; returns all of them. Under :data:`SAVING`, so
    two saves never read the same file and each write back only its own."""
    with SAVING:
        merged = {**load_decisions(uri), **decisions}
        replace_file(uri, json.dumps(merged, indent=1, ensure_ascii=False).encode())
    return merged


def replace_file(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri`` so that a reader (the sensor, a page load) sees the old file
    or the new one, never part of it."""
    fs, path = filesystem(uri)
    if not isinstance(fs, pafs.LocalFileSystem):
        write_bytes(uri, data)  # an object store's PUT replaces the object whole
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{secrets.token_hex(6)}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def serve(candidates_uri: str, decisions_uri: str, host: str = "127.0.0.1", port: int = 8765) -> PageServer:
    token = secrets.token_urlsafe(32)
    names = allowed_names(host)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: HTTPStatus, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _page(self, note: str = "") -> None:
            body = render(read_parquet(candidates_uri), load_decisions(decisions_uri))
            self._send(HTTPStatus.OK, PAGE.format(save=SAVE_PATH, token=token, body=body, note=note))

        def _answer(self, respond) -> None:
            """Run ``respond``; a refusal or a failure is an error page, never a dropped connection."""
            try:
                respond()
            except Refused as e:
                self._error(e.status, str(e))
            except Exception as e:  # noqa: BLE001 (the annotator sees what failed; the traceback goes to the terminal)
                traceback.print_exc(file=sys.stderr)
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}")

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._send(
                status, ERROR_PAGE.format(status=status.value, phrase=status.phrase, message=html.escape(message))
            )

        def _body(self) -> bytes:
            raw = self.headers.get("Content-Length", "0")
            try:
                length = int(raw)
            except ValueError:
                length = -1
            if length < 0:
                raise Refused(HTTPStatus.BAD_REQUEST, f"Content-Length {raw!r} is not a byte count")
            if length > MAX_FORM_BYTES:
                raise Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a save of {length} bytes is over {MAX_FORM_BYTES}")
            return self.rfile.read(length)

        def _show(self) -> None:
            check_host(self.headers.get("Host"), names)
            self._page()

        def _save(self) -> None:
            # the body is read first: answering before it is read can reset the connection
            body = self._body()
            own = check_host(self.headers.get("Host"), names)
            if self.path != SAVE_PATH:
                raise Refused(
                    HTTPStatus.NOT_FOUND, f"nothing to post to at {self.path!r}; the page saves to {SAVE_PATH}"
                )
            check_origin(self.headers.get("Origin"), self.headers.get("Referer"), own)
            form = parse_form(body)
            check_token(form, token)
            listed = set(read_parquet(candidates_uri, columns=["question_id", "candidate"]).iter_rows())
            saved = save_decisions(decisions_uri, decisions_from_form(form, listed))
            self._page(f"<p>Saved decisions for {len(saved)} questions.</p>")

        def do_GET(self):  # noqa: N802 (http.server's naming)
            self._answer(self._show)

        def do_POST(self):  # noqa: N802
            self._answer(self._save)

        def log_message(self, *args):
            pass

    return PageServer((host, port), Handler)


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
