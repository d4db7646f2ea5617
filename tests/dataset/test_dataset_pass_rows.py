"""Pass rows: a new pass is one row plus its shader lines; the rows say files, dtypes and targets."""

import numpy as np
import pytest

import glrec
from glrec.dataset import DatasetSpec, render_sample
from glrec.dataset.api import member_names
from glrec.scenes.passes import PASS_ROWS, PASSES, PassRow, register_pass, unregister_pass

# A user scene writing colour and a throwaway pass "albedo" (location 5, the next free one):
# the left half of the picture has one albedo, the right half another.
SCENE = '''
import moderngl
from glrec.scenes.passes import clear_passes

VERT = """
#version 330 core
void main() {
    vec2 p = vec2((gl_VertexID & 1) * 4.0 - 1.0, (gl_VertexID >> 1) * 4.0 - 1.0);
    gl_Position = vec4(p, 0.0, 1.0);
}
"""
FRAG = """
#version 330 core
uniform float half_width;
layout(location = 0) out vec4 out_colour;
layout(location = 5) out vec4 out_albedo;
void main() {
    out_colour = vec4(1.0, 0.0, 0.0, 1.0);
    out_albedo = gl_FragCoord.x < half_width ? vec4(51.0, 102.0, 153.0, 255.0) / 255.0
                                             : vec4(204.0, 0.0, 255.0, 255.0) / 255.0;
}
"""


class Albedo:
    passes = ("rgb", "albedo")

    def setup(self, ctx, size):
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=VERT, fragment_shader=FRAG)
        self.prog["half_width"].value = size[0] / 2
        self.vao = ctx.vertex_array(self.prog, [])

    def render(self, t):
        clear_passes(self.ctx)
        self.vao.render(moderngl.TRIANGLES, vertices=3)

    def close(self):
        self.vao.release()
        self.prog.release()
'''


@pytest.fixture
def albedo_row():
    row = PassRow("albedo", 4, "f1", 3, ("npy",), None, {"npy": "u1"})
    register_pass(row)
    try:
        yield row
    finally:
        unregister_pass("albedo")
    assert "albedo" not in PASS_ROWS


def test_the_built_in_rows_say_files_and_dtypes():
    spec = DatasetSpec.from_dict({"dataset": {"scene": "table", "samples": 2, "size": "32x24", "seed": 1}})
    assert member_names(spec) == ["rgb.png", "depth.npy", "instance.png", "semantic.png", "normal.png", "meta.json"]
    png16 = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "table", "samples": 2, "size": "32x24", "seed": 1},
            "output": {"depth": "png16", "normal": "npy"},
        }
    )
    assert member_names(png16)[1] == "depth.png" and member_names(png16)[4] == "normal.npy"
    assert PASS_ROWS["normal"].stream_dtype(normal="png") == "u1"
    assert PASS_ROWS["normal"].stream_dtype(normal="npy") == "f4"
    assert PASS_ROWS["instance"].stream_dtype() == "u2" and PASS_ROWS["rgb"].tail == (3,)
    assert tuple(PASS_ROWS) == PASSES


def test_a_throwaway_pass_is_one_row_and_its_shader_lines(tmp_path, albedo_row):
    (tmp_path / "albedo_scene.py").write_text(SCENE)
    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "albedo_scene.py:Albedo", "samples": 2, "size": "32x24", "seed": 1},
            "output": {"passes": ["rgb", "albedo"]},
        },
        base_dir=tmp_path,
    )
    assert member_names(spec) == ["rgb.png", "albedo.npy", "meta.json"]
    frame = render_sample(spec, 1).frames[0]
    albedo = frame["albedo"]
    assert albedo.shape == (24, 32, 3) and albedo.dtype == np.uint8
    assert (albedo[:, :16] == [51, 102, 153]).all()
    assert (albedo[:, 16:] == [204, 0, 255]).all()
    assert (frame["rgb"] == [255, 0, 0]).all()


def test_a_pass_no_row_names_is_refused_and_rows_are_checked():
    with pytest.raises(glrec.ConfigError, match="albedo"):
        DatasetSpec.from_dict(
            {
                "dataset": {"scene": "table", "samples": 2, "size": "32x24", "seed": 1},
                "output": {"passes": ["rgb", "albedo"]},
            }
        )
    with pytest.raises(glrec.ConfigError, match="exists already"):
        register_pass(PassRow("depth", 1, "f4", 1))
    with pytest.raises(glrec.ConfigError, match="is not one glrec makes"):
        register_pass(PassRow("wide", 4, "f8", 3))
    with pytest.raises(glrec.ConfigError, match="built in"):
        unregister_pass("normal")


def test_a_throwaway_pass_goes_to_shards_from_its_row_and_the_stream_refuses_it(tmp_path, albedo_row):
    import io
    import tarfile

    (tmp_path / "albedo_scene.py").write_text(SCENE)
    spec = DatasetSpec.from_dict(
        {
            "dataset": {"scene": "albedo_scene.py:Albedo", "samples": 3, "size": "32x24", "seed": 1, "shard_size": 3},
            "output": {"passes": ["rgb", "albedo"]},
        },
        base_dir=tmp_path,
    )
    glrec.dataset.generate(spec, tmp_path / "out")
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        names = sorted(m.name for m in tar.getmembers())
        member = tar.extractfile(next(n for n in names if n.endswith("albedo.npy")))
        assert member is not None
        albedo = np.load(io.BytesIO(member.read()))
    assert sum(n.endswith("albedo.npy") for n in names) == 3
    assert albedo.dtype == np.uint8 and (albedo[:, :16] == [51, 102, 153]).all()
    # the training stream packs passes on the GPU by rule: one it has no rule for is refused, not dropped
    with pytest.raises(glrec.ConfigError, match="no rule for albedo"):
        next(iter(glrec.dataset.stream(spec, batch_size=3)))
