#!/usr/bin/python3
"""Turns a text file into byte-token .npy files for `rlx train --model llama` (bytes as tokens,
vocabulary 256): a language model of the text, no tokenizer needed.

Writes <out>/train_ids.npy and <out>/val_ids.npy: int32 streams [T] of the file's bytes, the first
90% for training and the last 10% for validation (a contiguous split, so validation text is unseen).
The default input is the GPL-3 text Debian ships in every system (/usr/share/common-licenses/GPL-3,
35 KB); the files are byte-identical on every run.

Usage: /usr/bin/python3 scripts/data/export_text_bytes.py [text=/usr/share/common-licenses/GPL-3]
                                                          [out_dir=data/gpl3-bytes]
"""
import os
import sys

import numpy as np


def main() -> None:
    src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/common-licenses/GPL-3"
    out = sys.argv[2] if len(sys.argv) > 2 else "data/gpl3-bytes"
    with open(src, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
    if len(data) < 1000:
        sys.exit(f"export_text_bytes: {src} has {len(data)} bytes; need at least 1000")
    cut = len(data) * 9 // 10
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "train_ids.npy"), data[:cut])
    np.save(os.path.join(out, "val_ids.npy"), data[cut:])
    print(f"{src}: {len(data)} bytes -> {out}/train_ids.npy [{cut}], {out}/val_ids.npy "
          f"[{len(data) - cut}] (int32 byte ids, vocabulary 256)")


if __name__ == "__main__":
    main()
