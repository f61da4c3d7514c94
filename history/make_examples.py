"""Write history/example.csv: a synthetic, documented history of three recurring jobs.

The runtimes follow CoBell's model with known parameters plus 3 % noise, so the example is
reproducible and its ground truth is known (see README.md beside this file):

    runtime = f(x) * (1 + sum_k (a_k + b_k / x) * ov_k) * noise
    f(x) = theta0 + theta1 / x + theta2 * log(x) + theta3 * x

Run `python history/make_examples.py` from the repository root to regenerate it; a test checks
that the committed file is what this script writes.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

from cobell_cli.store.interchange import to_csv

# job: (theta0, theta1, theta2, theta3), input_bytes
JOBS = {
    "sgd": ((40.0, 2400.0, 6.0, 0.6), 10 * 2**30),
    "wordcount": ((25.0, 1500.0, 4.0, 0.3), 50 * 2**30),
    "kmeans": ((60.0, 3000.0, 8.0, 0.9), 20 * 2**30),
}
# (job, co_runner_job): (a, b) — how much the co-runner slows the job down
INTERFERENCE = {
    ("sgd", "wordcount"): (0.25, 1.6),
    ("sgd", "kmeans"): (0.35, 2.4),
    ("wordcount", "sgd"): (0.15, 1.0),
    ("kmeans", "sgd"): (0.30, 2.0),
}
SCALE_OUTS = (4, 6, 8, 10, 12, 16, 20, 24)
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def f(theta: tuple[float, ...], x: int) -> float:
    t0, t1, t2, t3 = theta
    return t0 + t1 / x + t2 * math.log(x) + t3 * x


def make(seed: int = 2018) -> list[dict]:
    rng = random.Random(seed)
    runs: list[dict] = []
    clock = START
    app = 1
    for night in range(40):
        clock = START + night * 86400
        for job, (theta, size) in JOBS.items():
            x = rng.choice(SCALE_OUTS)
            co_job = rng.choice([j for j in JOBS if j != job] + [None, None])
            colocations = []
            slowdown = 1.0
            isolated = f(theta, x)
            if co_job is not None and (job, co_job) in INTERFERENCE:
                a, b = INTERFERENCE[(job, co_job)]
                ov = round(rng.uniform(0.1, 1.0), 3)
                slowdown += (a + b / x) * ov
            runtime = round(isolated * slowdown * rng.gauss(1.0, 0.03), 3)
            started = clock + rng.uniform(0, 600)
            if slowdown > 1.0:
                overlap_s = round(ov * runtime, 3)
                co_start = round(started - rng.uniform(0, 120), 3)
                colocations.append(
                    {
                        "co_runner_app_id": f"application_{int(START)}000_{app + 5000:04d}",
                        "co_runner_job": co_job,
                        "co_runner_scale_out": rng.choice(SCALE_OUTS),
                        "co_runner_started_at": co_start,
                        "co_runner_finished_at": round(started + overlap_s, 3),
                        "overlap_s": overlap_s,
                        "overlap_ratio": ov,
                    }
                )
            status = "succeeded" if rng.random() > 0.04 else "failed"
            runs.append(
                {
                    "id": len(runs) + 1,
                    "job": job,
                    "input_bytes": int(size * rng.uniform(0.97, 1.03)),
                    "scale_out": x,
                    "backend": "yarn",
                    "app_id": f"application_{int(START)}000_{app:04d}",
                    "queue": "default",
                    "user": "etl",
                    "host": "edge-1",
                    "pid": None,
                    "submitted_at": round(started - 2.0, 3),
                    "started_at": round(started, 3),
                    "finished_at": round(started + runtime, 3),
                    "runtime_s": runtime if status == "succeeded" else None,
                    "status": status,
                    "target_s": None,
                    "predicted_s": None,
                    "model": None,
                    "reason": "example history (synthetic)",
                    "command": json.dumps(["spark-submit", "--master", "yarn", f"{job}.py"]),
                    "exit_code": 0 if status == "succeeded" else 1,
                    "colocations": colocations,
                }
            )
            app += 1
    return runs


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("example.csv")
    out.write_text(to_csv(make()))


if __name__ == "__main__":
    main()
