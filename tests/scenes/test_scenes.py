"""Built-in and user scenes."""

import textwrap

import numpy as np
import pytest

import glrec
from glrec.gl.target import RenderTarget
from glrec.scenes import BUILTINS, load_scene


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtins_render_deterministically_and_not_blank(gl, name):
    size = (96, 64)
    target = RenderTarget(gl.mgl, size)
    scene = load_scene(name)
    scene.setup(gl.mgl, size)
    shots = []
    for t in (0.5, 1.5, 0.5):
        target.use()
        scene.render(t)
        shots.append(np.frombuffer(target.fbo.read(components=3), np.uint8))
    np.testing.assert_array_equal(shots[0], shots[2])  # same t, same pixels
    assert not np.array_equal(shots[0], shots[1])  # it moves
    assert shots[0].std() > 5  # not a flat colour
    scene.close()
    scene.close()  # safe twice
    target.release()


def test_python_scene_file(gl, tmp_path):
    f = tmp_path / "my_scene.py"
    f.write_text(
        textwrap.dedent("""
        class Red:
            def setup(self, ctx, size): self.ctx = ctx
            def render(self, t): self.ctx.clear(1.0, 0.0, 0.0)
            def close(self): pass
    """)
    )
    assert type(load_scene(f"{f}:Red")).__name__ == "Red"
    assert type(load_scene(str(f))).__name__ == "Red"  # the only scene class
    glrec.record(str(f), tmp_path / "red.mkv", size=(32, 32), fps=10, frames=2)


def test_python_scene_errors(tmp_path):
    with pytest.raises(glrec.SceneError, match="does not exist"):
        load_scene(str(tmp_path / "nope.py"))
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(glrec.SceneError, match="exactly one scene class.*found: none"):
        load_scene(str(empty))
    with pytest.raises(glrec.SceneError, match="defines no 'Missing'"):
        load_scene(f"{empty}:Missing")
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('no such thing')\n")
    with pytest.raises(glrec.SceneError, match="Importing scene file .* ImportError: no such thing"):
        load_scene(str(broken))
    with pytest.raises(glrec.SceneError, match="Unknown scene 'cubes'.*bars, cube, particles, plasma"):
        load_scene("cubes")


def test_shadertoy_scene(gl, tmp_path):
    f = tmp_path / "toy.glsl"
    f.write_text(
        textwrap.dedent("""
        void mainImage(out vec4 fragColor, in vec2 fragCoord) {
            vec2 uv = fragCoord / iResolution.xy;
            fragColor = vec4(uv.x, float(iFrame) / 10.0, 0.5 + 0.5 * sin(iTime), 1.0);
        }
    """)
    )
    path = tmp_path / "toy.mkv"
    glrec.record(str(f), path, size=(64, 48), fps=10, frames=3, qp=0)
    from helpers import decode_planes

    assert len(decode_planes(path)) == 3


def test_shader_compile_error_names_file_stage_and_log(gl, tmp_path):
    f = tmp_path / "bad.frag"
    f.write_text("void mainImage(out vec4 c, in vec2 p) { c = vec4(undefined_thing); }\n")
    with pytest.raises(glrec.ShaderError) as info:
        glrec.record(str(f), tmp_path / "bad.mp4", size=(32, 32), fps=10, frames=1)
    msg = str(info.value)
    assert str(f) in msg and "fragment shader failed to compile" in msg and "undefined_thing" in msg
    assert not (tmp_path / "bad.mp4").exists() or (tmp_path / "bad.mp4").stat().st_size < 1000


def test_shader_file_without_mainimage(tmp_path):
    f = tmp_path / "x.glsl"
    f.write_text("void main() {}\n")
    with pytest.raises(glrec.SceneError, match="no mainImage"):
        load_scene(str(f))


def test_table_boxes_and_poses_for_all_objects_at_once_equal_one_by_one():
    import numpy as np

    from glrec.scenes.camera import GL_TO_CV, intrinsics, matmul, matmul_stack, pixel_box, pixel_boxes
    from glrec.scenes.table import NEAR, Table, _corners

    table = Table()
    table.size = (64, 48)
    table.randomise({"objects": 12, "camera_distance": 1.2}, np.random.default_rng(3))  # near: boxes reach the edges
    models = table.models(0.7)
    assert len(models) == len(table.objects) > 5
    for obj, model in zip(table.objects, models, strict=True):
        np.testing.assert_array_equal(model, table.model(obj, 0.7))
    _, view, _ = table.camera(0.7)
    w2c, k = matmul(GL_TO_CV, view), intrinsics(float(table.params["fov"]), table.size)
    stacked = matmul_stack(w2c, models)
    assert all((stacked[j] == matmul(w2c, m)).all() for j, m in enumerate(models))
    corners = _corners("cube")
    points = np.stack([matmul(corners, m[:3, :3].T) + m[:3, 3] for m in models])
    one_by_one = [pixel_box(p, w2c, k, table.size, NEAR) for p in points]
    assert pixel_boxes(points, w2c, k, table.size, NEAR) == one_by_one
    assert any(b is not None for b in one_by_one)
    boxes = [o["bbox"] for o in table.annotations(0.7)["objects"]]
    assert len(boxes) == len(table.objects) and any(b is not None for b in boxes)


def test_a_table_takes_objects_set_by_hand_and_annotates_them_in_one_sample_and_in_a_batch():
    import numpy as np

    from glrec.scenes.table import Table

    table = Table()
    table.size = (64, 48)
    table.randomise({"objects": 6, "shapes": ["cube", "sphere"]}, np.random.default_rng(8))
    kept = [dict(o) for o in table.objects[1:4]]
    kept[0]["x"] += 0.25  # a subclass may move or drop objects of a layout
    table.objects = kept
    assert table.objects == kept
    one = table.annotations(0.3)
    assert [o["instance"] for o in one["objects"]] == [2, 3, 4]  # their own ids, as given
    assert table.annotations_batch([table.layout], [0.3]) == [one]
    np.testing.assert_array_equal(table.models(0.3)[0], table.model(kept[0], 0.3))


def test_the_tables_batch_check_takes_what_check_takes_and_refuses_with_checks_words():
    import numpy as np

    from glrec.errors import SceneError
    from glrec.scenes.table import Table

    table = Table()
    good = [{"objects": 3, "fov": 50.0, "shapes": ["cone"]}, {"object_size": (0.2, 0.2)}, {"objects": 2.0},
            {"camera_distance": 2, "ambient": np.float64(0.3)}, {"objects": True}]  # fmt: skip
    assert table.check_batch(good) == [table.check(p) for p in good]
    bad = [
        {"fov": 180.0}, {"camera_distance": 0.0}, {"table_size": -1}, {"ambient": float("nan")},
        {"light_azimuth": True}, {"shapes": []}, {"shapes": ["cube", "torus"]}, {"objects": 1001},
        {"object_size": [0.5, 0.2]}, {"object_size": [0.0, 0.2]}, {"fov": "wide"},
    ]  # fmt: skip
    for p in bad:
        with pytest.raises(SceneError) as one:
            table.check(p)
        with pytest.raises(SceneError) as batch:
            table.check_batch([{}, p, {"fov": 0.0}])  # the first sample that fails is the one named
        assert str(batch.value) == str(one.value)
