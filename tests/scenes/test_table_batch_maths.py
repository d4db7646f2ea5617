"""The table's batch camera and light maths give the one-sample formulas' bits (math's sin and cos, its order)."""

import math

import numpy as np

from glrec.scenes.camera import look_at_batch
from glrec.scenes.table_batch import cameras, lights


def params(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        out.append({
            "camera_azimuth": float(rng.uniform(-720, 720)), "orbit": float(rng.choice([0.0, rng.normal(0, 90)])),
            "camera_elevation": float(rng.uniform(-89, 89)), "camera_distance": float(rng.uniform(0.1, 50)),
            "light_azimuth": float(rng.uniform(0, 360)), "light_elevation": float(rng.uniform(-90, 90)),
            "ambient": float(rng.uniform(0, 1)),
        })  # fmt: skip
    return out, rng.uniform(0, 100, n).tolist()


def test_cameras_equal_the_one_sample_formula_bit_for_bit():
    ps, times = params(5000)
    eyes, views = cameras(ps, times)
    want = np.empty((len(ps), 3))
    for j, (p, t) in enumerate(zip(ps, times, strict=True)):  # Table's camera as it was written for one sample
        az = math.radians(float(p["camera_azimuth"]) + float(p["orbit"]) * t)
        el = math.radians(float(p["camera_elevation"]))
        d = float(p["camera_distance"])
        want[j] = (d * math.cos(el) * math.sin(az), d * math.sin(el), d * math.cos(el) * math.cos(az))
    assert eyes.tobytes() == want.tobytes()
    assert views.tobytes() == look_at_batch(want, np.array([0.0, 1.0, 0.0])).tobytes()


def test_lights_equal_the_one_sample_formula_bit_for_bit():
    ps, _ = params(5000, seed=1)
    want = []
    for p in ps:
        az, el = math.radians(float(p["light_azimuth"])), math.radians(float(p["light_elevation"]))
        want.append(
            (-(math.cos(el) * math.sin(az)), -math.sin(el), -(math.cos(el) * math.cos(az)), float(p["ambient"]))
        )
    assert lights(ps).tobytes() == np.array(want).tobytes()
