"""Probe: does anything but the GPU's turns slow nvJPEG after GL (memory shared with GL, GL compute, a current context)?

    source .gpu/boot.sh && python3 benchmarks/turns_probe.py        # about 10 s on an H200

Each variant, one thread: GL does 32 frames of work, a fence is waited for, then nvJPEG encodes 32 frames;
GL and encode milliseconds per frame are reported. On the H200 (2026-12-02) every variant ran at 2,100-2,200
frames/s: neither memory shared with GL nor GL compute nor a current GL context slows nvJPEG; what slowed
the Recorder was a new nvImageCodec encoder's first call (~290 ms) inside the timed frames
(benchmarks/results/2026-12-02_nvidia-h200_turns-probe.txt).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np

from glrec.convert import RgbPacker
from glrec.cuda.driver import CudaDevice, call
from glrec.cuda.pool import DeviceFrame, DevicePool
from glrec.cuda.vmm import SharedBuffer
from glrec.encoders.nvjpeg.encoder import _params, load_nvimgcodec
from glrec.gl.context import create_cuda_context
from glrec.gl.fences import Fence
from glrec.gl.target import RenderTarget
from glrec.interop.shared import PlaneWriter
from glrec.layout import PlaneLayout
from glrec.scenes import load_scene

W, H, K = 1920, 1080, 32
nv = load_nvimgcodec()
dev = CudaDevice.open(0)
gl = create_cuda_context(0, dev.info.pci_bus_id)
gl._activate()
ctx = gl.mgl
target = RenderTarget(ctx, (W, H))
scene = load_scene("plasma")
scene.setup(ctx, (W, H))
packer = RgbPacker(ctx, (W, H), "rgb24")
layout = PlaneLayout.for_format("rgb24", W, H)
stride = (layout.nbytes + 255) // 256 * 256
plain = DevicePool(dev, layout.nbytes, K)
shared = SharedBuffer(ctx, dev, stride * K)
spool = DevicePool(dev, layout.nbytes, K, base=shared.address, stride=stride)
writer = PlaneWriter(ctx, packer)
yy, xx = np.mgrid[0:H, 0:W]
for s in range(K):
    img = np.stack([(xx + 7 * s) % 256, (yy + 3 * s) % 256, (xx + yy) % 256], -1).astype(np.uint8)
    call("cuMemcpyHtoD", plain.address(s), img.ctypes.data, img.nbytes)
enc = nv.Encoder(device_id=0)
params = _params(nv, 90, "420")
t_idx = [0]


def gl_work(pack: bool, write: bool) -> None:
    for k in range(K):
        target.use()
        scene.render(t_idx[0] / 60)
        t_idx[0] += 1
        if pack:
            packer.run(target.colour)
        if write:
            writer.run(shared.buffer, spool.address(k) - spool.base)
    Fence().wait()


def encode(pool, copy_first=False, unbind=False):
    if copy_first:
        call("cuMemcpyDtoDAsync", plain.address(0), spool.address(0), stride * K, dev.stream)
        call("cuStreamSynchronize", dev.stream)
        pool = plain
    if unbind:
        gl._deactivate(False)
    t = time.perf_counter()
    for k in range(K):
        f = DeviceFrame(k, layout, pool, k, pending=False)
        bytes(memoryview(enc.encode([nv.as_image(f)], "jpeg", params=params)[0]))
    dt = time.perf_counter() - t
    if unbind:
        gl._activate()
    return dt


variants = {
    "A no GL at all, plain": dict(gl=None, pool=plain),
    "B render only, plain (= gl-turns32)": dict(gl=(False, False), pool=plain),
    "C render+pack, plain": dict(gl=(True, False), pool=plain),
    "D render+pack+write shared, encode plain": dict(gl=(True, True), pool=plain),
    "E render+pack+write shared, encode shared (Recorder)": dict(gl=(True, True), pool=spool),
    "F as E, copy shared->plain first": dict(gl=(True, True), pool=spool, copy_first=True),
    "G as E, GL context not current during encode": dict(gl=(True, True), pool=spool, unbind=True),
    "H as D, GL not current during encode": dict(gl=(True, True), pool=plain, unbind=True),
}
from glrec.encoders.nvjpeg.encoder import NvJpegEncoder  # noqa: E402
from glrec.options import VideoOptions  # noqa: E402

_asked = VideoOptions.create((W, H), 60.0, codec="mjpeg", encoder="nvjpeg").request(device=dev)
genc = NvJpegEncoder(_asked.facts, _asked.options, dev)


def encode_glrec(pool, release=True):
    t = time.perf_counter()
    for k in range(K):
        f = DeviceFrame(k, layout, pool, k, pending=False)
        pool._free.remove(k)
        genc.encode(f)
        if not release:
            pool._free.append(k)
    return time.perf_counter() - t


variants["I as E through NvJpegEncoder (release per frame)"] = dict(gl=(True, True), pool=spool, glrec=True)
for name, v in variants.items():
    enc_t = gl_t = 0.0
    for rep in range(8):
        t = time.perf_counter()
        if v["gl"] is not None:
            gl_work(*v["gl"])
        t1 = time.perf_counter()
        if v.get("glrec"):
            e = encode_glrec(v["pool"])
        else:
            e = encode(v["pool"], v.get("copy_first", False), v.get("unbind", False))
        if rep >= 2:
            gl_t += t1 - t
            enc_t += e
    n = 6 * K
    print(
        f"{name:58s} GL {1e3 * gl_t / n:.3f} ms/f  encode {1e3 * enc_t / n:.3f} ms/f  => {n / (gl_t + enc_t):.0f} fps"
    )
