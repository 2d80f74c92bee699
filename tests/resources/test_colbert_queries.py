"""ColBERT's query augmentation: a question is padded to a fixed length with [MASK] tokens
whose vectors take part in MaxSim, for a model the project trains and for a Stanford ColBERT
checkpoint alike; passages are left as they are."""

import json
import os

import numpy as np
import pytest

from assets.eval.quit.finetune import steps as training
from resources import multi_vector
from resources.finetuning import load_bases

MINILM = load_bases()["minilm"]
LENGTH = 16
SHORT = "Which ocean is the largest?"
# 14 word pieces: with [CLS], the [Q] marker and [SEP] it fills more than LENGTH tokens.
LONG = "Which ocean is the largest and the deepest of all the oceans on the whole planet Earth today?"
PASSAGE = "The Pacific is the largest and deepest of the oceans."


def built(augment: bool, seed: int = 7):
    """The project's ColBERT-style model on MiniLM, its new weights drawn from ``seed``: one
    seed gives the same weights with augmentation on and off."""
    from transformers import set_seed

    set_seed(seed)
    return training.multi_vector_encoder(MINILM, 64, "cpu", LENGTH, augment)


@pytest.fixture(scope="module")
def models():
    return {augment: built(augment) for augment in (True, False)}


def query_tokens(model, question: str) -> tuple[list[str], list[int]]:
    """The tokens a question becomes and the encoder's attention over them."""
    features = model.preprocess([model.prompts["query"] + question], task="query")
    return model.tokenizer.convert_ids_to_tokens(features["input_ids"][0]), features["attention_mask"][0].tolist()


def test_a_question_is_padded_to_the_query_length_with_mask_tokens_the_encoder_does_not_attend_to(models):
    tokens, attention = query_tokens(models[True], SHORT)
    # [CLS] [Q] which ocean is the largest ? [SEP], then [MASK] up to 16
    words = ["which", "ocean", "is", "the", "largest", "?"]
    assert tokens[0] == "[CLS]" and tokens[2:8] == words and tokens[8] == "[SEP]"
    assert tokens[9:] == ["[MASK]"] * (LENGTH - 9) and len(tokens) == LENGTH
    assert attention == [1] * 9 + [0] * (LENGTH - 9)
    # without augmentation: the question's own nine tokens, no [MASK]
    plain, _ = query_tokens(models[False], SHORT)
    assert plain == tokens[:9]


def test_a_question_has_as_many_vectors_as_the_query_length_with_augmentation_and_its_own_tokens_without(models):
    augmented = models[True].encode_query([SHORT, LONG], convert_to_numpy=True)
    plain = models[False].encode_query([SHORT, LONG], convert_to_numpy=True)
    assert [len(v) for v in augmented] == [LENGTH, LENGTH]
    # the short question's own 9 tokens; the long one is cut at the query length either way
    assert [len(v) for v in plain] == [9, LENGTH]
    # passages are not padded: the same vectors either way
    passages = [m.encode_document([PASSAGE], convert_to_numpy=True)[0] for m in (models[True], models[False])]
    assert len(passages[0]) < LENGTH and np.array_equal(passages[0], passages[1])


def test_maxsim_adds_each_mask_vectors_best_match_to_the_questions_own_score():
    # by hand: two word vectors and one [MASK] vector against a two-token passage
    words, mask = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.6, 0.8]])
    passage = np.array([[1.0, 0.0], [0.6, 0.8]])
    assert multi_vector.maxsim([words], [passage])[0, 0] == pytest.approx(1.0 + 0.8)
    assert multi_vector.maxsim([np.vstack([words, mask])], [passage])[0, 0] == pytest.approx(1.0 + 0.8 + 1.0)


def test_the_padding_adds_the_mask_vectors_matches_to_the_score_and_leaves_a_full_question_alone(models):
    (short_aug, long_aug), (short, long_) = (
        m.encode_query([SHORT, LONG], convert_to_numpy=True) for m in (models[True], models[False])
    )
    passage = models[True].encode_document([PASSAGE], convert_to_numpy=True)
    # The encoder does not attend to the [MASK] positions, so the question's own vectors are
    # the same with and without them; the score grows by each [MASK] vector's best match.
    assert np.allclose(short_aug[:9], short, atol=1e-5)
    masks_best = (short_aug[9:] @ passage[0].T).max(axis=1)
    with_masks, without = (multi_vector.maxsim([q], passage)[0, 0] for q in (short_aug, short))
    assert with_masks == pytest.approx(without + masks_best.sum(), abs=1e-4)
    assert abs(with_masks - without) > 0.1
    # a question that fills the query length has no room for [MASK]: the same score either way
    assert np.allclose(long_aug, long_, atol=1e-5)
    assert multi_vector.maxsim([long_aug], passage)[0, 0] == pytest.approx(
        multi_vector.maxsim([long_], passage)[0, 0], abs=1e-5
    )


def test_the_saved_model_carries_the_question_shape_to_search(models, tmp_path):
    for augment, model in models.items():
        model.save(str(tmp_path / str(augment)), create_model_card=False)
    # resources.multi_vector loads the folders as a search does
    assert [len(v) for v in multi_vector.encode(str(tmp_path / "True"), [SHORT, LONG], "query")] == [LENGTH, LENGTH]
    assert [len(v) for v in multi_vector.encode(str(tmp_path / "False"), [SHORT, LONG], "query")] == [9, LENGTH]
    # the long question is the one cut at the query length, with or without augmentation
    assert multi_vector.truncated(str(tmp_path / "True"), [SHORT, LONG]) == 1
    assert multi_vector.truncated(str(tmp_path / "False"), [SHORT, LONG]) == 1


def test_a_query_length_without_room_for_a_word_is_refused():
    with pytest.raises(ValueError, match="colbert_query_length 3: .* set it to 4 or more"):
        training.query_shape(3, True)


def stanford_checkpoint(folder: str, query_maxlen: int) -> str:
    """A tiny Stanford ColBERT checkpoint (an ``HF_ColBERT`` BERT, its projection beside the
    encoder's weights, the settings in ``artifact.metadata``), random and seeded, on
    MiniLM's vocabulary: the layout colbert-ir/colbertv2.0 is saved in."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    AutoTokenizer.from_pretrained(MINILM, local_files_only=True).save_pretrained(folder)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        architectures=["HF_ColBERT"],
    )
    config.save_pretrained(folder)
    weights = {f"bert.{k}": v.contiguous() for k, v in BertModel(config).state_dict().items()}
    save_file({**weights, "linear.weight": torch.randn(16, 32)}, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "artifact.metadata"), "w") as f:
        json.dump({"query_maxlen": query_maxlen, "attend_to_mask_tokens": False, "doc_maxlen": 180, "dim": 16}, f)
    return folder


def test_a_stanford_colbert_checkpoint_pads_questions_to_its_query_maxlen(tmp_path):
    from resources.encoders import folder_model

    folder = stanford_checkpoint(str(tmp_path / "colbert"), query_maxlen=12)
    tokens, attention = query_tokens(folder_model("MultiVectorEncoder", folder), SHORT)
    assert tokens == [
        "[CLS]",
        "[unused0]",
        "which",
        "ocean",
        "is",
        "the",
        "largest",
        "?",
        "[SEP]",
        "[MASK]",
        "[MASK]",
        "[MASK]",
    ]
    assert attention == [1] * 9 + [0] * 3
    assert [len(v) for v in multi_vector.encode(folder, [SHORT, LONG], "query")] == [12, 12]
    # a passage is not padded: [CLS] [D] and its 11 words and [SEP], the full stop skipped
    assert [len(v) for v in multi_vector.encode(folder, [PASSAGE], "document")] == [13]
    assert multi_vector.truncated(folder, [SHORT, LONG]) == 1
