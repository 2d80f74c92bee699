"""Writes the bundled QUIT release sample (README.md beside this file says what is real).

Six true trivia questions with five hints each, in the layout of the published InferentialQA
release: ``train.json``, ``dev.json``, ``test.json`` (one JSON list each) and
``corpus/corpus.jsonl``. Every question gets its 325 hint-permutation passages, in the
project's order and id format (``assets.quit.rules.ORDER_CODES``), and a ``subsets`` entry per
passage holding an answer of each of the six models the release names. Those answers are
written here by a seeded rule, not asked of any model: a model is likelier to be right the
more hints it is shown and when the best hint is among them.

Run from the project root: ``.venv/bin/python data/releases/quit/make_sample.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from assets.quit.published import LABELERS, READERS
from assets.quit.rules import ORDER_CODES

HERE = Path(__file__).resolve().parent

# id, question, answer pool, hints (best first), right answers a model may give (some are
# not in the pool, as a model's answer often is not), wrong answers.
QUESTIONS = {
    "train": [
        ("sample_train_01", "Which metal has the chemical symbol Fe?", ["Iron", "iron"],
         ["Its atomic number is 26.",
          "It is the main ingredient of steel, alloyed with a little carbon.",
          "By mass it is the most common element in the Earth as a whole.",
          "Haemoglobin relies on it to carry oxygen in the blood.",
          "With water and oxygen it corrodes into reddish-brown rust."],
         ["Iron", "iron", "IRON", "Iron (Fe)"], ["Copper", "Nickel", "Cobalt"]),
        ("sample_train_02", "Which city is the capital of Australia?", ["Canberra"],
         ["It lies in the Australian Capital Territory.",
          "It was chosen as the seat of government as a compromise between Sydney and Melbourne.",
          "Its plan was drawn by the American architects Walter Burley Griffin and Marion Mahony Griffin.",
          "Its centre is laid out around an artificial lake named after one of its designers.",
          "The country's Parliament House there was opened in 1988."],
         ["Canberra", "Canberra, ACT"], ["Sydney", "Melbourne", "Brisbane"]),
    ],
    "dev": [
        ("sample_dev_01", "Who wrote the novel 'One Hundred Years of Solitude'?",
         ["Gabriel García Márquez", "Gabriel Garcia Marquez", "García Márquez"],
         ["He received the Nobel Prize in Literature in 1982.",
          "He was born in 1927 in Aracataca, Colombia.",
          "He also wrote 'Love in the Time of Cholera'.",
          "He worked as a journalist for newspapers such as El Espectador.",
          "He spent much of his later life in Mexico City, where he died in 2014."],
         ["Gabriel García Márquez", "García Márquez", "Gabriel Garcia Marquez", "Marquez"],
         ["Mario Vargas Llosa", "Jorge Luis Borges", "Isabel Allende"]),
        ("sample_dev_02", "Which is the deepest ocean on Earth?", ["Pacific Ocean", "Pacific", "the Pacific"],
         ["The Mariana Trench, the deepest known point on Earth, lies in it.",
          "It is also the largest ocean by area.",
          "Ferdinand Magellan gave it a name meaning peaceful.",
          "Asia and Australia border it to the west and the Americas to the east.",
          "The volcanoes and earthquake zones of the Ring of Fire encircle it."],
         ["Pacific Ocean", "Pacific", "The Pacific Ocean"], ["Atlantic Ocean", "Indian Ocean", "Arctic Ocean"]),
    ],
    "test": [
        ("sample_test_01", "Which scientist published the general theory of relativity in 1915?",
         ["Albert Einstein", "Einstein"],
         ["He received the 1921 Nobel Prize in Physics for explaining the photoelectric effect.",
          "He worked as a technical expert at the Swiss patent office in Bern.",
          "He was born in Ulm, in the Kingdom of Württemberg, in 1879.",
          "He settled in the United States in 1933 and joined the Institute for Advanced Study in Princeton.",
          "His equation E = mc² relates mass and energy."],
         ["Albert Einstein", "Einstein", "A. Einstein"], ["Isaac Newton", "Niels Bohr", "Max Planck"]),
        ("sample_test_02", "In which country is the ancient rock-cut city of Petra?", ["Jordan", "Hashemite Kingdom of Jordan"],
         ["Its capital is Amman.",
          "Its only coastline is on the Gulf of Aqaba.",
          "Abdullah II has been its king since 1999.",
          "It borders Syria, Iraq and Saudi Arabia.",
          "The Dead Sea lies on its western border."],
         ["Jordan", "Kingdom of Jordan"], ["Egypt", "Israel", "Syria"]),
    ],
}

# How often each model is right from a single weak hint; the split shifts it (train questions
# are the ones models answer closed-book, dev and test the ones they do not).
SKILL = {"gemma-3-1b": 0.02, "qwen-3-4b": 0.08, "llama-31-8b": 0.12,
         "llama-32-1b": 0.0, "gemma-3-4b": 0.06, "qwen-3-8b": 0.1}
SPLIT_SHIFT = {"train": 0.15, "dev": -0.05, "test": -0.1}


def model_answer(qid: str, code: str, model: str, split: str, right: list[str], wrong: list[str]) -> str:
    order = code.split("_")[1]
    chance = SKILL[model] + SPLIT_SHIFT[split] + 0.1 * (len(order) - 1) + (0.1 if "0" in order else 0.0)
    rng = random.Random(f"{qid}/{code}/{model}")
    if rng.random() < min(chance, 0.95):
        # Mostly the pool's first spelling; now and then another one, possibly outside the pool.
        return right[0] if rng.random() < 0.7 else rng.choice(right[1:])
    return rng.choice(wrong)


def question_record(split: str, qid: str, question: str, answers: list[str], hints: list[str],
                    right: list[str], wrong: list[str]) -> dict:
    subsets: dict[str, dict[str, dict[str, str]]] = {}
    for code in ORDER_CODES:
        mask, order = code.split("_")
        subsets.setdefault(mask, {})[order] = {m: model_answer(qid, code, m, split, right, wrong) for m in (*LABELERS, *READERS)}
    return {"id": qid, "question": question, "answers": answers, "hints": [{"hint": h} for h in hints], "subsets": subsets}


def build() -> dict[str, str]:
    """The sample's files, by path under this folder, as text."""
    files, index = {}, {}
    for split, rows in QUESTIONS.items():
        records = [question_record(split, *row) for row in rows]
        files[f"{split}.json"] = json.dumps(records)
        # Corpus lines as the release's index.py writes them: one per subsets entry.
        index[split] = [json.dumps({"id": f"{r['id']}_{mask}_{order}",
                                    "contents": " ".join(r["hints"][int(i)]["hint"] for i in order).strip(),
                                    "title": r["id"]}) + "\n"
                        for r in records for mask, orders in r["subsets"].items() for order in orders]
    # The release concatenates train, test and dev and shuffles the lines with seed 42.
    corpus = index["train"] + index["test"] + index["dev"]
    random.Random(42).shuffle(corpus)
    files["corpus/corpus.jsonl"] = "".join(corpus)
    return files


def main() -> None:
    for name, text in build().items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
