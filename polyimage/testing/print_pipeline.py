"""python -m polyimage.testing.print_pipeline [--features] SEED [SCHEDULE_SEED ...]: print the
random pipeline of SEED (with --features, the feature pipeline of SEED) and the schedules the
tests draw for it (random.Random(SEED * 1000 + k) for the k-th one)."""

import random
import sys

import polyimage

from .feature_pipelines import random_feature_pipeline
from .random_pipelines import random_pipeline
from .random_schedules import random_schedule


def main(argv: list) -> None:
    """Print the pipeline of the seed argv[0] and its schedules of the seeds that follow."""
    features = "--features" in argv
    argv = [a for a in argv if a != "--features"]
    seed = int(argv[0])
    generated = (random_feature_pipeline if features else random_pipeline)(seed)
    print(generated.description)
    print(f"inline={generated.inline}, features: {', '.join(sorted(generated.features))}")
    graph = polyimage.compile(generated.outputs, inline=generated.inline).stage_graph
    for schedule_seed in argv[1:] or [str(seed * 1000), str(seed * 1000 + 1)]:
        print(f"schedule random.Random({schedule_seed}):")
        print(random_schedule(graph, random.Random(int(schedule_seed))))


if __name__ == "__main__":
    main(sys.argv[1:])
