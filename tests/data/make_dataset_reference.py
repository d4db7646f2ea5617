"""Remake ``dataset_reference.json``'s member hashes with the host path (every pass read back as rendered).

Run when the dataset format version changes the samples (version 2: counter-based draws):

    PYTHONPATH=$PWD python tests/data/make_dataset_reference.py
"""

import hashlib
import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

from glrec.dataset import DatasetSpec
from glrec.dataset.files.encode import colour_encoder
from glrec.dataset.files.folder import FORMAT_VERSION
from glrec.dataset.files.samples import sample_files
from glrec.dataset.rendering.sample import SampleRenderer
from glrec.gl.context import create_context

PATH = Path(__file__).with_name("dataset_reference.json")


def main() -> None:
    ref = json.loads(PATH.read_text())
    with create_context() as gl:
        assert gl.mgl.info["GL_RENDERER"] == ref["gl_renderer"], gl.mgl.info["GL_RENDERER"]
        for config in ref["configs"].values():
            spec = DatasetSpec.from_dict(config["spec"])
            renderer = SampleRenderer(spec, gl.mgl, colour_encoder(spec.output), keep_rgb=False)
            members = {}
            try:
                for index in range(spec.samples):
                    for name, data in sample_files(spec, renderer.render(index)).items():
                        decoded = data
                        if name.endswith((".png", ".jpg")):
                            decoded = np.asarray(Image.open(io.BytesIO(data))).tobytes()
                        members[f"{spec.key(index)}.{name}"] = {
                            "sha256": hashlib.sha256(data).hexdigest(),
                            "decoded_sha256": hashlib.sha256(decoded).hexdigest(),
                        }
            finally:
                renderer.close()
            config["members"] = members
    ref["made_by"] = f"glrec host path (readback, numpy conversion), dataset format version {FORMAT_VERSION}"
    PATH.write_text(json.dumps(ref, indent=1) + "\n")


if __name__ == "__main__":
    main()
