"""Dataset passes packed on the GPU (Mesa in CI): the same bytes as the host path, boxes, ids, threads.

The host path (every pass read back as rendered, converted in numpy) stays the
reference: it is what ``render_sample`` returns and what glrec wrote before the
GPU packer; ``tests/data/dataset_reference.json`` holds member hashes of
datasets made by that code (commit 7de7833).
"""

import hashlib
import io
import json

import numpy as np
import pytest
from blake3 import blake3
from helpers import shard_members
from PIL import Image
from where import DATA, EXAMPLES

from glrec.dataset import DatasetSpec, generate
from glrec.dataset.files.encode import colour_encoder, file_array
from glrec.dataset.files.samples import sample_files
from glrec.dataset.rendering.pack import MAX_IDS, PassPacker
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.errors import EncoderError
from glrec.gl.context import create_context
from glrec.scenes.camera import mask_boxes

pytestmark = pytest.mark.gl
REFERENCE = json.loads((DATA / "dataset_reference.json").read_text())


def table_spec(size="66x50", samples=5, **output):
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": samples, "size": size, "seed": 3, "shard_size": 3},
            "output": output,
            "params": {"objects": {"int": [2, 8]}, "camera_azimuth": {"uniform": [0, 360]}},
        }
    )


def cards_spec(cards, passes=None):
    output = {"passes": passes} if passes else {}
    return DatasetSpec.from_dict(
        {
            "dataset": {"scene": "dataset_scene.py:Cards", "samples": 1, "size": "70x41", "seed": 1},
            "output": output,
            "params": {"cards": cards},
        },
        base_dir=EXAMPLES,
    )


@pytest.mark.parametrize("size", ["64x48", "66x50", "65x49"])  # width % 4: 0, 2, odd (words straddle rows)
@pytest.mark.parametrize("normal", ["png", "npy"])
def test_packed_arrays_equal_the_host_conversion(gl, size, normal):
    spec = table_spec(size, normal=normal)
    renderer = SampleRenderer(spec, gl.mgl, None, keep_rgb=True)
    packer = PassPacker(gl.mgl, renderer.gbuffer, set(spec.output.passes), normal=normal, boxes=True)
    try:
        for index in range(spec.samples):
            host = renderer.render(index).frames[0]  # reads every target back as rendered
            got = packer.run()
            assert np.array_equal(got.arrays["rgb"], host["rgb"])
            for name in ("depth", "instance", "semantic", "normal"):
                want = file_array(name, host[name], spec.output)
                assert got.arrays[name].dtype == want.dtype and got.arrays[name].shape == want.shape
                # bit patterns, so that -0.0 and 0.0 or NaNs would count as different
                assert got.arrays[name].tobytes() == want.tobytes(), name
            assert got.boxes == mask_boxes(host["instance"])
            assert got.max_ids == {"instance": int(host["instance"].max()), "semantic": int(host["semantic"].max())}
            assert got.boxes, "the scene must show objects for the check to mean anything"
    finally:
        packer.release()
        renderer.close()
    assert gl.mgl.error == "GL_NO_ERROR"


def test_shards_are_the_host_paths_bytes_for_every_thread_count(tmp_path):
    spec = table_spec("66x50", samples=7)
    made = {}
    for threads in (1, 3):
        from glrec.dataset.files.folder import DatasetFolder
        from glrec.dataset.files.runner import ShardWorker

        root = tmp_path / f"t{threads}"
        root.mkdir()
        folder = DatasetFolder(root, spec)
        folder.records.mkdir(parents=True, exist_ok=True)
        with ShardWorker(spec, folder, threads=threads) as worker:
            for shard in range(spec.shards):
                worker.run(shard)
        made[threads] = shard_members(root)
    assert made[1] == made[3]
    with create_context() as gl:  # the host path, sample by sample
        renderer = SampleRenderer(spec, gl.mgl, colour_encoder(spec.output), keep_rgb=False)
        try:
            for index in range(spec.samples):
                for name, data in sample_files(spec, renderer.render(index)).items():
                    assert made[1][f"{spec.key(index)}.{name}"] == data, name
        finally:
            renderer.close()


@pytest.mark.parametrize("config", sorted(REFERENCE["configs"]))
def test_datasets_match_those_made_before_gpu_packing(tmp_path, gl, config):
    if gl.info.renderer != REFERENCE["gl_renderer"]:
        pytest.skip(f"the reference was rendered by {REFERENCE['gl_renderer']}, this is {gl.info.renderer}")
    ref = REFERENCE["configs"][config]
    generate(DatasetSpec.from_dict(ref["spec"]), tmp_path / "o")
    got = shard_members(tmp_path / "o")
    assert sorted(got) == sorted(ref["members"])
    for name, data in got.items():
        want = ref["members"][name]
        if name.endswith((".png", ".jpg")):
            pixels = np.asarray(Image.open(io.BytesIO(data))).tobytes()
            assert hashlib.sha256(pixels).hexdigest() == want["decoded_sha256"], name
        # PNGs are glrec's own writer's now (glrec.encoders.png.writer), not FFmpeg's, and FFmpeg's JPEG encoder
        # runs one slice (it made one per core, so the bytes depended on the machine): same pixels, other bytes
        if not name.endswith((".png", ".jpg")):
            assert hashlib.sha256(data).hexdigest() == want["sha256"], name


def test_ids_beyond_the_box_table_fall_back_to_the_mask(tmp_path, gl):
    big = MAX_IDS + 7
    spec = cards_spec([[4, 3, 30, 20, 2.0, big, 1], [20, 10, 60, 35, 3.0, 2, 2]])
    renderer = SampleRenderer(spec, gl.mgl, None, keep_rgb=True)
    packer = PassPacker(gl.mgl, renderer.gbuffer, {"instance"}, boxes=True)
    try:
        host = renderer.render(0).frames[0]
        got = packer.run()
    finally:
        packer.release()
        renderer.close()
    assert got.boxes == mask_boxes(host["instance"])
    assert got.boxes[big] == ([4, 3, 30, 20], 26 * 17)  # nearest card in front: all of it visible


def test_ids_beyond_16_bits_are_refused_only_where_written(tmp_path):
    huge = 70000
    cards = [[4, 3, 30, 20, 2.0, huge, 1]]
    with pytest.raises(EncoderError, match="instance id 70000 exceeds the 16 bits"):
        generate(cards_spec(cards), tmp_path / "all")
    assert not list((tmp_path / "all").glob("shard-*")), "no shard (not even a partial one) is left"
    # Without the instance pass the id is only used for the boxes in meta.json.
    generate(cards_spec(cards, passes=["rgb", "depth"]), tmp_path / "some")
    meta = json.loads(shard_members(tmp_path / "some")["000000.meta.json"])
    assert meta["objects"][0]["visible_bbox"] == [4, 3, 30, 20]
    assert meta["objects"][0]["visible_pixels"] == 26 * 17


def test_an_encoding_error_on_a_worker_thread_aborts_the_shard(tmp_path, monkeypatch):
    from glrec.dataset.files import encode

    calls = []
    real = encode.encode_png

    def failing(array, level=3):
        calls.append(1)
        if len(calls) == 6:
            raise EncoderError("disk on fire (test)")
        return real(array, level)

    monkeypatch.setattr(encode, "encode_png", failing)
    with pytest.raises(EncoderError, match="disk on fire"):
        generate(table_spec("64x48", samples=6), tmp_path / "o", workers=1)  # the patch is in this process
    assert not list((tmp_path / "o").glob("shard-*")), "neither a shard nor a .partial is left"


def test_shard_records_hold_the_files_digest_and_size(tmp_path):
    from glrec.dataset.files.folder import DatasetFolder

    spec = table_spec("64x48", samples=4)
    generate(spec, tmp_path / "o")
    folder = DatasetFolder(tmp_path / "o", spec)
    for shard in range(spec.shards):
        record = json.loads(folder.record_path(shard).read_text())
        data = (tmp_path / "o" / record["file"]).read_bytes()
        assert record["bytes"] == len(data)
        assert record["blake3"] == blake3(data).hexdigest()
        for line in record["samples"]:  # member digests, taken on the encode threads
            got = shard_members(tmp_path / "o")
            for name, info in line["files"].items():
                assert info["blake3"] == blake3(got[f"{line['key']}.{name}"]).hexdigest()


def test_nvjpeg_colour_without_nvimagecodec_says_how_to_get_it(tmp_path):
    try:
        import nvidia.nvimgcodec  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("nvImageCodec is installed here: the GPU tier tests nvjpeg colour")
    from glrec.errors import EncoderUnavailableError

    with pytest.raises(EncoderUnavailableError, match=r"nvImageCodec is not installed.*glrec\[nvjpeg\]"):
        generate(table_spec("64x48", samples=2, rgb="jpg", rgb_encoder="nvjpeg"), tmp_path / "o")
    assert not list((tmp_path / "o").glob("shard-*"))


@pytest.mark.parametrize(
    "array",
    [
        np.linspace(0, 9, 480 * 640, dtype=np.float32).reshape(480, 640),  # a depth pass
        np.arange(3 * 48 * 64, dtype=np.uint16).reshape(3, 48, 64),  # a clip's stack
        np.arange(60, dtype=">f4").reshape(4, 5, 3),  # big-endian
        np.arange(2400, dtype=np.float32).reshape(40, 60)[::2, 1::3],  # a strided view
        np.asfortranarray(np.arange(35.0).reshape(5, 7)),
        np.zeros((0, 5), np.uint8),
        np.zeros((1,) * 30, np.uint8),
    ],
    ids=["depth", "clip", "big-endian", "strided", "fortran", "empty", "30-d"],
)
def test_npy_files_are_the_bytes_numpy_save_writes(array):
    """The one-copy ``.npy`` writer (the header and a byte view joined) against ``numpy.save`` itself."""
    from glrec.dataset.files.encode import npy_bytes

    saved = io.BytesIO()
    np.save(saved, np.ascontiguousarray(array), allow_pickle=False)
    data = npy_bytes(array)
    assert data == saved.getvalue()
    assert np.array_equal(np.load(io.BytesIO(data)), array)
