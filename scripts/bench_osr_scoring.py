"""Benchmark (not a test): scoring the full OSR-Bench size from model outputs, on this machine.

    python scripts/bench_osr_scoring.py [--maps 4100] [--questions 153312]

Synthetic but realistic inputs: 10x10 ground-truth maps with 6-12 classes and 1-3 instances
each, replies that are JSON maps with noise/hallucinated classes (or prose, 5%), and QA replies
for the three skills. Reports seconds for the maps (4 rotations x Hungarian per class) and for
the QA rules, single process: the per-document work lmms-eval's process_results does.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from lmms_spatial.metrics.osr_bench import DIRECTIONS, score_cogmap, score_qa

CLASSES = [f"class_{i}" for i in range(30)]


def _case(rng: random.Random) -> tuple[list, str]:
    grid = [[[] for _ in range(10)] for _ in range(10)]
    pred: dict[str, list[list[int]]] = {}
    for name in rng.sample(CLASSES, rng.randint(6, 12)):
        for _ in range(rng.randint(1, 3)):
            r, c = rng.randrange(10), rng.randrange(10)
            grid[r][c].append(name)
            if rng.random() < 0.8:
                pred.setdefault(name, []).append(
                    [min(9, max(0, c + rng.randint(-2, 2))), min(9, max(0, r + rng.randint(-2, 2)))]
                )
    for name in rng.sample(CLASSES, 2):
        pred.setdefault(name, []).append([rng.randrange(10), rng.randrange(10)])
    reply = "I cannot tell." if rng.random() < 0.05 else f"Here you go:\n```json\n{json.dumps(pred)}\n```"
    return grid, reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--maps", type=int, default=4100)
    parser.add_argument("--questions", type=int, default=153312)
    args = parser.parse_args()
    rng = random.Random(0)
    cases = [_case(rng) for _ in range(args.maps)]
    start = time.perf_counter()
    f1 = sum(score_cogmap(grid, reply)["f1"] for grid, reply in cases)
    maps_s = time.perf_counter() - start
    skills = ["object_counting", "relative_distance", "relative_direction"]
    qa = []
    for i in range(args.questions):
        skill = skills[i % 3]
        truth = (
            str(i % 5)
            if skill == "object_counting"
            else ("sofa" if skill == "relative_distance" else DIRECTIONS[i % 8])
        )
        reply = f"<answer>{truth if i % 2 else 'chair'}</answer>"
        qa.append((skill, truth, reply))
    start = time.perf_counter()
    total = sum(score_qa(skill, truth, reply, think=True)["score"] for skill, truth, reply in qa)
    qa_s = time.perf_counter() - start
    print(f"maps: {args.maps} in {maps_s:.1f} s ({1000 * maps_s / args.maps:.2f} ms/map), mean F1 {f1 / args.maps:.3f}")
    per_question = 1e6 * qa_s / args.questions
    print(f"QA:   {args.questions} in {qa_s:.1f} s ({per_question:.1f} us/question), mean {total / len(qa):.3f}")
    print(f"total: {maps_s + qa_s:.1f} s")


if __name__ == "__main__":
    main()
