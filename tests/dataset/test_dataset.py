"""Datasets on Mesa: determinism, pass alignment, boxes, shard contents, clips, the CLI."""

import io
import json
import tarfile
from pathlib import Path

import av
import numpy as np
import pytest
from blake3 import blake3
from PIL import Image
from where import EXAMPLES

import glrec
from glrec.cli import main
from glrec.dataset import DatasetSpec, generate, render_sample, write_samples
from glrec.dataset.spec.params import sample_params, sample_seed

pytestmark = pytest.mark.gl


def make_spec(**over):
    data = {
        "dataset": {"scene": "table", "samples": 6, "size": "64x48", "seed": 11, "shard_size": 4},
        "output": {},
        "params": {"objects": {"int": [2, 5]}, "camera_azimuth": {"uniform": [0, 360]}},
    }
    for section, values in over.items():
        data[section] = {**data[section], **values}
    return DatasetSpec.from_dict(data, base_dir=EXAMPLES)


def members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def png(data):
    return np.asarray(Image.open(io.BytesIO(data)))  # Pillow: a decoder independent of the encoder (FFmpeg)


def dataset_files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def test_same_spec_same_bytes_and_one_sample_alone_equals_its_copy(tmp_path):
    spec = make_spec()
    generate(spec, tmp_path / "a")
    generate(spec, tmp_path / "b")
    a, b = dataset_files(tmp_path / "a"), dataset_files(tmp_path / "b")
    assert a == b and "shard-000001.tar" in a and "manifest.jsonl" in a

    lines = [json.loads(line) for line in (tmp_path / "a" / "manifest.jsonl").read_text().splitlines()]
    assert [m["index"] for m in lines] == list(range(6))
    for m in lines:  # the manifest's seeds and params are the ones the spec gives
        assert m["seed"] == sample_seed(11, m["index"])
        assert m["params"] == sample_params(spec.distributions(), m["seed"])
    assert len({m["params"]["camera_azimuth"] for m in lines}) == 6

    tar = members(tmp_path / "a" / "shard-000001.tar")
    [folder] = write_samples(spec, [5], tmp_path / "alone")
    toml = tmp_path / "spec.toml"  # a path, as generate() and render_sample() take
    toml.write_text(
        '[dataset]\nscene = "table"\nsamples = 6\nsize = "64x48"\nseed = 11\nshard_size = 4\n'
        "[params]\nobjects = { int = [2, 5] }\ncamera_azimuth = { uniform = [0, 360] }\n"
    )
    [by_path] = write_samples(toml, [5], tmp_path / "by-path")
    assert by_path.name == folder.name and sorted(by_path.iterdir()) != []
    assert all((by_path / f.name).read_bytes() == f.read_bytes() for f in folder.iterdir())
    for name in ("rgb.png", "depth.npy", "instance.png", "semantic.png", "normal.png", "meta.json"):
        data = (folder / name).read_bytes()
        assert data == tar[f"000005.{name}"], name
        assert blake3(data).hexdigest() == lines[5]["files"][name]["blake3"]
    arrays = render_sample(spec, 5).frames[0]  # the API: arrays equal the decoded files
    np.testing.assert_array_equal(png(tar["000005.rgb.png"]), arrays["rgb"])
    np.testing.assert_array_equal(np.load(io.BytesIO(tar["000005.depth.npy"])), arrays["depth"])
    np.testing.assert_array_equal(png(tar["000005.instance.png"]), arrays["instance"])
    # meta.json's params: the scene's values in effect (its defaults too), the spec's on top
    meta = json.loads(tar["000005.meta.json"])
    assert meta["params"]["camera_azimuth"] == lines[5]["params"]["camera_azimuth"]
    assert meta["params"]["objects"] == lines[5]["params"]["objects"]
    assert {"fov", "spin", "table_size"} <= meta["params"].keys()


def test_shards_load_with_tarfile_into_keys_and_shapes(tmp_path):
    generate(make_spec(), tmp_path)
    info = json.loads((tmp_path / "dataset.json").read_text())
    assert info["status"] == "complete" and info["shard_pattern"] == "shard-{000000..000001}.tar"
    tar = members(tmp_path / "shard-000000.tar")
    keys = sorted({n.split(".", 1)[0] for n in tar})
    assert keys == ["000000", "000001", "000002", "000003"]
    for key in keys:
        assert sorted(n.split(".", 1)[1] for n in tar if n.startswith(key)) == sorted(info["keys"])
        rgb, depth = png(tar[f"{key}.rgb.png"]), np.load(io.BytesIO(tar[f"{key}.depth.npy"]))
        instance, semantic = png(tar[f"{key}.instance.png"]), png(tar[f"{key}.semantic.png"])
        normal = png(tar[f"{key}.normal.png"])
        assert rgb.shape == (48, 64, 3) and rgb.dtype == np.uint8
        assert depth.shape == (48, 64) and depth.dtype == np.float32
        assert instance.shape == semantic.shape == (48, 64) and instance.dtype == np.uint16
        assert normal.shape == (48, 64, 3)
        meta = json.loads(tar[f"{key}.meta.json"])
        assert meta["key"] == key and len(meta["objects"]) == instance.max() >= 2
        assert np.array(meta["camera"]["K"]).shape == (3, 3)


def test_shards_load_with_webdataset(tmp_path):
    wds = pytest.importorskip("webdataset", reason="webdataset is optional (pip install webdataset)")
    generate(make_spec(), tmp_path)
    urls = [str(p) for p in sorted(tmp_path.glob("shard-*.tar"))]
    ds = wds.WebDataset(urls, shardshuffle=False).decode("rgb8")
    ds = ds.to_tuple("__key__", "rgb.png", "depth.npy", "meta.json")
    got = list(ds)
    assert [k for k, *_ in got] == [f"{i:06d}" for i in range(6)]
    for _, rgb, depth, meta in got:
        assert rgb.shape == (48, 64, 3) and depth.shape == (48, 64) and "camera" in meta


def test_passes_agree_pixel_for_pixel_on_a_known_layout(tmp_path):
    # Cards at exact pixel rectangles; card 2 is nearer than card 1 and hides part of it.
    cards = [[8, 6, 40, 30, 2.0, 1, 1], [20, 10, 60, 44, 1.5, 2, 2], [0, 0, 10, 5, 9.0, 3, 1]]
    spec = make_spec(
        dataset={"scene": "dataset_scene.py:Cards", "samples": 1},
        params={"cards": cards},
    ).with_(params={"cards": cards})
    generate(spec, tmp_path)
    tar = members(tmp_path / "shard-000000.tar")
    rgb, instance = png(tar["000000.rgb.png"]), png(tar["000000.instance.png"])
    depth, semantic = np.load(io.BytesIO(tar["000000.depth.npy"])), png(tar["000000.semantic.png"])
    normal = png(tar["000000.normal.png"])
    expect = np.zeros((48, 64), np.uint16)
    for x0, y0, x1, y1, _, inst, _ in sorted(cards, key=lambda c: -c[4]):  # far to near
        expect[y0:y1, x0:x1] = inst
    np.testing.assert_array_equal(instance, expect)  # exact edges, occlusion resolved
    for *_, d, inst, cls in cards:
        mask = instance == inst
        assert np.all(depth[mask] == np.float32(d)) and np.all(semantic[mask] == cls)
        colours = np.unique(rgb[mask].reshape(-1, 3), axis=0)
        assert len(colours) == 1 and colours[0].any()  # one flat colour, exactly where the mask is
        # colour changes at the mask's left edge, on the same column as instance and depth
        row = int(np.nonzero(mask.any(axis=1))[0][0])
        col = int(np.nonzero(mask[row])[0][0])
        if col > 0:
            assert instance[row, col - 1] != inst and not np.array_equal(rgb[row, col - 1], rgb[row, col])
            assert depth[row, col - 1] != depth[row, col]
    background = instance == 0
    assert np.all(depth[background] == 0) and np.all(rgb[background] == 0) and np.all(normal[background] == 0)
    assert np.all(normal[~background] == [128, 128, 0])  # (0, 0, -1): facing the camera
    meta = json.loads(tar["000000.meta.json"])
    boxes = {o["instance"]: o for o in meta["objects"]}
    assert boxes[2]["visible_bbox"] == [20, 10, 60, 44] and boxes[2]["visible_pixels"] == 40 * 34
    assert boxes[1]["visible_pixels"] == 32 * 24 - 20 * 20  # the hidden corner is not counted


def test_table_geometry_depth_normals_and_boxes_agree():
    spec = make_spec(
        dataset={"samples": 12, "size": "128x96"},
        params={"objects": 1, "background": [1.0, 0.0, 1.0], "camera_elevation": {"uniform": [25, 60]}},
    )
    for index in range(12):
        sample = render_sample(spec, index)
        f, meta = sample.frames[0], sample.meta
        k = np.array(meta["camera"]["K"])
        w2c = np.array(meta["camera"]["world_to_camera"])
        depth, semantic, instance, normal = f["depth"], f["semantic"], f["instance"], f["normal"]
        # colour agrees with depth at every silhouette pixel: background colour exactly where nothing is
        nothing = depth == 0
        assert np.array_equal(np.all(f["rgb"] == [255, 0, 255], axis=-1), nothing)
        assert np.array_equal(semantic == 0, nothing) and np.array_equal(instance > 0, semantic >= 2)
        # unproject every table pixel with K and the extrinsics: it lies on the table plane y = 0
        rows, cols = np.nonzero(semantic == 1)
        z = depth[rows, cols].astype(np.float64)
        cam = np.linalg.inv(k) @ np.vstack([cols + 0.5, rows + 0.5, np.ones_like(z)]) * z
        world = np.linalg.inv(w2c) @ np.vstack([cam, np.ones_like(z)])
        # ... or on its rim: the table is a 3 x 0.1 x 3 box whose top is y = 0
        top = np.abs(world[1]) < 1e-3
        rim = np.abs(np.maximum(np.abs(world[0]), np.abs(world[2])) - 1.5) < 1e-3
        assert np.all(top | (rim & (world[1] > -0.1 - 1e-3) & (world[1] < 1e-3)))
        assert top.mean() > 0.8
        top &= ~rim
        up = w2c[:3, :3] @ [0.0, 1.0, 0.0]  # the table's normal in camera space
        np.testing.assert_allclose(normal[rows[top], cols[top]], np.tile(up, (top.sum(), 1)), atol=1e-4)
        # object pixels lie on the object: within its bounding sphere
        [obj] = meta["objects"]
        centre = np.array(obj["world_from_object"])[:3, 3]
        scale = np.array(obj["world_from_object"])[1, 1]
        rows, cols = np.nonzero(instance == 1)
        z = depth[rows, cols].astype(np.float64)
        cam = np.linalg.inv(k) @ np.vstack([cols + 0.5, rows + 0.5, np.ones_like(z)]) * z
        world = (np.linalg.inv(w2c) @ np.vstack([cam, np.ones_like(z)]))[:3].T
        assert np.linalg.norm(world - centre, axis=1).max() <= scale * np.sqrt(3) / 2 + 1e-3
        # the projected box encloses the mask, and with nothing in front of it equals the mask's box (+-1 px)
        x0, y0, x1, y1 = obj["bbox"]
        vx0, vy0, vx1, vy1 = obj["visible_bbox"]
        assert x0 <= vx0 and y0 <= vy0 and vx1 <= x1 and vy1 <= y1
        assert max(abs(a - b) for a, b in zip(obj["bbox"], obj["visible_bbox"], strict=True)) <= 1
        assert obj["visible_pixels"] == int((instance == 1).sum()) > 20


def test_boxes_enclose_masks_in_busy_scenes():
    spec = make_spec(dataset={"samples": 8}, params={"objects": 8, "object_size": [0.3, 0.7]})
    for index in range(8):
        sample = render_sample(spec, index)
        instance = sample.frames[0]["instance"]
        for obj in sample.meta["objects"]:
            rows, cols = np.nonzero(instance == obj["instance"])
            if len(rows) == 0:
                assert obj["visible_bbox"] is None
                continue
            x0, y0, x1, y1 = obj["bbox"]
            assert x0 <= cols.min() and cols.max() < x1 and y0 <= rows.min() and rows.max() < y1


def test_jpeg_colour_is_deterministic_and_close_to_png(tmp_path):
    spec = make_spec(output={"rgb": "jpg", "jpeg_quality": 95})
    generate(spec, tmp_path / "a")
    generate(spec, tmp_path / "b")
    a, b = members(tmp_path / "a" / "shard-000000.tar"), members(tmp_path / "b" / "shard-000000.tar")
    for key in ("000000", "000003"):
        ja, jb = png(a[f"{key}.rgb.jpg"]), png(b[f"{key}.rgb.jpg"])
        np.testing.assert_array_equal(ja, jb)  # decoded pixels equal
        ref = render_sample(spec, int(key)).frames[0]["rgb"].astype(np.float64)
        mse = np.mean((ja.astype(np.float64) - ref) ** 2)
        assert 10 * np.log10(255**2 / mse) > 30
        assert a[f"{key}.instance.png"] == b[f"{key}.instance.png"]  # masks stay lossless PNG


def test_folder_layout_holds_the_same_files(tmp_path):
    generate(make_spec(), tmp_path / "tar")
    generate(make_spec(output={"layout": "folder"}), tmp_path / "folder")
    tar = members(tmp_path / "tar" / "shard-000001.tar")
    for name in ("rgb.png", "depth.npy", "instance.png", "normal.png", "meta.json"):
        assert (tmp_path / "folder" / "000004" / name).read_bytes() == tar[f"000004.{name}"]
    lines = (tmp_path / "folder" / "manifest.jsonl").read_text().splitlines()
    assert json.loads(lines[4])["location"] == "000004"


def test_png16_depth_and_npy_normals(tmp_path):
    spec = make_spec(dataset={"samples": 1}, output={"depth": "png16", "depth_scale": 1000.0, "normal": "npy"})
    generate(spec, tmp_path)
    tar = members(tmp_path / "shard-000000.tar")
    ref = render_sample(spec, 0).frames[0]
    depth_mm = png(tar["000000.depth.png"])
    assert depth_mm.dtype == np.uint16
    np.testing.assert_array_equal(depth_mm, np.rint(ref["depth"].astype(np.float64) * 1000).astype(np.uint16))
    np.testing.assert_array_equal(np.load(io.BytesIO(tar["000000.normal.npy"])), ref["normal"])


def test_clips_carry_video_and_per_frame_ground_truth(tmp_path):
    spec = make_spec(
        dataset={"samples": 2, "frames": 5, "fps": 10, "shard_size": 2}, params={"spin": 3.0, "orbit": 30.0}
    )
    generate(spec, tmp_path)
    tar = members(tmp_path / "shard-000000.tar")
    ref = render_sample(spec, 1)
    with av.open(io.BytesIO(tar["000001.rgb.mp4"])) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 5
    for got, want in zip(frames, ref.frames, strict=True):
        mse = np.mean((got.astype(np.float64) - want["rgb"].astype(np.float64)) ** 2)
        assert 10 * np.log10(255**2 / mse) > 28  # H.264 at crf 18, 4:2:0, tiny frames
    depth = np.load(io.BytesIO(tar["000001.depth.npy"]))
    instance = np.load(io.BytesIO(tar["000001.instance.npy"]))
    assert depth.shape == (5, 48, 64) and instance.shape == (5, 48, 64) and instance.dtype == np.uint16
    np.testing.assert_array_equal(depth, np.stack([f["depth"] for f in ref.frames]))
    assert not np.array_equal(instance[0], instance[4])  # it moves
    meta = json.loads(tar["000001.meta.json"])
    assert [fr["t"] for fr in meta["frames"]] == [0.0, 0.1, 0.2, 0.3, 0.4]


def test_cli_dataset_refuses_existing_and_only_writes_samples(tmp_path, capsys):
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(
        '[dataset]\nscene = "table"\nsamples = 3\nsize = "64x48"\nseed = 2\n[params]\nobjects = { int = [1, 3] }\n'
    )
    out = tmp_path / "out"
    assert main(["dataset", str(spec_file), "-o", str(out), "-q"]) == 0
    assert main(["dataset", str(spec_file), "-o", str(out), "-q"]) == 1
    assert "holds this dataset" in capsys.readouterr().err
    assert main(["dataset", str(spec_file), "-o", str(out), "-q", "--resume"]) == 0  # complete: nothing to redo
    assert main(["dataset", str(spec_file), "-o", str(tmp_path / "one"), "--only", "2"]) == 0
    assert "seed" in capsys.readouterr().out
    tar = members(out / "shard-000000.tar")
    assert (tmp_path / "one" / "000002" / "rgb.png").read_bytes() == tar["000002.rgb.png"]
    assert main(["dataset", str(spec_file), "-o", str(tmp_path / "x"), "--only", "3"]) == 2
    assert "outside the spec's samples 0..2" in capsys.readouterr().err


def test_scene_without_passes_is_refused_before_writing(tmp_path):
    spec = make_spec(dataset={"scene": "cube"}, params={})
    with pytest.raises(glrec.ConfigError, match=r"does not write the pass\(es\) \['depth'"):
        generate(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(glrec.ConfigError, match="has no parameter 'objectz'"):
        generate(make_spec(params={"objectz": 3}), tmp_path / "out")
    # a plain scene works for colour alone, and takes the reserved parameter 'time'
    rgb_only = make_spec(dataset={"scene": "cube", "samples": 2}, output={"passes": ["rgb"]}, params={})
    rgb_only = rgb_only.with_(params={"time": {"uniform": [0, 10]}})
    generate(rgb_only, tmp_path / "cube")
    tar = members(tmp_path / "cube" / "shard-000000.tar")
    assert sorted(tar) == ["000000.meta.json", "000000.rgb.png", "000001.meta.json", "000001.rgb.png"]
    assert tar["000000.rgb.png"] != tar["000001.rgb.png"]


def test_preview_png(tmp_path, capsys):
    out = tmp_path / "preview.png"
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text('[dataset]\nscene = "table"\nsamples = 2\nsize = "64x48"\nseed = 2\n')
    assert main(["dataset-preview", str(spec_file), "-o", str(out), "--index", "1"]) == 0
    img = png(out.read_bytes())
    assert img.shape == (48, 256, 3)
    ref = render_sample(DatasetSpec.load(spec_file), 1).frames[0]
    instance_panel = img[:, 128:192]
    assert np.array_equal(instance_panel.any(axis=-1), ref["instance"] > 0)


def test_colour_encoder_hook_receives_the_colour_texture(tmp_path, monkeypatch):
    from glrec.dataset.files import encode

    seen = []

    class Recording:
        ext = "png"

        def __init__(self, output):
            self.output = output

        def encode(self, image):
            seen.append((image.texture.size, image.array().shape))
            return encode.encode_png(image.array())

    monkeypatch.setitem(encode.COLOUR_ENCODERS, ("png", "test"), Recording)
    generate(make_spec(dataset={"samples": 2}, output={"rgb_encoder": "test"}), tmp_path / "hook")
    generate(make_spec(dataset={"samples": 2}), tmp_path / "cpu")
    assert seen == [((64, 48), (48, 64, 3))] * 2
    hook, cpu = members(tmp_path / "hook" / "shard-000000.tar"), members(tmp_path / "cpu" / "shard-000000.tar")
    assert hook["000001.rgb.png"] == cpu["000001.rgb.png"]
