// glrec live viewer: WebSocket -> WebCodecs VideoDecoder -> canvas (Media Source Extensions where
// WebCodecs is missing, or with ?decoder=mse). Shows render->display latency; sends input back.
// Wire format: glrec/stream/protocol.py. State for tests and tools: window.glrecViewer.
'use strict';

const params = new URLSearchParams(location.search);
const canvas = document.getElementById('view');
const overlay = document.getElementById('overlay');
const g = canvas.getContext('2d', { alpha: false });
const HEADER = 16;
const KEEP = 1000; // latency samples kept for the figures

const now = () => performance.timeOrigin + performance.now(); // epoch ms, sub-ms resolution

const state = {
  decoder: '', codec: '', hello: null, connected: false, closed: '',
  received: 0, frames: 0, keyframesSeen: 0, lastIndex: -1, decodeErrors: 0, errors: [],
  raw: [], offset: 0, bestRtt: Infinity, sentInputs: 0,
};

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// Render->display latencies in ms. Samples are kept on the page's clock (display time minus the
// server's render time) and the current clock-offset estimate is applied here, so samples taken
// before a good estimate existed are corrected too.
function latencies() {
  return state.raw.map((v) => v + state.offset);
}

function stats() {
  const s = latencies().sort((a, b) => a - b);
  return {
    decoder: state.decoder, codec: state.codec, received: state.received, frames: state.frames,
    lastIndex: state.lastIndex, decodeErrors: state.decodeErrors, errors: state.errors.slice(-5),
    latency: { count: s.length, median_ms: percentile(s, 50), p99_ms: percentile(s, 99), max_ms: s[s.length - 1] ?? NaN,
      clock_error_ms: state.bestRtt / 2 },
    clockOffsetMs: state.offset, rttMs: state.bestRtt, sentInputs: state.sentInputs, closed: state.closed,
  };
}

// Pixel at (x, y) in 0..1 of the last drawn frame, as [r, g, b] (for tests).
function pixel(x, y) {
  const d = g.getImageData(Math.floor(x * (canvas.width - 1)), Math.floor(y * (canvas.height - 1)), 1, 1).data;
  return [d[0], d[1], d[2]];
}

window.glrecViewer = { state, stats, pixel, latencies };

// ---- latency bookkeeping ---------------------------------------------------------------------

const renderTimes = new Map(); // chunk timestamp -> [frame index, server render ms]

function shown(timestamp) {
  const entry = renderTimes.get(timestamp);
  renderTimes.delete(timestamp);
  state.frames++;
  if (!entry) return;
  state.lastIndex = entry[0];
  if (Number.isFinite(entry[1])) {
    state.raw.push(now() - entry[1]);
    if (state.raw.length > KEEP) state.raw.shift();
  }
}

function remember(timestamp, index, renderMs) {
  renderTimes.set(timestamp, [index, renderMs]);
  if (renderTimes.size > 300) renderTimes.delete(renderTimes.keys().next().value);
}

// ---- H.264 helpers ---------------------------------------------------------------------------

// NAL units of an Annex-B access unit (start codes removed).
export function nalUnits(au) {
  const out = [];
  let start = -1;
  for (let i = 0; i + 2 < au.length; i++) {
    if (au[i] === 0 && au[i + 1] === 0 && au[i + 2] === 1) {
      if (start >= 0) out.push(au.subarray(start, au[i - 1] === 0 ? i - 1 : i));
      start = i + 3;
      i += 2;
    }
  }
  if (start >= 0) out.push(au.subarray(start));
  return out;
}

// The WebCodecs/MSE codec string (avc1.PPCCLL) from the access unit's SPS, or '' if it has none.
export function codecFromSps(au) {
  const sps = nalUnits(au).find((n) => (n[0] & 0x1f) === 7);
  if (!sps || sps.length < 4) return '';
  const hex = (b) => b.toString(16).padStart(2, '0');
  return `avc1.${hex(sps[1])}${hex(sps[2])}${hex(sps[3])}`;
}

// ---- decoding: WebCodecs ---------------------------------------------------------------------

function webCodecsPlayer(width, height, fps) {
  let decoder = null;
  const usPerFrame = 1e6 / fps;
  const reset = () => {
    if (decoder && decoder.state !== 'closed') decoder.close();
    decoder = null;
  };
  return {
    kind: 'webcodecs',
    get started() {
      return decoder !== null;
    },
    start(codec) {
      decoder = new VideoDecoder({
        output: (frame) => {
          g.drawImage(frame, 0, 0, canvas.width, canvas.height);
          shown(frame.timestamp);
          frame.close();
        },
        error: (e) => {
          state.decodeErrors++;
          state.errors.push(String(e));
          reset(); // start again at the next keyframe
          requestKeyframe();
        },
      });
      // optimizeForLatency: output each frame as soon as it is decoded (no reorder buffering).
      decoder.configure({ codec, codedWidth: width, codedHeight: height, optimizeForLatency: true });
      return true;
    },
    push(index, key, renderMs, au) {
      const timestamp = Math.round(index * usPerFrame);
      remember(timestamp, index, renderMs);
      decoder.decode(new EncodedVideoChunk({ type: key ? 'key' : 'delta', timestamp, data: au }));
    },
    reset,
  };
}

// ---- connection ------------------------------------------------------------------------------

let socket = null;
let player = null;

function send(msg) {
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify(msg));
    return true;
  }
  return false;
}

function requestKeyframe() {
  send({ type: 'keyframe' });
}

function ping() {
  send({ type: 'ping', t: now() });
}

async function makePlayer(hello) {
  const want = params.get('decoder');
  if (want !== 'mse' && typeof VideoDecoder === 'function') return webCodecsPlayer(hello.width, hello.height, hello.fps);
  if (typeof MediaSource === 'function') {
    const { msePlayer } = await import('./mse.js');
    return msePlayer(document.getElementById('mse'), canvas, g, hello.fps, { shown, remember, nalUnits, state });
  }
  throw new Error('this browser has neither WebCodecs nor Media Source Extensions');
}

function connect() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const token = params.get('token');
  socket = new WebSocket(`${proto}//${location.host}/ws${token ? `?token=${encodeURIComponent(token)}` : ''}`);
  socket.binaryType = 'arraybuffer';
  const early = []; // frames that arrive while the player is being made
  socket.onopen = () => {
    state.connected = true;
    // A burst of pings: the fastest round trip bounds the clock-offset error (half of it),
    // and the first ones compete with the page still loading.
    for (let i = 0; i < 10; i++) setTimeout(ping, i * 50);
  };
  socket.onclose = (e) => {
    state.connected = false;
    state.closed = `closed (${e.code}${e.reason ? `: ${e.reason}` : ''})`;
  };
  socket.onmessage = async (e) => {
    if (typeof e.data === 'string') {
      const msg = JSON.parse(e.data);
      if (msg.type === 'hello') {
        state.hello = msg;
        canvas.width = msg.width;
        canvas.height = msg.height;
        try {
          player = await makePlayer(msg);
          state.decoder = player.kind;
          for (const m of early.splice(0)) onFrame(m);
        } catch (err) {
          state.errors.push(String(err));
        }
      } else if (msg.type === 'pong') {
        const t1 = now();
        const rtt = t1 - msg.t;
        if (rtt < state.bestRtt) { // the fastest round trip gives the tightest offset estimate (error <= rtt / 2)
          state.bestRtt = rtt;
          state.offset = msg.server - (msg.t + t1) / 2;
        }
      }
      return;
    }
    if (!player) early.push(e.data);
    else onFrame(e.data);
  };
}

function onFrame(buf) {
  const view = new DataView(buf);
  if (view.getUint8(0) !== 1) return;
  const key = (view.getUint8(1) & 1) !== 0;
  const index = view.getUint32(4, true);
  const renderMs = view.getFloat64(8, true);
  state.received++;
  if (key) state.keyframesSeen++;
  const au = new Uint8Array(buf, HEADER);
  try {
    // A player starts at a keyframe, configured from its SPS; until then frames are useless.
    if (!player.started) {
      const codec = key ? codecFromSps(au) : '';
      if (!codec || !player.start(codec, au)) return;
      state.codec = codec;
    }
    player.push(index, key, renderMs, au);
  } catch (err) {
    state.decodeErrors++;
    state.errors.push(String(err));
    player.reset();
    requestKeyframe();
  }
}

// ---- input -----------------------------------------------------------------------------------

const clamp = (v) => Math.min(1, Math.max(0, v));
const round = (v) => Math.round(v * 1e4) / 1e4;
const mods = (e) => (e.shiftKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.altKey ? 4 : 0) | (e.metaKey ? 8 : 0);

function where(e) {
  const r = canvas.getBoundingClientRect();
  return { x: round(clamp((e.clientX - r.left) / r.width)), y: round(clamp((e.clientY - r.top) / r.height)) };
}

function pointer(action, e) {
  if (send({ type: 'pointer', action, ...where(e), buttons: e.buttons & 31, mods: mods(e) })) state.sentInputs++;
}

let lastMove = 0;
canvas.addEventListener('pointerdown', (e) => {
  canvas.focus();
  canvas.setPointerCapture(e.pointerId);
  pointer('down', e);
});
canvas.addEventListener('pointermove', (e) => {
  const t = performance.now();
  if (t - lastMove < 8) return; // at most ~120 moves a second
  lastMove = t;
  pointer('move', e);
});
canvas.addEventListener('pointerup', (e) => pointer('up', e));
canvas.addEventListener('wheel', (e) => {
  e.preventDefault();
  if (send({ type: 'wheel', ...where(e), dx: clampDelta(e.deltaX), dy: clampDelta(e.deltaY), mods: mods(e) })) state.sentInputs++;
}, { passive: false });
const clampDelta = (d) => Math.max(-1e4, Math.min(1e4, d));
for (const action of ['down', 'up']) {
  canvas.addEventListener(`key${action}`, (e) => {
    if (e.key.length > 32) return;
    e.preventDefault();
    if (send({ type: 'key', action, key: e.key, code: e.code.slice(0, 32), mods: mods(e) })) state.sentInputs++;
  });
}

// ---- overlay ---------------------------------------------------------------------------------

function fmt(v) {
  return Number.isFinite(v) ? v.toFixed(1) : '–';
}

let lastFrames = 0;
setInterval(() => {
  const s = stats();
  const fps = (s.frames - lastFrames) * 2;
  lastFrames = s.frames;
  const h = state.hello;
  overlay.textContent = !h
    ? state.closed || 'connecting…'
    : `${h.width}x${h.height} ${s.codec} via ${s.decoder} · ${fps} fps · render→display median ${fmt(s.latency.median_ms)} ms, ` +
      `p99 ${fmt(s.latency.p99_ms)} ms · drag or type to interact${state.closed ? ` · ${state.closed}` : ''}`;
}, 500);
setInterval(ping, 2000);

connect();
