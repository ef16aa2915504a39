"""Compare two ``lmms-spatial demo`` output folders: what a user sees must not change with a refactoring.

    python -m tools.compare_demo /tmp/demo_before /tmp/demo_after   # exit 0: the same report, results, samples

Compared: every report file (``report.md``, ``.csv``, ``.tex``, the plots byte for byte), the results file's
content and every sample line. Normalised first, because they are not the run's content: the folder itself, the
run's time stamp, function addresses in lmms-eval's config dump, data fingerprints (they hash the folder's path),
clock times and the commit of the code.
"""

from __future__ import annotations

import glob
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

NOT_CONTENT = {"fingerprint", "start_time", "end_time", "total_evaluation_time_seconds", "date",
               "process_docs", "process_results", "doc_to_messages", "doc_to_text", "doc_to_visual",
               "doc_to_target", "aggregation"}  # fmt: skip


def norm_text(text: str, root: Path) -> str:
    text = text.replace(str(root), "DIR")
    text = re.sub(r"\d{8}_\d{6}", "STAMP", text)
    text = re.sub(r" at 0x[0-9a-f]+", " at ADDR", text)
    text = re.sub(r"@[0-9a-f]{7,}(\+dirty)?", "@COMMIT", text)
    return re.sub(r"^[0-9a-f]{7}$|^[0-9a-f]{40}$", "COMMIT", text)  # results.json git_hash, environment commit


def norm_json(value: Any, root: Path) -> Any:
    if isinstance(value, dict):
        return {k: norm_json(v, root) for k, v in value.items() if k not in NOT_CONTENT}
    if isinstance(value, list):
        return [norm_json(v, root) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return norm_text(value, root) if isinstance(value, str) else value


def differences(a: Path, b: Path) -> list[str]:
    found = []
    for rel in sorted(p.relative_to(a / "report") for p in (a / "report").rglob("*") if p.is_file()):
        fa, fb = a / "report" / rel, b / "report" / rel
        if rel.suffix == ".png":
            same = fb.is_file() and fa.read_bytes() == fb.read_bytes()
        else:
            same = fb.is_file() and norm_text(fa.read_text(), a) == norm_text(fb.read_text(), b)
        if not same:
            found.append(f"report/{rel}")
    ra = norm_json(json.loads(Path(glob.glob(str(a / "results" / "*_results.json"))[0]).read_text()), a)
    rb = norm_json(json.loads(Path(glob.glob(str(b / "results" / "*_results.json"))[0]).read_text()), b)
    found += [f"results.json {key}" for key in sorted(set(ra) | set(rb)) if ra.get(key) != rb.get(key)]
    samples = [{re.sub(r"^\d{8}_\d{6}_", "", Path(p).name): Path(p) for p in glob.glob(str(root / "results" /
                                                                                          "*_samples_*.jsonl"))}
               for root in (a, b)]  # fmt: skip
    found += [f"sample file {name} in one folder only" for name in sorted(set(samples[0]) ^ set(samples[1]))]
    for name in sorted(set(samples[0]) & set(samples[1])):
        lines = [[norm_json(json.loads(line), root) for line in files[name].read_text().splitlines()]
                 for root, files in zip((a, b), samples, strict=True)]  # fmt: skip
        if lines[0] != lines[1]:
            found.append(f"samples {name}")
    return found


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    found = differences(a, b)
    for line in found:
        print("differs:", line)
    print(f"{len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
