"""Convert a GGUF model file into a Hugging Face model folder that vLLM can serve.

Run by the vLLM virtualenv's python (``make vllm``), which has transformers, ``gguf`` and
``accelerate``; nothing of the project is imported and nothing is downloaded::

    .venv-vllm/bin/python deploy/vllm/convert_gguf.py MODEL.gguf OUT_DIR

transformers dequantizes the GGUF tensors when it loads them, but the loaded model still
carries the GGUF quantization config, which vLLM would try to honour; the weights are
therefore copied into a fresh model built from the config without it. They are kept in
float32, the dtype transformers dequantizes to, so nothing is rounded on the way.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def convert(gguf_path: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # strict: a tensor the GGUF lacks or names differently must fail the conversion
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path, help="the .gguf file")
    parser.add_argument("out", type=Path, help="the Hugging Face folder to write")
    args = parser.parse_args(argv)
    convert(args.gguf, args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
