"""Train a tiny model on freshly rendered samples: glrec.dataset.StreamDataset, no files written.

    python examples/train_on_stream.py

Each batch is rendered on the fly (colour, depth, ids, normals, camera, boxes: the
same values as `glrec dataset` writes into shards) and handed over as torch
tensors. Here a two-layer convnet learns depth from colour on CPU in seconds.
"""

import torch

import glrec.dataset

spec = glrec.dataset.DatasetSpec.from_dict(
    {
        "dataset": {"scene": "table", "samples": 64, "size": "64x48", "seed": 1},
        "params": {"objects": {"int": [2, 5]}, "camera_azimuth": {"uniform": [0, 360]}},
    }
)
data = glrec.dataset.StreamDataset(spec, batch_size=16)  # device="cuda" on an NVIDIA GPU
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 1, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(2):
    for batch in torch.utils.data.DataLoader(data, batch_size=None):  # batches already
        colour = batch["rgb"].permute(0, 3, 1, 2).float() / 255  # (n, 3, h, w)
        loss = torch.nn.functional.l1_loss(model(colour)[:, 0], batch["depth"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: depth L1 {loss.item():.3f}")
