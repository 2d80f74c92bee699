import pytest

from assets.common import text


@pytest.mark.parametrize(
    "a, b",
    [
        ("U.S.", "US"),  # marks inside a token are deleted, not spaced
        ("1,000", "1000"),
        ("Smith's", "Smith"),  # a possessive 's goes, at the end as before a word
        ("Smith’s house", "Smith house"),
        ("Jean-Paul Sartre", "Jean Paul Sartre"),  # dashes and slashes separate words
        ("AC/DC", "AC DC"),
        ("The Beatles", "beatles"),
        ("Café Müller", "Cafe Muller"),
        ("“Paris.”", "paris"),
    ],
)
def test_normalized_equal(a, b):
    assert text.normalize(a) == text.normalize(b)
    assert text.exact_match(a, ["nothing", b])


@pytest.mark.parametrize("a, b", [("Smiths", "Smith"), ("Jean-Paul", "JeanPaul"), ("U.S.", "U S")])
def test_normalized_different(a, b):
    assert text.normalize(a) != text.normalize(b)


def test_normalize_by_hand():
    assert text.normalize("The U.S.-born O'Brien's $1,000 prize!") == "us born obrien 1000 prize"
    assert not text.exact_match("...", ["..."]) and not text.exact_match(None, ["x"])


def test_phrases_stay_on_word_boundaries():
    assert text.contains_phrase("Born in Jean-Paul's town", "Paul")
    assert text.contains_phrase("He served in the U.S. Army.", "US")
    assert not text.contains_phrase("A Parisian city", "Paris")


def test_nltk_english_stopwords_are_bundled():
    stop = text.english_stopwords()
    assert len(stop) == 198 and {"the", "he's", "you've", "won't", "y"} <= stop and "The" not in stop
