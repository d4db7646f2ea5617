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


def test_placement_decides_a_try_that_exactly_touches_a_placed_object_by_hypot(monkeypatch):
    # Squares too close to call go to hypot. A try at distance 0.5 from an object with apart = 0.25 + 0.25 is not
    # farther than apart (hypot(0.5, 0) > 0.5 is False): it overlaps, for every try, and nothing raises (the
    # first version indexed the (k, a, 1) bounds with the (k, a, tries) mask: an IndexError for such a try).
    from glrec.scenes import table_layout

    monkeypatch.setattr(
        table_layout, "uniforms", lambda seeds, stream, draws, first=0: np.full((len(seeds), draws), 0.5)
    )
    seeds = np.array([1, 2], np.uint64)
    half, radius = np.array([[1.0], [1.0]]), np.array([[0.25], [0.25]])
    xs, zs, rs = np.array([[0.5, 0.5]]), np.array([[0.0, 0.0]]), np.array([[0.25, 0.24]])
    placed = np.array([[True, True]])
    fits, x, z = table_layout._tries(seeds, 1, 0, 4, half, radius, xs, zs, rs, placed)
    assert x.tolist() == z.tolist() == [[0.0] * 4] * 2  # every try at the centre
    assert fits.tolist() == [[False] * 4, [True] * 4]  # touching: overlaps; 0.01 farther apart: fits
    assert math.hypot(0.5, 0.0) > 0.25 + 0.24 and not math.hypot(0.5, 0.0) > 0.25 + 0.25
    placed[0, 0] = False  # an empty slot is far from every try
    fits, _, _ = table_layout._tries(seeds, 1, 0, 4, half, radius, xs, zs, rs, placed)
    assert fits.tolist() == [[True] * 4, [True] * 4]
