"""Pure scoring functions: (model output, ground truth) -> score with a reason. No I/O."""
