import json

import polars as pl

from assets.wikiprofile import sources

WORDS = " ".join(f"word{i}" for i in range(60))


def test_pages_load_and_bad_records_are_kept_with_their_reason(tmp_path):
    lines = [
        {
            "title": "Love and Money",
            "summary": "Love and Money were a Scottish band. " + WORDS,
            "monthly_views": {"2025-04": 900, "2025-05": 1100},
        },
        {"title": "Mount Kenya", "summary": WORDS, "monthly_views": [{"month": "2025-04", "views": 30000}]},
        {"title": "Love and Money", "summary": WORDS, "monthly_views": 5},
        {"title": "Tiny", "summary": "Too short to keep.", "monthly_views": 10},
        {"title": "No views", "summary": WORDS},
        {"title": "Negative", "summary": WORDS, "monthly_views": {"2025-04": -3}},
    ]
    path = tmp_path / "pages.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    pages, rejects = sources.load_pages(str(path))
    assert pages["page_id"].to_list() == ["love_and_money", "mount_kenya"]
    assert pages["mean_monthly_views"].to_list() == [1000.0, 30000.0] and pages["months"].to_list() == [2, 1]
    assert rejects["reason"].to_list() == [
        "duplicate_page",
        "too_short",
        "malformed_record",
        "malformed_record",
        "malformed_record",
    ]
    assert "monthly_views" in rejects["detail"][2] and "line 7" in rejects["detail"][4]


def test_popularity_tiers_take_both_ends():
    pages = pl.DataFrame(
        {"page_id": [f"p{i}" for i in range(10)], "mean_monthly_views": [float(10 ** (i % 7)) for i in range(10)]}
    )
    tiers = dict(sources.popularity_tiers(pages).iter_rows())
    assert [p for p, t in tiers.items() if t == "top"] == ["p6", "p5"]
    assert sorted(p for p, t in tiers.items() if t == "bottom") == ["p0", "p7"]


def test_the_bundled_sample_loads_whole():
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "data" / "wikiprofile" / "pages.jsonl"
    pages, rejects = sources.load_pages(str(path))
    assert rejects.height == 0 and pages.height >= 40 and pages["words"].min() >= 50
    assert pages["reference_category"].n_unique() == 9
    views = pages["mean_monthly_views"]
    assert views.max() / views.min() > 100  # popularity tiers need both ends


def test_search_pages_and_the_collection(tmp_path):
    path = tmp_path / "search.jsonl"
    path.write_text(
        '{"id": "a", "title": "A", "contents": "Alpha text."}\n{"id": "a", "title": "A2", "contents": "x"}\n{"id": "b"}\n'
    )
    docs, rejects = sources.load_search_pages(str(path))
    assert docs.to_dicts() == [{"doc_id": "a", "content": "A. Alpha text."}]
    assert rejects["reason"].to_list() == ["duplicate_page", "malformed_record"]
    pages = pl.DataFrame({"page_id": ["p"], "title": ["P"], "summary": ["Pi text."]})
    assert sources.search_collection(pages, docs)["doc_id"].to_list() == ["p", "a"]
