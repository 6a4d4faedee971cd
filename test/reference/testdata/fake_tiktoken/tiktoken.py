"""Test double for the optional `tiktoken` package (used only by corpus.test).

The real GPT-2 encoding needs its BPE files downloaded, which test machines
cannot do, so corpus.test puts this folder on PYTHONPATH to exercise
triax-data-prep's gpt2 plumbing (UTF-8 decode, encode_ordinary, uint16
storage of ids above 255, header count).  The "encoding" is one token per
character, id = 50000 + code point, clipped to the GPT-2 range.
"""


class _Encoding:
    name = "gpt2"
    n_vocab = 50257

    def encode_ordinary(self, text):
        return [min(50000 + ord(c), 50256) for c in text]


def get_encoding(name):
    if name != "gpt2":
        raise ValueError(f"fake tiktoken only provides gpt2, not {name!r}")
    return _Encoding()
