// Media Source Extensions fallback for browsers without WebCodecs: wraps each H.264 access unit in
// a fragmented-MP4 fragment (moof + mdat) after one init segment (ftyp + moov with the avcC built
// from the stream's SPS/PPS), appends them to a SourceBuffer, keeps playback at the live edge, and
// copies each presented frame to the canvas (so latency and pixels are read the same way).
'use strict';

const TIMESCALE = 90000;

function box(type, ...parts) {
  const size = 8 + parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  let at = 8;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// Big-endian fields: u([bits, value], ...) -> bytes.
function u(...fields) {
  const size = fields.reduce((n, [bits]) => n + bits / 8, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const [bits, value] of fields) {
    if (bits === 8) view.setUint8(at, value);
    else if (bits === 16) view.setUint16(at, value);
    else if (bits === 32) view.setUint32(at, value);
    else if (bits === 64) view.setBigUint64(at, BigInt(value));
    at += bits / 8;
  }
  return out;
}

const full = (type, version, flags, ...parts) => box(type, u([8, version], [8, flags >> 16], [16, flags & 0xffff]), ...parts);
const zeros = (n) => new Uint8Array(n);
const MATRIX = u([32, 0x10000], [32, 0], [32, 0], [32, 0], [32, 0x10000], [32, 0], [32, 0], [32, 0], [32, 0x40000000]);

function initSegment(width, height, sps, pps) {
  const avcC = box('avcC', u([8, 1], [8, sps[1]], [8, sps[2]], [8, sps[3]], [8, 0xff], [8, 0xe1], [16, sps.length]), sps,
    u([8, 1], [16, pps.length]), pps);
  const avc1 = box('avc1', zeros(6), u([16, 1], [16, 0], [16, 0], [32, 0], [32, 0], [32, 0], [16, width], [16, height],
    [32, 0x480000], [32, 0x480000], [32, 0], [16, 1]), zeros(32), u([16, 0x18], [16, 0xffff]), avcC);
  const empty = (type) => full(type, 0, 0, u([32, 0]));
  const stbl = box('stbl', full('stsd', 0, 0, u([32, 1]), avc1), empty('stts'), empty('stsc'),
    full('stsz', 0, 0, u([32, 0], [32, 0])), empty('stco'));
  const minf = box('minf', full('vmhd', 0, 1, zeros(8)), box('dinf', full('dref', 0, 0, u([32, 1]), full('url ', 0, 1))), stbl);
  const name = new TextEncoder().encode('glrec\0');
  const mdia = box('mdia', full('mdhd', 0, 0, u([32, 0], [32, 0], [32, TIMESCALE], [32, 0], [16, 0x55c4], [16, 0])),
    full('hdlr', 0, 0, u([32, 0]), new TextEncoder().encode('vide'), zeros(12), name), minf);
  const tkhd = full('tkhd', 0, 3, u([32, 0], [32, 0], [32, 1], [32, 0], [32, 0]), zeros(8), u([16, 0], [16, 0], [16, 0], [16, 0]),
    MATRIX, u([32, width << 16], [32, height << 16]));
  const mvhd = full('mvhd', 0, 0, u([32, 0], [32, 0], [32, 1000], [32, 0], [32, 0x10000], [16, 0x100]), zeros(10), MATRIX,
    zeros(24), u([32, 2]));
  const mvex = box('mvex', full('trex', 0, 0, u([32, 1], [32, 1], [32, 0], [32, 0], [32, 0])));
  const ftyp = box('ftyp', new TextEncoder().encode('isom'), u([32, 0x200]), new TextEncoder().encode('isomiso2avc1iso6'));
  return concat([ftyp, box('moov', mvhd, box('trak', tkhd, mdia), mvex)]);
}

function fragment(seq, decodeTime, duration, key, sample) {
  const trunFlags = 0x000001 | 0x000100 | 0x000200 | 0x000400; // data offset, duration, size, flags
  const sampleFlags = key ? 0x02000000 : 0x01010000; // depends on nothing / depends on others, non-sync
  const make = (offset) => box('moof', full('mfhd', 0, 0, u([32, seq])),
    box('traf', full('tfhd', 0, 0x020000, u([32, 1])), full('tfdt', 1, 0, u([64, decodeTime])),
      full('trun', 0, trunFlags, u([32, 1], [32, offset], [32, duration], [32, sample.length], [32, sampleFlags]))));
  const moof = make(make(0).length + 8);
  return concat([moof, box('mdat', sample)]);
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function msePlayer(video, canvas, g, fps, hooks) {
  const { shown, remember, nalUnits, state } = hooks;
  const duration = Math.round(TIMESCALE / fps);
  let source = null;
  let buffer = null;
  let seq = 0;
  const pending = [];

  const pump = () => {
    if (!buffer || buffer.updating || !pending.length) return;
    buffer.appendBuffer(pending.shift());
  };

  const onVideoFrame = (_now, meta) => {
    g.drawImage(video, 0, 0, canvas.width, canvas.height);
    // Frames are laid end to end on the media timeline (skipped slots leave no gaps), so the
    // presented frame is found by its position, and the chunk map holds its index and render time.
    shown(Math.round(meta.mediaTime * fps));
    video.requestVideoFrameCallback(onVideoFrame);
  };

  // Called with the first keyframe: parameter sets go into the init segment.
  const start = (codec, au) => {
    const nals = nalUnits(au);
    const sps = nals.find((n) => (n[0] & 0x1f) === 7);
    const pps = nals.find((n) => (n[0] & 0x1f) === 8);
    if (!sps || !pps) return false;
    const type = `video/mp4; codecs="${codec}"`;
    if (!MediaSource.isTypeSupported(type)) throw new Error(`MSE cannot play ${type}`);
    source = new MediaSource();
    video.src = URL.createObjectURL(source);
    source.addEventListener('sourceopen', () => {
      buffer = source.addSourceBuffer(type);
      buffer.addEventListener('updateend', () => {
        // Stay at the live edge: jump ahead when more than a few frames are buffered.
        const b = buffer.buffered;
        if (b.length && b.end(b.length - 1) - video.currentTime > 4 / fps) video.currentTime = b.end(b.length - 1) - 1 / fps;
        if (b.length && video.currentTime - b.start(0) > 10 && !buffer.updating) buffer.remove(0, video.currentTime - 5);
        else pump();
      });
      pending.unshift(initSegment(video.width || canvas.width, video.height || canvas.height, sps, pps));
      pump();
      video.play().catch((e) => state.errors.push(String(e)));
    });
    video.requestVideoFrameCallback(onVideoFrame);
    return true;
  };

  return {
    kind: 'mse',
    get started() {
      return source !== null;
    },
    start,
    push(index, key, renderMs, au) {
      // Length-prefixed NAL units, as MP4 stores them; parameter sets live in the init segment.
      const nals = nalUnits(au).filter((n) => ![7, 8, 9].includes(n[0] & 0x1f));
      const sample = concat(nals.flatMap((n) => [u([32, n.length]), n]));
      remember(seq, index, renderMs);
      pending.push(fragment(seq + 1, seq * duration, duration, key, sample));
      seq++;
      pump();
    },
    reset() {
      if (source && source.readyState === 'open') source.endOfStream();
      source = null;
      buffer = null;
      pending.length = 0;
    },
  };
}
